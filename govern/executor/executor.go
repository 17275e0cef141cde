// Package executor runs an execution plan: it checks what must still hold
// at run time (the concurrency limit, the working directory, the pinned
// scripts), builds the process with a constructed environment and the
// plan's credentials, enforces the timeout (SIGTERM, then SIGKILL after a
// grace period) and the output caps, and reports what happened in the
// spec's closed vocabulary.
package executor

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/egress"
	"github.com/mitrity/mitrity/govern/plan"
	"github.com/mitrity/mitrity/govern/pollfd"
	"github.com/mitrity/mitrity/govern/sandbox"
)

// DefaultKillGrace is how long a process has between SIGTERM and SIGKILL.
const DefaultKillGrace = 5 * time.Second

// Stream counts one output stream.
type Stream struct {
	Bytes     int64 // bytes produced, including those discarded past the cap
	Discarded int64
	Truncated bool
}

// Result is what one execution did: the sandbox helper's result (a run in
// mode none fills the same shape), with what only the executor knows: the
// streams as produced, the credentials injected and the egress proxy's
// report. It is the one result type from a run up to the service, which
// turns it into the audit record and into the agent's result.
type Result struct {
	sandbox.Result
	Stdout Stream
	Stderr Stream
	// CredentialsInjected lists credential ids, never values.
	CredentialsInjected []string
	// Egress is the report of the run's mitrity-egressproxy: the counts and
	// the first 16 distinct refused destinations, each with its reason
	// (Egress.Denials, one DLP unauthorized_destination event each), in
	// mode none as in the sandbox. nil when the run had no proxy (an empty
	// allowlist, nothing started) or the proxy gave no report (EgressError
	// says why).
	Egress *egress.Report
	// EgressError says why a run that had a proxy has no report: the proxy
	// died or hung. Connections were then refused, never let through.
	EgressError string
}

// Duration is how long the run took.
func (r *Result) Duration() time.Duration { return time.Duration(r.DurationMS) * time.Millisecond }

// TimedOut reports whether the timeout ended the run.
func (r *Result) TimedOut() bool { return r.Status == govern.StatusTimedOut }

// Executor runs plans, at most MaxConcurrent at once.
type Executor struct {
	slots     *Slots
	killGrace time.Duration
	// sandbox runs bubblewrap modes; nil means only mode none can run.
	sandbox *Sandbox
	// proxyPath is mitrity-egressproxy; "" means none was found.
	proxyPath     string
	proxySet      bool
	proxyLog      io.Writer
	proxyLogLevel string
	// egress is the host's proxy settings (WithEgressSettings); nil: the
	// sandbox's, or the defaults.
	egress *egress.Config
}

// Sandbox is how the executor reaches the bubblewrap backend.
type Sandbox struct {
	// Helper is mitrity-sandboxrun, whose init runs inside the sandbox.
	Helper  string
	Bwrap   sandbox.Bwrap
	Seccomp sandbox.SeccompMode
	Limits  sandbox.Limits
	// DenyPaths are masked on top of the mandatory deny set: the gateway's
	// own config, policy, audit log and credential sources.
	DenyPaths []string
	// ReadOnlyPaths are kept read-only even inside a workspace root: the
	// gateway's own programs.
	ReadOnlyPaths []string
	// Egress is the host's proxy settings (allowed ports, denied and
	// allowed private CIDRs) every run starts from; each plan supplies its
	// allowlist.
	Egress egress.Config
	// Narrowing is what exec.sandbox.settings_file takes away on top (nil:
	// nothing).
	Narrowing *sandbox.Narrowing
}

// WithSandbox lets the executor run the bubblewrap modes.
func WithSandbox(s Sandbox) Option { return func(e *Executor) { e.sandbox = &s } }

// Option configures an Executor.
type Option func(*Executor)

// WithKillGrace changes the SIGTERM-to-SIGKILL grace period (tests).
func WithKillGrace(d time.Duration) Option { return func(e *Executor) { e.killGrace = d } }

// New returns an executor that runs at most maxConcurrent plans at once.
func New(maxConcurrent int, opts ...Option) *Executor {
	if maxConcurrent < 1 {
		maxConcurrent = 1
	}
	e := &Executor{killGrace: DefaultKillGrace}
	for _, o := range opts {
		o(e)
	}
	if e.slots == nil {
		e.slots = NewSlots(maxConcurrent)
	}
	if !e.proxySet {
		e.proxyPath = egress.FindBinary()
	}
	return e
}

