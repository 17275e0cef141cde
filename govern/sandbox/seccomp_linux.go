package sandbox

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/mitrity/mitrity/govern/sandbox/internal/seccomppolicy"
)

//go:generate go run ./internal/seccompgen

// programBytes is the seccomp program (see internal/seccomppolicy) as
// bubblewrap's --seccomp reads it: struct sock_filter entries in native
// byte order. The returned slice is shared: it must not be changed.
func programBytes() ([]byte, error) {
	if nativeProgram == nil {
		return nil, fmt.Errorf("seccomp: no program for %s", runtime.GOARCH)
	}
	return nativeProgram, nil
}

// filterProgram returns the program in the kernel's layout.
func filterProgram() ([]unix.SockFilter, error) {
	b, err := programBytes()
	if err != nil {
		return nil, err
	}
	filter := make([]unix.SockFilter, 0, len(b)/8)
	for i := 0; i+8 <= len(b); i += 8 {
		filter = append(filter, unix.SockFilter{
			Code: binary.NativeEndian.Uint16(b[i:]), Jt: b[i+2], Jf: b[i+3], K: binary.NativeEndian.Uint32(b[i+4:]),
		})
	}
	return filter, nil
}

// loadFilter sets no_new_privs and loads prog on every thread of the
// calling process (TSYNC); the filter survives execve and is inherited by
// every child.
func loadFilter(prog []unix.SockFilter) error {
	if len(prog) == 0 {
		return fmt.Errorf("seccomp: empty program")
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("seccomp: no_new_privs: %w", err)
	}
	r1, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	switch {
	case errno != 0:
		return fmt.Errorf("seccomp: loading the filter: %w", errno)
	case r1 != 0:
		return fmt.Errorf("seccomp: thread %d could not be synchronised to the filter", r1)
	}
	return nil
}

// hiBits sets an argument's high 32 bits, which the kernel ignores for int
// and unsigned int arguments (so must the filter); readImpliesExec is
// READ_IMPLIES_EXEC (linux/personality.h), a persona the filter refuses.
const (
	hiBits          = uint64(1) << 32
	readImpliesExec = 0x0400000
)

// filterCheck is one system call the probe makes under the filter, and the
// errno the filter must fail it with (0: the filter lets it through). Each
// call is harmless should the filter let it through: a descriptor is
// closed, a bad descriptor or an invalid flag combination makes the kernel
// refuse it, a personality is put back.
type filterCheck struct {
	name string
	call func() error
	want unix.Errno
}

