package sandbox

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/mitrity/mitrity/govern"
)

// Descriptors the sandbox's init inherits from Run (through bubblewrap,
// which passes on what it does not consume).
const (
	fdInitConfig    = 3 // initConfig as JSON; read to EOF, then closed
	fdInitStatus    = 4 // initStatus lines to Run; close-on-exec
	fdCommandStderr = 5 // the command's stderr; bwrap's own goes to Run
	fdBridge        = 6 // with a proxy: a socketpair end to hand the listener out
)

// initConfig is what Run tells the sandbox's init.
type initConfig struct {
	Argv    []string       `json:"argv"`
	Env     []string       `json:"env"`
	Rlimits []rlimitConfig `json:"rlimits"`
	// Bridge: listen on loopback and hand the listener to Run on
	// fdBridge; Run forwards its connections to the egress proxy.
	Bridge bool `json:"bridge"`
}

type rlimitConfig struct {
	Resource int    `json:"resource"`
	Value    uint64 `json:"value"`
}

// initStatus is one line init writes to Run. Exec is the last line before
// execve; an Error line after it means execve failed.
type initStatus struct {
	// Seccomp is the Seccomp field of init's /proc/self/status: 2 when
	// bubblewrap installed the filter (on every process of the sandbox).
	Seccomp string        `json:"seccomp,omitempty"`
	Exec    bool          `json:"exec,omitempty"`
	Error   string        `json:"error,omitempty"`
	Reason  govern.Reason `json:"reason,omitempty"`
}

// proxyVars are set to the bridge when the sandbox has a proxy.
var proxyVars = []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"}

// Init is the sandbox's first process (the helper's "init" subcommand,
// started by bubblewrap, already under the seccomp filter). With a proxy it
// opens the loopback listener and hands it to Run, outside the sandbox,
// which forwards each connection to the proxy's socket; then it applies the
// rlimits to itself and becomes the command with execve, so the command is
// the process bubblewrap watches. It returns only on failure, after
// reporting it to Run.
func Init() error {
	runtime.LockOSThread()
	_ = unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0)
	// Not dumpable: the command (same uid) cannot read this process's
	// memory or descriptors through /proc before it execs.
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	unix.CloseOnExec(fdInitStatus)
	status := os.NewFile(fdInitStatus, "status")
	report := func(s initStatus) {
		b, _ := json.Marshal(s)
		status.Write(append(b, '\n'))
	}
	fail := func(reason govern.Reason, err error) error {
		report(initStatus{Error: err.Error(), Reason: reason})
		return err
	}

	cfgFile := os.NewFile(fdInitConfig, "config")
	var cfg initConfig
	err := json.NewDecoder(cfgFile).Decode(&cfg)
	cfgFile.Close()
	if err != nil {
		return fail(govern.ReasonSpawnError, fmt.Errorf("sandbox init: reading the config: %w", err))
	}
	if len(cfg.Argv) == 0 {
		return fail(govern.ReasonSpawnError, errors.New("sandbox init: no command"))
	}
	env := cfg.Env
	if cfg.Bridge {
		port, err := handOutListener(fdBridge)
		if err != nil {
			return fail(govern.ReasonSpawnError, fmt.Errorf("sandbox init: egress bridge: %w", err))
		}
		env = withProxy(env, port)
	}

	argv0 := cfg.Argv[0]
	var as *rlimitConfig
	for i, rl := range cfg.Rlimits {
		if rl.Resource == unix.RLIMIT_AS {
			as = &cfg.Rlimits[i] // last: once it holds, this Go process may not grow
			continue
		}
		if err := syscall.Setrlimit(rl.Resource, &syscall.Rlimit{Cur: rl.Value, Max: rl.Value}); err != nil {
			return fail(govern.ReasonSpawnError, fmt.Errorf("sandbox init: setrlimit %d: %w", rl.Resource, err))
		}
	}
	report(initStatus{Seccomp: seccompField(), Exec: true})

	if err := unix.Dup3(fdCommandStderr, 2, 0); err != nil {
		return fail(govern.ReasonSpawnError, fmt.Errorf("sandbox init: stderr: %w", err))
	}
	unix.Close(fdCommandStderr)
	// Only stdin, stdout and stderr reach the command.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		closeOnExecAbove(2)
	}
	if as != nil {
		if err := syscall.Setrlimit(unix.RLIMIT_AS, &syscall.Rlimit{Cur: as.Value, Max: as.Value}); err != nil {
			return fail(govern.ReasonSpawnError, fmt.Errorf("sandbox init: setrlimit AS: %w", err))
		}
	}
	err = syscall.Exec(argv0, cfg.Argv, env)
	return fail(govern.ReasonSpawnError, fmt.Errorf("exec %s: %w", argv0, err))
}

// seccompField reads the Seccomp line of /proc/self/status ("0" none,
// "2" filtered).
func seccompField() string {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Seccomp:"); ok {
			return strings.TrimSpace(v)
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

// withProxy points every proxy variable at the bridge and empties NO_PROXY.
func withProxy(env []string, port int) []string {
	drop := map[string]bool{"NO_PROXY": true, "no_proxy": true}
	for _, v := range proxyVars {
		drop[v] = true
	}
	out := make([]string, 0, len(env)+len(proxyVars)+2)
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !drop[name] {
			out = append(out, kv)
		}
	}
	url := "http://127.0.0.1:" + strconv.Itoa(port)
	for _, v := range proxyVars {
		out = append(out, v+"="+url)
	}
	return append(out, "NO_PROXY=", "no_proxy=")
}

// handOutListener listens on the sandbox's loopback and sends the listening
// socket over the socketpair end fd to Run, outside the sandbox, which
// accepts on it. No process inside the sandbox ever needs an AF_UNIX
// socket. The listener exists before the command starts, so a connection
// made at once waits in the backlog.
func handOutListener(fd int) (int, error) {
	defer unix.Close(fd)
	ln, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	f, err := ln.File()
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if err := unix.Sendmsg(fd, []byte{'L'}, unix.UnixRights(int(f.Fd())), nil, 0); err != nil {
		return 0, fmt.Errorf("handing the listener out: %w", err)
	}
	return ln.Addr().(*net.TCPAddr).Port, nil
}
