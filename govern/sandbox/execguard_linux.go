package sandbox

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/mitrity/mitrity/govern/secretscan"
)

// The exec guard: a credential injected into a run may reach a program
// only through its environment or a file; on a command line it is
// readable by every local user (the sandbox's pid namespace does not hide
// it from the host's /proc). The analyzer refuses what it can see; the
// guard holds where it cannot (interpreters, compiled programs, code
// built at run time). Init installs a seccomp filter that makes every
// execve and execveat of the run wait for this supervisor (user
// notification); the supervisor reads the argument vector from the
// caller's memory and answers EPERM when an argument carries an injected
// value in any form secretscan knows, else lets the call go on.
//
// Known limit: the kernel copies the argument vector from the caller's
// memory after the answer, so a multi-threaded program can rewrite its
// own argument strings between the check and the copy. That is a program
// trying to leak its own credential, which it can do anyway through its
// output (redacted) or its network (the allowlist); no ordinary program
// races itself this way.

// seccompNotif and seccompNotifResp are struct seccomp_notif and
// seccomp_notif_resp.
type seccompNotif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Nr    int32
	Arch  uint32
	IP    uint64
	Args  [6]uint64
}

type seccompNotifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// Bounds on what the guard reads of one command line: more than a
// kernel takes with the default stack limit is refused (E2BIG).
const (
	maxArgvArgs  = 1 << 17
	maxArgvBytes = 4 << 20
)

// execGuard serves one run's listener.
type execGuard struct {
	fd      int
	m       *secretscan.Matcher
	mem     *callerMem
	mu      sync.Mutex
	refused []ArgvRefusal
	failed  error
	done    chan struct{}
}

// schedEvery bounds the time the guard's loop goes without a pass
// through the Go scheduler. The runtime's monitor takes the P of a
// goroutine sitting in a system call once that goroutine has not been
// scheduled for 10ms, needed elsewhere or not; a loop that only ever
// polls is never scheduled, so from then on every poll lost its P, and
// every return took another and woke the monitor to its 20us cycle: some
// six thread switches per program start, on the CPUs the run's programs
// need. A yield every few ms costs about two.
//
// The loop keeps no thread of its own for the same reason: a locked
// thread's yield hands its P to another thread and back (five futex
// calls, against two).
// While the P stays, the caller's answer never passes through the
// scheduler anyway: the poll returns on the thread that made it.
const schedEvery = 8 * time.Millisecond

// serveGuard answers the notifications on listener until every process
// under the filter is gone (or stop is closed).
func serveGuard(listener int, m *secretscan.Matcher, stop <-chan struct{}) *execGuard {
	g := &execGuard{fd: listener, m: m, mem: newCallerMem(), done: make(chan struct{})}
	// The caller sleeps until answered: waking on the same CPU saves a
	// round trip through the scheduler (Linux 6.6; older kernels refuse).
	unix.IoctlSetInt(listener, unix.SECCOMP_IOCTL_NOTIF_SET_FLAGS, unix.SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP)
	go func() {
		defer close(g.done)
		defer unix.Close(listener)
		fds := []unix.PollFd{{Fd: int32(listener), Events: unix.POLLIN}}
		var req seccompNotif
		var resp seccompNotifResp
		scheduled := time.Now()
		for {
			select {
			case <-stop:
				return
			default:
			}
			fds[0].Revents = 0
			// Blocking, for at most 200 ms: a plain system call, which
			// lets the runtime use the P meanwhile (since Go 1.26 a
			// stop-the-world that begins as it is entered can wait for it:
			// at most those 200 ms, see govern/pollfd).
			n, err := unix.Poll(fds, 200)
			if err == unix.EINTR || n == 0 {
				continue
			}
			if err != nil {
				g.fail(err)
				return
			}
			if fds[0].Revents&unix.POLLIN == 0 {
				return // POLLHUP: no process is under the filter any more
			}
			req = seccompNotif{} // the kernel wants it zeroed
			// Plain too: should the caller have been interrupted since
			// the poll, the receive waits for the next one.
			if err := ioctlPtr(listener, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(&req)); err != nil {
				if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EINTR) {
					continue // the caller died while waiting
				}
				g.fail(err)
				return
			}
			resp = g.decide(&req)
			if err := ioctlRaw(listener, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&resp)); err != nil && !errors.Is(err, unix.ENOENT) {
				g.fail(err)
				return
			}
			// Answered: the yield delays no caller.
			if now := time.Now(); now.Sub(scheduled) >= schedEvery {
				runtime.Gosched()
				scheduled = now
			}
		}
	}()
	return g
}

func ioctlPtr(fd int, req uint, p unsafe.Pointer) error {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(p))
	if errno != 0 {
		return errno
	}
	return nil
}

// ioctlRaw is ioctlPtr without the runtime's system call bookkeeping,
// for the requests that never wait (SEND, ID_VALID: a lookup under the
// listener's lock).
func ioctlRaw(fd int, req uint, p unsafe.Pointer) error {
	_, _, errno := unix.RawSyscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(p))
	if errno != 0 {
		return errno
	}
	return nil
}

func (g *execGuard) fail(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.failed == nil {
		g.failed = err
	}
}

// decide reads the call's argument vector and answers: continue, or
// EPERM (a credential in an argument), or E2BIG (more than the guard
// reads), or EFAULT (memory the kernel could not read either).
func (g *execGuard) decide(req *seccompNotif) seccompNotifResp {
	cont := seccompNotifResp{ID: req.ID, Flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE}
	deny := func(errno unix.Errno) seccompNotifResp {
		return seccompNotifResp{ID: req.ID, Error: -int32(errno)}
	}
	pathArg, argvArg := req.Args[0], req.Args[1]
	if req.Nr == unix.SYS_EXECVEAT {
		pathArg, argvArg = req.Args[1], req.Args[2]
	}
	pid := int(req.Pid)
	g.mem.reset(pid)
	argv, err := g.mem.readArgv(argvArg)
	if err != nil {
		if errors.Is(err, unix.E2BIG) {
			return deny(unix.E2BIG)
		}
		return deny(unix.EFAULT)
	}
	// Still the same call waiting: what was read is its memory.
	if ioctlRaw(g.fd, unix.SECCOMP_IOCTL_NOTIF_ID_VALID, unsafe.Pointer(&req.ID)) != nil {
		return cont // it is gone; the answer goes nowhere
	}
	for i, a := range argv {
		if id, ok := g.m.Find(a); ok {
			prog, _ := g.mem.str(pathArg, 4096)
			g.mu.Lock()
			g.refused = append(g.refused, ArgvRefusal{Program: string(prog), Argument: i, Credential: id})
			g.mu.Unlock()
			return deny(unix.EPERM)
		}
	}
	return cont
}

// finish waits for the loop and returns what it refused.
func (g *execGuard) finish() ([]ArgvRefusal, error) {
	if g == nil {
		return nil, nil
	}
	<-g.done
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.refused, g.failed
}

// guardRefusalMessage is the line the run's result carries.
func guardRefusalMessage(r []ArgvRefusal) string {
	if len(r) == 0 {
		return ""
	}
	return fmt.Sprintf("the sandbox refused %d program start(s) whose command line carried an injected credential (first: %s, argument %d, credential %s): a credential reaches a program through its environment or $MITRITY_CRED_DIR, never as an argument",
		len(r), r[0].Program, r[0].Argument, r[0].Credential)
}
