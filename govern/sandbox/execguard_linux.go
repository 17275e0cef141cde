package sandbox

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"
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
	mu      sync.Mutex
	refused []ArgvRefusal
	failed  error
	done    chan struct{}
}

// serveGuard answers the notifications on listener until every process
// under the filter is gone (or stop is closed).
func serveGuard(listener int, m *secretscan.Matcher, stop <-chan struct{}) *execGuard {
	g := &execGuard{fd: listener, m: m, done: make(chan struct{})}
	// The caller sleeps until answered: waking on the same CPU saves a
	// round trip through the scheduler (Linux 6.6; older kernels refuse).
	unix.IoctlSetInt(listener, unix.SECCOMP_IOCTL_NOTIF_SET_FLAGS, unix.SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP)
	go func() {
		// A thread of its own: the caller waits while the answer passes
		// through the Go scheduler otherwise.
		runtime.LockOSThread()
		defer close(g.done)
		defer unix.Close(listener)
		fds := []unix.PollFd{{Fd: int32(listener), Events: unix.POLLIN}}
		for {
			select {
			case <-stop:
				return
			default:
			}
			fds[0].Revents = 0
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
			var req seccompNotif
			if err := ioctlPtr(listener, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(&req)); err != nil {
				if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EINTR) {
					continue // the caller died while waiting
				}
				g.fail(err)
				return
			}
			resp := g.decide(&req)
			if err := ioctlPtr(listener, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&resp)); err != nil && !errors.Is(err, unix.ENOENT) {
				g.fail(err)
				return
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
	argv, err := readArgv(pid, argvArg)
	if err != nil {
		if errors.Is(err, unix.E2BIG) {
			return deny(unix.E2BIG)
		}
		return deny(unix.EFAULT)
	}
	// Still the same call waiting: what was read is its memory.
	if ioctlPtr(g.fd, unix.SECCOMP_IOCTL_NOTIF_ID_VALID, unsafe.Pointer(&req.ID)) != nil {
		return cont // it is gone; the answer goes nowhere
	}
	for i, a := range argv {
		if id, ok := g.m.Find(a); ok {
			prog, _ := readString(pid, pathArg, 4096)
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

// readArgv reads the NULL-terminated array of string pointers at addr in
// process pid, and the strings.
func readArgv(pid int, addr uint64) ([][]byte, error) {
	var out [][]byte
	total := 0
	ptrs := make([]byte, 512)
	for {
		// Up to the end of the page: the next may not be mapped.
		n := min(len(ptrs), 4096-int(addr%4096))
		if err := readMem(pid, addr, ptrs[:n]); err != nil {
			return nil, err
		}
		for i := 0; i+8 <= n; i += 8 {
			p := binary.NativeEndian.Uint64(ptrs[i:])
			if p == 0 {
				return out, nil
			}
			if len(out) >= maxArgvArgs {
				return nil, unix.E2BIG
			}
			s, err := readString(pid, p, maxArgvBytes-total)
			if err != nil {
				return nil, err
			}
			total += len(s) + 1
			out = append(out, s)
		}
		addr += uint64(n)
	}
}

// readString reads a NUL-terminated string at addr, at most limit bytes.
func readString(pid int, addr uint64, limit int) ([]byte, error) {
	var out []byte
	buf := make([]byte, 4096)
	for {
		// Up to the end of the page: the next may not be mapped.
		n := 4096 - int(addr%4096)
		if err := readMem(pid, addr, buf[:n]); err != nil {
			return nil, err
		}
		if i := bytes.IndexByte(buf[:n], 0); i >= 0 {
			out = append(out, buf[:i]...)
			if len(out) > limit {
				return nil, unix.E2BIG
			}
			return out, nil
		}
		out = append(out, buf[:n]...)
		if len(out) > limit {
			return nil, unix.E2BIG
		}
		addr += uint64(n)
	}
}

func readMem(pid int, addr uint64, buf []byte) error {
	local := []unix.Iovec{{Base: &buf[0]}}
	local[0].SetLen(len(buf))
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(buf)}}
	n, err := unix.ProcessVMReadv(pid, local, remote, 0)
	if err != nil {
		return err
	}
	if n != len(buf) {
		return fmt.Errorf("read %d of %d bytes of process %d", n, len(buf), pid)
	}
	return nil
}

// guardRefusalMessage is the line the run's result carries.
func guardRefusalMessage(r []ArgvRefusal) string {
	if len(r) == 0 {
		return ""
	}
	return fmt.Sprintf("the sandbox refused %d program start(s) whose command line carried an injected credential (first: %s, argument %d, credential %s): a credential reaches a program through its environment or $MITRITY_CRED_DIR, never as an argument",
		len(r), r[0].Program, r[0].Argument, r[0].Credential)
}
