package initproc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Main is the sandbox's first process, started by bubblewrap already under
// the seccomp filter. With a proxy it opens the loopback listener and hands
// it to the supervisor outside the sandbox; then it applies the rlimits to
// itself and becomes the command with execve, so that the command is the
// process bubblewrap watches. It returns only on failure, after reporting
// it on FDStatus.
func Main() error {
	runtime.LockOSThread()
	_ = unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0)
	// Not dumpable: the command (same uid) cannot read this process's
	// memory or descriptors through /proc before it execs.
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	unix.CloseOnExec(FDStatus)
	status := os.NewFile(FDStatus, "status")
	report := func(s Status) error {
		b, _ := json.Marshal(s)
		_, err := status.Write(append(b, '\n'))
		return err
	}
	fail := func(err error) error {
		report(Status{Error: err.Error()})
		return err
	}

	cfgFile := os.NewFile(FDConfig, "config")
	var cfg Config
	err := json.NewDecoder(cfgFile).Decode(&cfg)
	cfgFile.Close()
	if err != nil {
		return fail(fmt.Errorf("sandbox init: reading the config: %w", err))
	}
	if len(cfg.Argv) == 0 {
		return fail(errors.New("sandbox init: no command"))
	}
	if cfg.LifelineWriter > 0 {
		unix.Close(cfg.LifelineWriter)
	}
	if len(cfg.Roots) > 0 {
		// The directory itself, wherever the path led bubblewrap: getcwd
		// names the inode it is in, as this sandbox sees it.
		cwd, err := unix.Getwd()
		if err != nil || !insideAny(cfg.Roots, cwd) {
			report(Status{Error: fmt.Sprintf("the working directory %s is outside every workspace root (it changed after it was checked)", cwd), CwdOutside: true})
			return fmt.Errorf("working directory %s outside the workspace roots", cwd)
		}
	}
	env := cfg.Env
	if cfg.Bridge {
		port, err := handOutListener(FDBridge)
		if err != nil {
			return fail(fmt.Errorf("sandbox init: egress bridge: %w", err))
		}
		env = WithProxy(env, port, true)
	}

	if cfg.GuardFD > 0 {
		if err := installExecGuard(cfg.GuardFD); err != nil {
			return fail(fmt.Errorf("sandbox init: %w", err))
		}
	}

	notJoined := join(cfg.Join)
	for _, j := range cfg.Join {
		if _, failed := notJoined[j.Controller]; failed && j.Fallback != nil {
			cfg.Rlimits = append(cfg.Rlimits, *j.Fallback)
		}
	}

	var as *Rlimit
	for i, rl := range cfg.Rlimits {
		if rl.Resource == unix.RLIMIT_AS {
			as = &cfg.Rlimits[i] // last: once it holds, this Go process may not grow
			continue
		}
		if err := syscall.Setrlimit(rl.Resource, &syscall.Rlimit{Cur: rl.Value, Max: rl.Value}); err != nil {
			return fail(fmt.Errorf("sandbox init: setrlimit %d: %w", rl.Resource, err))
		}
	}
	// Nothing may run that nobody would kill. bubblewrap arms the
	// sandbox's parent-death signal (pid 1's, towards its outer process)
	// only after its setup, when it forks this process; an outer process
	// that died before that (its supervisor killed: a SIGKILLed gateway)
	// leaves pid 1 armed towards nobody. So: wait until pid 1 is armed,
	// then check the outer process is still there (the lifeline) and that
	// the supervisor hears the last status line. After that, the outer
	// process's death kills pid 1, and the whole sandbox with it.
	if err := awaitArmedReaper(); err != nil {
		return fail(err)
	}
	if err := lifelineHeld(cfg.Lifeline); err != nil {
		return fail(err)
	}
	if err := report(Status{Seccomp: seccompField(), Exec: true, NotJoined: notJoined}); err != nil {
		return fmt.Errorf("sandbox init: the supervisor is gone (%w): the command is not started", err)
	}

	if err := unix.Dup3(FDCommandStderr, 2, 0); err != nil {
		return fail(fmt.Errorf("sandbox init: stderr: %w", err))
	}
	unix.Close(FDCommandStderr)
	// Only stdin, stdout and stderr reach the command.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		closeOnExecAbove(2)
	}
	argv0 := cfg.Argv[0]
	if as == nil {
		err = syscall.Exec(argv0, cfg.Argv, env)
		return fail(fmt.Errorf("exec %s: %w", argv0, err))
	}
	// Under RLIMIT_AS this process may not map another page, and a Go
	// program's reservations alone (~1.2 GB) are past most bounds: a heap
	// that has to grow is a fatal "out of memory" in the runtime. So
	// everything execve needs, and the report of its failure, is made
	// first, and the exec is a raw system call that allocates nothing
	// (syscall.Exec builds its argument arrays after the limit would hold).
	argv0p, err := syscall.BytePtrFromString(argv0)
	if err != nil {
		return fail(fmt.Errorf("exec %s: %w", argv0, err))
	}
	argvp, err := syscall.SlicePtrFromStrings(cfg.Argv)
	if err != nil {
		return fail(fmt.Errorf("exec %s: %w", argv0, err))
	}
	envp, err := syscall.SlicePtrFromStrings(env)
	if err != nil {
		return fail(fmt.Errorf("exec %s: %w", argv0, err))
	}
	head, _ := json.Marshal(Status{Error: "exec " + argv0 + ": "})
	head, tail := head[:len(head)-2], []byte("\"}\n") // around the errno text
	if err := syscall.Setrlimit(unix.RLIMIT_AS, &syscall.Rlimit{Cur: as.Value, Max: as.Value}); err != nil {
		return fail(fmt.Errorf("sandbox init: setrlimit AS: %w", err))
	}
	_, _, errno := syscall.RawSyscall(unix.SYS_EXECVE, uintptr(unsafe.Pointer(argv0p)),
		uintptr(unsafe.Pointer(&argvp[0])), uintptr(unsafe.Pointer(&envp[0])))
	// Errno texts are plain ASCII: no JSON escaping needed.
	unix.Write(FDStatus, head)
	unix.Write(FDStatus, unsafe.Slice(unsafe.StringData(errno.Error()), len(errno.Error())))
	unix.Write(FDStatus, tail)
	return errno
}