// Run executes p in mode, with creds (credential id -> value) fetched by
// the caller. stdout and stderr receive at most p.OutputMaxBytes each; the
// caller redacts before anything reaches the agent. Cancelling ctx kills
// the command (status killed).
//
// SandboxNone runs here, the bubblewrap modes through govern/sandbox when
// the executor has a sandbox (WithSandbox). Any other mode is refused with
// spawn_error rather than run without its isolation.
func (e *Executor) Run(ctx context.Context, p *plan.Plan, mode govern.SandboxMode, creds map[string]string, stdout, stderr io.Writer) (res Result) {
	var r Result
	r.SandboxMode = mode
	ok, limit := e.slots.take()
	if !ok {
		return neverRan(r, govern.ReasonConcurrencyLimit, fmt.Sprintf("%d executions are already running; try again when one finishes", limit))
	}
	defer e.slots.give()
	return e.run(ctx, p, mode, creds, runIO{stdout: stdout, stderr: stderr})
}

// Serve runs a long-lived program plan (an upstream MCP server) the same
// way, with stdin read from in as it arrives: its stdin and stdout are
// its protocol. It takes no max_concurrent slot (that bounds the agent's
// commands) and returns when the program ends or ctx is cancelled.
//
// Pipes (*os.File) for in and stdout are handed to the program as they
// are, with no copy between: a message to an upstream and its answer
// cross no goroutine of this process but the SDK's.
func (e *Executor) Serve(ctx context.Context, p *plan.Plan, mode govern.SandboxMode, creds map[string]string, in io.Reader, stdout, stderr io.Writer) Result {
	rio := runIO{stdin: in, stdout: stdout, stderr: stderr}
	if f, ok := in.(*os.File); ok && f != nil {
		rio.stdinFile = f
	}
	if f, ok := stdout.(*os.File); ok && f != nil {
		rio.stdoutFile = f
	}
	return e.run(ctx, p, mode, creds, rio)
}

// runIO are a run's streams: stdin, when set, is read as it arrives
// (else the plan's bytes are the whole of it). Only Serve sets the files:
// the program's own stdin and stdout, not copied.
type runIO struct {
	stdin                 io.Reader
	stdout, stderr        io.Writer
	stdinFile, stdoutFile *os.File
}

func (e *Executor) run(ctx context.Context, p *plan.Plan, mode govern.SandboxMode, creds map[string]string, rio runIO) (res Result) {
	var r Result
	r.SandboxMode = mode
	sandboxed := mode == govern.SandboxBubblewrap || mode == govern.SandboxBubblewrapNoSeccomp
	if mode != govern.SandboxNone && !(sandboxed && e.sandbox != nil) {
		r.Status, r.Reason = govern.StatusFailedToStart, govern.ReasonSpawnError
		r.Message = fmt.Sprintf("sandbox mode %s is not available to this executor", mode)
		return r
	}
	if err := checkCwd(p); err != nil {
		return neverRan(r, govern.ReasonCwdOutsideWorkspace, err.Error())
	}
	if sandboxed {
		return e.runSandboxed(ctx, p, creds, r, rio)
	}
	if err := checkPins(p); err != nil {
		return neverRan(r, govern.ReasonPinMismatch, err.Error())
	}
	r.PinMethod = "rehash"

	env, injected, cleanup, err := buildEnv(p, creds)
	if err != nil {
		r.Status, r.Reason, r.Message = govern.StatusFailedToStart, govern.ReasonSpawnError, err.Error()
		return r
	}
	defer cleanup()
	r.CredentialsInjected = injected

	// Without a kernel sandbox nothing stops a process from ignoring the
	// proxy variables, but they are set all the same and the proxy
	// enforces the allowlist for whatever goes through it: the same
	// per-run proxy as a sandboxed run, reached through a bridge on the
	// host's loopback. An empty allowlist: no proxy, no variables.
	if allow := p.Egress(); len(allow) > 0 {
		socket, pctx, finish, err := e.superviseProxy(ctx, allow)
		if err != nil {
			r.Status, r.Reason, r.Message = govern.StatusFailedToStart, govern.ReasonSpawnError, "egress proxy: "+err.Error()
			return r
		}
		defer func() { finish(&res) }() // after the return value is set
		port, stopBridge, err := serveHostBridge(socket)
		if err != nil {
			r.Status, r.Reason, r.Message = govern.StatusFailedToStart, govern.ReasonSpawnError, "egress bridge: "+err.Error()
			return r
		}
		defer stopBridge() // before the proxy stops
		ctx, env = pctx, proxyEnv(env, port)
	}
	return e.start(ctx, p, env, r, rio)
}

