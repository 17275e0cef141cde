package pollfd

import (
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

var (
	stdin  = sync.OnceValue(func() *os.File { return pollable(os.Stdin, 0, "/dev/stdin") })
	stdout = sync.OnceValue(func() *os.File { return pollable(os.Stdout, 1, "/dev/stdout") })
)

// Stdin is the process's standard input, polled when it is a pipe or a
// socket (then os.Stdin must no longer be read: its descriptor is
// non-blocking). Otherwise (a terminal, a file, /dev/null) it is os.Stdin.
func Stdin() *os.File { return stdin() }

// Stdout is Stdin's counterpart for standard output.
func Stdout() *os.File { return stdout() }

// pollable returns a polled *os.File for descriptor fd when it is a pipe
// or a socket, else std. The file is kept for the life of the process
// (a collected *os.File would close the descriptor). A descriptor that was
// non-blocking from the start is left to std: the runtime polls it
// through std already, and a second registration would fail and leave a
// non-blocking file it does not poll.
func pollable(std *os.File, fd int, name string) *os.File {
	if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0); err != nil || fl&unix.O_NONBLOCK != 0 {
		return std
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return std
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFIFO, unix.S_IFSOCK:
	default:
		// A terminal may be shared with a shell, which a non-blocking
		// descriptor would break; a regular file never blocks for long.
		return std
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		return std
	}
	made.Lock()
	made.fds = append(made.fds, madeFD{fd, uint64(st.Dev), uint64(st.Ino)})
	made.Unlock()
	return os.NewFile(uintptr(fd), name) // non-blocking: NewFile puts it in the poller
}

// made is the descriptors pollable made non-blocking, with what they
// were open on: only the same file is restored.
var made struct {
	sync.Mutex
	fds []madeFD
}

type madeFD struct {
	fd       int
	dev, ino uint64
}

// Restore makes the descriptors Stdin and Stdout made non-blocking
// blocking again: what a process does as it exits. The flag belongs to
// the open file description, which the process that started this one may
// share and go on using (a shell script's next command reading the same
// pipe would get EAGAIN). Reads still waiting on them block from then on.
func Restore() {
	made.Lock()
	defer made.Unlock()
	for _, m := range made.fds {
		var st unix.Stat_t
		if unix.Fstat(m.fd, &st) == nil && uint64(st.Dev) == m.dev && uint64(st.Ino) == m.ino {
			unix.SetNonblock(m.fd, false)
		}
	}
	made.fds = nil
}

// AwaitExit returns once process p has exited, waiting on a pidfd in the
// poller; it does not reap p (Wait still must, and then returns at once).
// p must be a child not yet waited for. Without pidfds (a kernel before
// 5.3, or a seccomp filter that refuses pidfd_open) it returns at once and
// Wait blocks as it always did.
func AwaitExit(p *os.Process) {
	fd, err := unix.PidfdOpen(p.Pid, 0)
	if err != nil {
		return
	}
	if err := unix.SetNonblock(fd, true); err != nil { // so that NewFile polls it
		unix.Close(fd)
		return
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	// A pidfd is readable once its process has exited.
	_ = rc.Read(func(fd uintptr) bool {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, 0)
		return (err != nil && err != unix.EINTR) || n > 0
	})
}
