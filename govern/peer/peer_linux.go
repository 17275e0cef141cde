package peer

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// Peer is who connected.
type Peer struct {
	UID int
	PID int // in the reader's pid namespace
	// PidNS and UserNS identify the peer's pid and user namespaces (the
	// inode numbers of /proc/PID/ns/pid and ns/user); zero when unknown.
	PidNS, UserNS uint64
}

// pidfdGetPidNamespace and pidfdGetUserNamespace are
// PIDFD_GET_PID_NAMESPACE and PIDFD_GET_USER_NAMESPACE (Linux 6.11): an
// ioctl on a pidfd that returns a descriptor of that process's namespace.
const (
	pidfdGetPidNamespace  = 0xff05
	pidfdGetUserNamespace = 0xff09
)

// Of reads the peer of the connected Unix socket fd. The namespaces come
// from the peer's pidfd (SO_PEERPIDFD) so that a peer that exits and whose
// pid is reused cannot pass for another process; on kernels without it,
// from /proc, checked against the pid's pidfd afterwards.
func Of(fd int) (Peer, error) {
	cred, err := unix.GetsockoptUcred(fd, unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return Peer{UID: -1}, fmt.Errorf("SO_PEERCRED: %w", err)
	}
	p := Peer{UID: int(cred.Uid), PID: int(cred.Pid)}
	pidfd, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_PEERPIDFD)
	if err != nil {
		// Before Linux 6.5: a pidfd opened now names the pid's current
		// process, which is the peer only if it still lives after /proc
		// was read.
		if pidfd, err = unix.PidfdOpen(p.PID, 0); err != nil {
			return p, fmt.Errorf("the peer (pid %d) is gone: %w", p.PID, err)
		}
	}
	defer unix.Close(pidfd)
	if p.PidNS, p.UserNS, err = namespacesOf(pidfd, p.PID); err != nil {
		return p, err
	}
	return p, nil
}

func namespacesOf(pidfd, pid int) (pidns, userns uint64, err error) {
	pidns, err1 := nsIoctl(pidfd, pidfdGetPidNamespace)
	userns, err2 := nsIoctl(pidfd, pidfdGetUserNamespace)
	if err1 == nil && err2 == nil {
		return pidns, userns, nil
	}
	// No namespace ioctls (before Linux 6.11): /proc, then the pidfd says
	// whether the process read is still the peer.
	if pidns, err = inode("/proc/" + strconv.Itoa(pid) + "/ns/pid"); err != nil {
		return 0, 0, err
	}
	if userns, err = inode("/proc/" + strconv.Itoa(pid) + "/ns/user"); err != nil {
		return 0, 0, err
	}
	if err := unix.PidfdSendSignal(pidfd, 0, nil, 0); err != nil {
		return 0, 0, fmt.Errorf("the peer (pid %d) exited while it was read: %w", pid, err)
	}
	return pidns, userns, nil
}

func nsIoctl(pidfd int, req uint) (uint64, error) {
	nsfd, err := unix.IoctlRetInt(pidfd, req)
	if err != nil {
		return 0, err
	}
	defer unix.Close(nsfd)
	var st unix.Stat_t
	if err := unix.Fstat(nsfd, &st); err != nil {
		return 0, err
	}
	return st.Ino, nil
}

func inode(path string) (uint64, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, errors.New("no inode")
	}
	return st.Ino, nil
}

// Self is this process's own namespaces.
func Self() (pidns, userns uint64, err error) {
	if pidns, err = inode("/proc/self/ns/pid"); err != nil {
		return 0, 0, err
	}
	userns, err = inode("/proc/self/ns/user")
	return pidns, userns, err
}

// PidNSOf is the pid namespace of process pid (the sandbox's first
// process, registered by the supervisor that started it).
func PidNSOf(pid int) (uint64, error) { return inode("/proc/" + strconv.Itoa(pid) + "/ns/pid") }

// SameNamespaces reports whether p runs in this process's pid and user
// namespaces: not inside any sandbox (every sandbox has both of its own).
func SameNamespaces(p Peer) (bool, error) {
	pidns, userns, err := Self()
	if err != nil {
		return false, err
	}
	return p.PidNS == pidns && p.UserNS == userns, nil
}