// filterChecks cover every rule, and every conditional rule with its
// arguments' high bits set.
var filterChecks = []filterCheck{
	{"socket(AF_UNIX)", socketCall(unix.AF_UNIX, unix.SOCK_STREAM, 0), unix.EPERM},
	{"socket(AF_UNIX|1<<32)", socketCall(hiBits|unix.AF_UNIX, unix.SOCK_STREAM, 0), unix.EPERM},
	{"socket(AF_VSOCK)", socketCall(unix.AF_VSOCK, unix.SOCK_STREAM, 0), unix.EPERM},
	{"socket(AF_NETLINK, NETLINK_KOBJECT_UEVENT|1<<32)", socketCall(unix.AF_NETLINK, unix.SOCK_RAW, hiBits|unix.NETLINK_KOBJECT_UEVENT), unix.EPERM},
	{"socket(AF_INET|1<<32)", socketCall(hiBits|unix.AF_INET, unix.SOCK_STREAM, 0), 0},
	{"socket(AF_NETLINK, NETLINK_ROUTE)", socketCall(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE), 0},
	{"socketpair(AF_UNIX)", socketpairCall(unix.AF_UNIX, unix.SOCK_STREAM), 0},
	{"socketpair(AF_UNIX|1<<32)", socketpairCall(hiBits|unix.AF_UNIX, unix.SOCK_STREAM), 0},
	{"socketpair(AF_UNIX, SOCK_DGRAM|1<<32)", socketpairCall(unix.AF_UNIX, hiBits|unix.SOCK_DGRAM), unix.EPERM},
	// fd -1: the kernel answers EBADF.
	{"ioctl(TIOCSTI|1<<32)", rawCall(unix.SYS_IOCTL, 0xffffffff, hiBits|unix.TIOCSTI, 0), unix.EPERM},
	{"unshare(CLONE_NEWUSER)", func() error { return unix.Unshare(unix.CLONE_NEWUSER) }, unix.EPERM},
	// Unknown flag bits: the kernel answers EINVAL.
	{"unshare(CLONE_NEWUSER|1<<32)", rawCall(unix.SYS_UNSHARE, hiBits|unix.CLONE_NEWUSER), unix.EPERM},
	// CLONE_NEWUSER with CLONE_FS: the kernel answers EINVAL.
	{"clone(CLONE_NEWUSER|CLONE_FS|1<<32)", rawCall(unix.SYS_CLONE, hiBits|unix.CLONE_NEWUSER|unix.CLONE_FS), unix.EPERM},
	{"clone3", rawCall(unix.SYS_CLONE3, 0, 0), unix.ENOSYS},
	// fd -1: the kernel answers EBADF.
	{"fchmod(04755|1<<32)", rawCall(unix.SYS_FCHMOD, 0xffffffff, hiBits|0o4755), unix.EPERM},
	{"fchmod(0755)", rawCall(unix.SYS_FCHMOD, 0xffffffff, 0o755), unix.EBADF},
	{"openat2", rawCall(unix.SYS_OPENAT2, 0xffffffff, 0, 0), unix.ENOSYS},
	{"personality(query)", rawCall(unix.SYS_PERSONALITY, 0xffffffff), 0},
	{"personality(READ_IMPLIES_EXEC|1<<32)", personalityCall(hiBits | readImpliesExec), unix.EPERM},
	// pidfd -1: the kernel answers EBADF.
	{"pidfd_getfd", rawCall(unix.SYS_PIDFD_GETFD, 0xffffffff, 0, 0), unix.EPERM},
}

// rawCall makes system call nr with args (at most three).
func rawCall(nr uintptr, args ...uint64) func() error {
	return func() error {
		var a [3]uintptr
		for i, v := range args {
			a[i] = uintptr(v)
		}
		if _, _, errno := unix.RawSyscall(nr, a[0], a[1], a[2]); errno != 0 {
			return errno
		}
		return nil
	}
}

// socketCall makes socket(2) and closes what it opens.
func socketCall(domain, typ, proto uint64) func() error {
	return func() error {
		fd, _, errno := unix.RawSyscall(unix.SYS_SOCKET, uintptr(domain), uintptr(typ), uintptr(proto))
		if errno != 0 {
			return errno
		}
		return unix.Close(int(fd))
	}
}

// socketpairCall makes socketpair(2) and closes what it opens.
func socketpairCall(domain, typ uint64) func() error {
	return func() error {
		var fds [2]int32
		_, _, errno := unix.RawSyscall6(unix.SYS_SOCKETPAIR, uintptr(domain), uintptr(typ), 0, uintptr(unsafe.Pointer(&fds)), 0, 0)
		if errno != 0 {
			return errno
		}
		unix.Close(int(fds[0]))
		return unix.Close(int(fds[1]))
	}
}

// personalityCall sets persona and puts the previous one back.
func personalityCall(persona uint64) func() error {
	return func() error {
		prev, _, errno := unix.RawSyscall(unix.SYS_PERSONALITY, uintptr(persona), 0, 0)
		if errno != 0 {
			return errno
		}
		unix.RawSyscall(unix.SYS_PERSONALITY, prev, 0, 0)
		return nil
	}
}

// sessionProgram is the filter of a Session (the agent launcher's
// posture): the same rules with AF_UNIX sockets allowed, assembled once,
// the first time a session needs it (see seccomppolicy.Options).
var sessionProgram = sync.OnceValues(func() ([]byte, error) {
	return seccomppolicy.BytesWith(seccomppolicy.Options{UnixSockets: true})
})