// join enters each cgroup by writing 0 to its tasks file, which means the
// calling thread: the one that execs the command (Main is locked to it),
// so the command and everything it forks start inside. The kernel moves
// the current thread without the global lock a move by pid takes (that
// waits for an RCU grace period: 5–60 ms measured on an idle host, where
// this takes ~0.1 ms). It returns the controllers it could not enter.
func join(js []Join) map[string]string {
	var failed map[string]string
	for _, j := range js {
		_, err := unix.Write(j.FD, []byte("0"))
		unix.Close(j.FD)
		if err != nil {
			if failed == nil {
				failed = map[string]string{}
			}
			failed[j.Controller] = err.Error()
		}
	}
	return failed
}

// seccompField reads the Seccomp line of /proc/self/status ("0" none,
// "2" filtered).
func seccompField() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return ""
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte("Seccomp:")); ok {
			return string(bytes.TrimSpace(v))
		}
	}
	return ""
}

// closeOnExecAbove marks every descriptor above n close-on-exec (for
// kernels without close_range).
func closeOnExecAbove(n int) {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range entries {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > n {
			unix.CloseOnExec(fd)
		}
	}
}

// WithProxy sets every variable of proxyTable for the bridge's port on
// loopback, so that curl, git, Go, Python, Node and Java programs find the
// proxy; whatever env said about them is replaced (JAVA_TOOL_OPTIONS: kept,
// with ours after it).
//
// ownLoopback says the command has a network namespace of its own (the
// sandbox): its loopback then goes around the proxy, since nothing there
// leads anywhere but to the run itself. In mode none it is the host's,
// and goes through the proxy like everything else.
func WithProxy(env []string, port int, ownLoopback bool) []string {
	had := make(map[string]string, len(proxyTable))
	out := make([]string, 0, len(env)+len(proxyTable))
	for _, kv := range env {
		name, val, _ := strings.Cut(kv, "=")
		if !isProxyVar(name) {
			out = append(out, kv)
		} else if _, dup := had[name]; !dup {
			had[name] = val // the first, as getenv reads it
		}
	}
	for _, v := range proxyTable {
		out = append(out, v.name+"="+v.expand(port, had[v.name], ownLoopback))
	}
	return out
}

// handOutListener listens on the sandbox's loopback and sends the listening
// socket over the socketpair end fd to the supervisor, outside the sandbox,
// which accepts on it: no process inside ever needs an AF_UNIX socket. The
// listener exists before the command starts, so a connection made at once
// waits in the backlog. Plain system calls rather than package net, which
// would bring its resolver and a larger binary to start.
func handOutListener(fd int) (int, error) {
	defer unix.Close(fd)
	s, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer unix.Close(s)
	if err := unix.Bind(s, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return 0, err
	}
	// The kernel caps the backlog at the namespace's somaxconn.
	if err := unix.Listen(s, 4096); err != nil {
		return 0, err
	}
	sa, err := unix.Getsockname(s)
	if err != nil {
		return 0, err
	}
	in4, ok := sa.(*unix.SockaddrInet4)
	if !ok {
		return 0, errors.New("the listener has no IPv4 address")
	}
	if err := unix.Sendmsg(fd, []byte{'L'}, unix.UnixRights(s), nil, 0); err != nil {
		return 0, fmt.Errorf("handing the listener out: %w", err)
	}
	return in4.Port, nil
}

// insideAny reports whether p is one of roots or below one, lexically
// (both are real paths: getcwd's has no symlink, and the supervisor
// resolved the roots).
func insideAny(roots []string, p string) bool {
	for _, r := range roots {
		if p == r || strings.HasPrefix(p, strings.TrimSuffix(r, "/")+"/") {
			return true
		}
	}
	return false
}
