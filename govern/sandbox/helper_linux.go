package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/pollfd"
)

// helperEnv are the gateway's variables the helper needs to find what the
// gateway finds (bubblewrap on PATH, the live register under the runtime
// directory); nothing else of its environment reaches it.
var helperEnv = []string{"PATH", "XDG_RUNTIME_DIR", "TMPDIR", "HOME"}

// helperWait is how long a cancelled run's helper has to answer after its
// kill grace (the supervisor waits up to 5 s for the sandbox's last
// process) before it is killed, and the sandbox with it.
const helperWait = 10 * time.Second

// Spawn runs s in a new mitrity-sandboxrun (helper, an absolute path) with
// stdio as the command's streams, and returns its result. Cancelling ctx
// sends the helper SIGTERM: the run ends as cancelled. A helper that dies
// without a result takes the sandbox with it (bubblewrap's parent-death
// signal), and the result says so.
func Spawn(ctx context.Context, helper string, s *Spec, stdio Stdio) Result {
	started := time.Now()
	res := spawn(ctx, helper, s, stdio)
	if res.DurationMS == 0 {
		res.DurationMS = time.Since(started).Milliseconds()
	}
	return res
}

func spawn(ctx context.Context, helper string, s *Spec, stdio Stdio) Result {
	fail := func(format string, args ...any) Result {
		return notStarted(govern.StatusFailedToStart, govern.ReasonSpawnError, "the sandbox helper: "+format, args...)
	}
	spec, err := json.Marshal(s)
	if err != nil {
		return fail("encoding the spec: %v", err)
	}
	specR, specW, err := os.Pipe()
	if err != nil {
		return fail("%v", err)
	}
	defer specW.Close()
	resR, resW, err := os.Pipe()
	if err != nil {
		specR.Close()
		return fail("%v", err)
	}
	defer resR.Close()
	cmd := &exec.Cmd{
		Path: helper,
		Args: []string{"mitrity-sandboxrun", HelperRun, "--spec-fd", "3", "--result-fd", "4"},
		Dir:  "/",
		// The helper dies with the gateway, and bubblewrap with it.
		SysProcAttr: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
		ExtraFiles:  []*os.File{specR, resW},
	}
	for _, name := range helperEnv {
		if v, ok := os.LookupEnv(name); ok {
			cmd.Env = append(cmd.Env, name+"="+v)
		}
	}
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	// A nil *os.File in an interface is not nil: set only what is given
	// (exec gives /dev/null for the rest).
	if stdio.Stdin != nil {
		cmd.Stdin = stdio.Stdin
	}
	if stdio.Stdout != nil {
		cmd.Stdout = stdio.Stdout
	}
	if stdio.Stderr != nil {
		cmd.Stderr = stdio.Stderr
	}
	// The parent-death signal follows the thread that forks, and Go ends
	// a thread whose locked goroutine returns (this package does so on
	// purpose for its lookups as the sandbox's user): an unlocked thread
	// could be taken by such a goroutine and end, and the helper with it.
	// Hold it until the helper is gone.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	err = cmd.Start()
	specR.Close()
	resW.Close()
	if err != nil {
		return fail("starting %s: %v", helper, err)
	}
	go func() {
		specW.Write(spec)
		specW.Close()
	}()
	answer := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(resR, maxResultBytes))
		answer <- b
	}()
	waited := make(chan error, 1)
	go func() { waited <- pollfd.Wait(cmd) }()
	var waitErr error
	select {
	case waitErr = <-waited:
	case <-ctx.Done():
		cmd.Process.Signal(syscall.SIGTERM)
		deadline := time.NewTimer(s.KillGrace() + helperWait)
		select {
		case waitErr = <-waited:
		case <-deadline.C:
			cmd.Process.Kill()
			waitErr = <-waited
		}
		deadline.Stop()
	}
	b := <-answer
	var r Result
	if len(b) == 0 || json.Unmarshal(b, &r) != nil || !r.Status.Valid() {
		// The run's processes died with the helper, except a sandbox
		// bubblewrap was still setting up: end it now (the next run would).
		// Whether the command had started is not known.
		EndOrphans()
		return Result{Status: govern.StatusKilled, Reason: govern.ReasonSpawnError,
			Message: fmt.Sprintf("the sandbox helper %s ended without a result (%s): the sandbox died with it", helper, exitText(waitErr))}
	}
	return r
}

// exitText says how a process ended, briefly.
func exitText(err error) string {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return "exit status 0"
	case errors.As(err, &ee):
		return strings.TrimSpace(ee.ProcessState.String())
	default:
		return err.Error()
	}
}