func neverRan(r Result, reason govern.Reason, msg string) Result {
	r.Status, r.Reason, r.Message = govern.StatusNeverRan, reason, msg
	return r
}

// checkCwd: the directory must, after symlinks, still be inside a workspace
// root when the command starts.
func checkCwd(p *plan.Plan) error {
	real, err := filepath.EvalSymlinks(p.Cwd())
	if err != nil {
		return fmt.Errorf("working directory %s: %w", p.Cwd(), err)
	}
	if st, err := os.Stat(real); err != nil || !st.IsDir() {
		return fmt.Errorf("working directory %s is not a directory", p.Cwd())
	}
	for _, root := range p.WorkspaceRoots() {
		rr, err := filepath.EvalSymlinks(root)
		if err != nil {
			continue
		}
		if rel, err := filepath.Rel(rr, real); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return nil
		}
	}
	return fmt.Errorf("working directory %s (%s) is outside every workspace root", p.Cwd(), real)
}

// checkPins re-reads every pinned script just before the start: without a
// kernel sandbox the bytes cannot be bound over the path, so a script
// changed since the decision stops the run instead.
func checkPins(p *plan.Plan) error {
	for _, pin := range p.Pins() {
		b, err := os.ReadFile(pin.RealPath)
		if err != nil {
			return fmt.Errorf("pinned script %s: %w", pin.Path, err)
		}
		sum := sha256.Sum256(b)
		if hex.EncodeToString(sum[:]) != pin.SHA256 || !bytes.Equal(b, pin.Bytes) {
			return fmt.Errorf("pinned script %s changed after the decision (%s was judged)", pin.Path, pin.SHA256)
		}
		if real, err := filepath.EvalSymlinks(pin.Path); err != nil || real != pin.RealPath {
			return fmt.Errorf("pinned script %s now resolves elsewhere", pin.Path)
		}
	}
	return nil
}

// buildEnv constructs the environment: the plan's variables, then the
// credentials, never anything of the gateway's own. Credential files are
// written 0400 into a 0700 directory that cleanup removes.
func buildEnv(p *plan.Plan, creds map[string]string) (env []string, injected []string, cleanup func(), err error) {
	cleanup = func() {}
	vars := p.Env()
	for name, id := range p.CredentialEnv() {
		v, ok := creds[id]
		if !ok {
			return nil, nil, cleanup, fmt.Errorf("credential %s was not fetched", id)
		}
		vars[name] = v
	}
	if files := p.CredentialFiles(); len(files) > 0 {
		dir := p.CredentialDir()
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			return nil, nil, cleanup, err
		}
		if err := os.Mkdir(dir, 0o700); err != nil {
			return nil, nil, cleanup, fmt.Errorf("credential directory: %w", err)
		}
		cleanup = func() { os.RemoveAll(dir) }
		for name, id := range files {
			v, ok := creds[id]
			if !ok {
				cleanup()
				return nil, nil, func() {}, fmt.Errorf("credential %s was not fetched", id)
			}
			f := filepath.Join(dir, name)
			if err := os.WriteFile(f, []byte(v), 0o400); err != nil {
				cleanup()
				return nil, nil, func() {}, err
			}
			if u := p.RunAs(); u != nil {
				if err := os.Chown(f, int(u.UID), int(u.GID)); err != nil {
					cleanup()
					return nil, nil, func() {}, err
				}
			}
		}
		if u := p.RunAs(); u != nil {
			if err := os.Chown(dir, int(u.UID), int(u.GID)); err != nil {
				cleanup()
				return nil, nil, func() {}, err
			}
		}
		vars["MITRITY_CRED_DIR"] = dir
	}
	for name, v := range vars {
		env = append(env, name+"="+v)
	}
	return env, p.CredentialIDs(), cleanup, nil
}

// argv is how the shell is invoked: no profile, no rc file, the judged
// text as the -c operand.
func argv(p *plan.Plan) []string {
	if a := p.Argv(); len(a) > 0 {
		return a
	}
	if filepath.Base(p.Shell()) == "bash" {
		return []string{p.Shell(), "--noprofile", "--norc", "-c", p.Command()}
	}
	return []string{p.Shell(), "-c", p.Command()}
}

func (e *Executor) start(ctx context.Context, p *plan.Plan, env []string, r Result, rio runIO) Result {
	stdout, stderr := rio.stdout, rio.stderr
	st, err := newStreams(rio.stdoutFile)
	if err != nil {
		r.Status, r.Reason, r.Message = govern.StatusFailedToStart, govern.ReasonSpawnError, err.Error()
		return r
	}
	args := argv(p)
	cmd := &exec.Cmd{Path: args[0], Args: args, Env: env, Dir: p.Cwd(), Stdout: st.outW, Stderr: st.errW}
	if in := p.Stdin(); in != nil {
		cmd.Stdin = bytes.NewReader(in)
	}
	if rio.stdin != nil {
		cmd.Stdin = rio.stdin
	}
	// Its own process group, so a timeout reaches every process it started;
	// and dead with the gateway.
	cmd.SysProcAttr = groupAttr()
	defer holdThread()() // the parent-death signal follows this thread
	if u := p.RunAs(); u != nil {
		// A root gateway never runs an agent's command as root.
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: []uint32{}}
	}
	started := time.Now()
	if err := cmd.Start(); err != nil {
		st.abort()
		r.Status, r.Reason, r.Message = govern.StatusFailedToStart, govern.ReasonSpawnError, err.Error()
		return r
	}
	st.closeWriters()
	st.copy(stdout, stderr, p.OutputMaxBytes())
	pgid := cmd.Process.Pid

	waited := make(chan error, 1)
	go func() { waited <- pollfd.Wait(cmd) }()

	timer := time.NewTimer(p.Timeout())
	defer timer.Stop()
	var waitErr error
	var killedBy string
	select {
	case waitErr = <-waited:
	case <-timer.C:
		killedBy = "timeout"
		waitErr = e.terminate(pgid, waited)
	case <-ctx.Done():
		killedBy = "cancel"
		waitErr = e.terminate(pgid, waited)
	}
	r.DurationMS = time.Since(started).Milliseconds()
	// Nothing the command started may outlive it (but a process that
	// called setsid has left the group: mode none enforces no limit, and
	// LimitsEnforced stays all false).
	syscall.Kill(-pgid, syscall.SIGKILL)
	r.Stdout, r.Stderr = st.finish(time.Second)

	switch {
	case killedBy == "timeout":
		r.Status = govern.StatusTimedOut
	case killedBy == "cancel":
		r.Status, r.Message = govern.StatusKilled, "the call was cancelled"
	default:
		var ee *exec.ExitError
		if waitErr != nil && !errors.As(waitErr, &ee) {
			r.Status, r.Reason, r.Message = govern.StatusFailedToStart, govern.ReasonSpawnError, waitErr.Error()
			return r
		}
		ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			r.Status, r.Message = govern.StatusKilled, "killed by signal "+ws.Signal().String()
			return r
		}
		code := cmd.ProcessState.ExitCode()
		r.Status, r.ExitCode = govern.StatusCompleted, &code
	}
	return r
}

// terminate sends SIGTERM to the process group, then SIGKILL after the
// grace period, and returns the wait result.
func (e *Executor) terminate(pgid int, waited <-chan error) error {
	syscall.Kill(-pgid, syscall.SIGTERM)
	grace := time.NewTimer(e.killGrace)
	defer grace.Stop()
	select {
	case err := <-waited:
		return err
	case <-grace.C:
		syscall.Kill(-pgid, syscall.SIGKILL)
		return <-waited
	}
}

// capCopy copies r to w up to limit bytes and counts the rest. It reads
// to EOF whatever the cap, so the command never blocks on a full pipe.
func capCopy(w io.Writer, r io.Reader, limit int64) Stream {
	var s Stream
	var written int64
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			s.Bytes += int64(n)
			keep := min(int64(n), max(limit-written, 0))
			if keep > 0 && w != nil {
				w.Write(buf[:keep])
				written += keep
			}
			if d := int64(n) - keep; d > 0 {
				s.Discarded += d
				s.Truncated = true
			}
		}
		if err != nil {
			return s
		}
	}
}
