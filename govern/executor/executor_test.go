package executor

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/plan"
	"github.com/mitrity/mitrity/govern/shell"
)

type spec = plan.Spec

func newPlan(t *testing.T, mutate func(*spec)) *plan.Plan {
	t.Helper()
	dir := t.TempDir()
	s := spec{
		Shell: "/bin/bash", Dialect: shell.DialectBash, Command: "true", CommandSHA256: "x",
		Cwd: dir, WorkspaceRoots: []string{dir}, Timeout: 10 * time.Second, OutputMaxBytes: 1 << 20,
		Env: map[string]string{"PATH": "/usr/bin:/bin", "HOME": dir},
	}
	if mutate != nil {
		mutate(&s)
	}
	p, err := plan.New(s)
	assert.NilError(t, err)
	return p
}

func run(t *testing.T, e *Executor, p *plan.Plan, creds map[string]string) (Result, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	r := e.Run(context.Background(), p, govern.SandboxNone, creds, &out, &errb)
	return r, out.String(), errb.String()
}

func TestExitCodes(t *testing.T) {
	t.Parallel()
	for _, code := range []int{0, 1, 3, 126, 255} {
		p := newPlan(t, func(s *spec) { s.Command = fmt.Sprintf("echo out; echo err >&2; exit %d", code) })
		r, out, errs := run(t, New(2), p, nil)
		assert.Equal(t, r.Status, govern.StatusCompleted)
		assert.Assert(t, r.ExitCode != nil)
		assert.Equal(t, *r.ExitCode, code)
		assert.Equal(t, out, "out\n")
		assert.Equal(t, errs, "err\n")
		assert.Equal(t, r.Stdout.Bytes, int64(4))
	}
}

func TestConstructedEnvironment(t *testing.T) {
	t.Setenv("MITRITY_GATEWAY_SECRET", "must-not-leak")
	p := newPlan(t, func(s *spec) {
		s.Command = "env; echo BASH_ENV=${BASH_ENV-unset}"
		s.Env["LANG"] = "C.UTF-8"
	})
	r, out, _ := run(t, New(1), p, nil)
	assert.Equal(t, r.Status, govern.StatusCompleted)
	assert.Check(t, !strings.Contains(out, "must-not-leak"), out)
	assert.Check(t, is.Contains(out, "LANG=C.UTF-8"))
	assert.Check(t, is.Contains(out, "BASH_ENV=unset"))
}

func TestNoRCFiles(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	marker := filepath.Join(home, "rc-ran")
	assert.NilError(t, os.WriteFile(filepath.Join(home, ".bashrc"), []byte("touch "+marker+"\n"), 0o644))
	assert.NilError(t, os.WriteFile(filepath.Join(home, ".bash_profile"), []byte("touch "+marker+"\n"), 0o644))
	// The shell starts without rc and profile files even when HOME has them.
	p := newPlan(t, func(s *spec) { s.Env["HOME"] = home; s.Command = "true" })
	r, _, _ := run(t, New(1), p, nil)
	assert.Equal(t, r.Status, govern.StatusCompleted)
	_, err := os.Stat(marker)
	assert.Check(t, os.IsNotExist(err), "an rc file ran")
}

func TestCredentials(t *testing.T) {
	t.Parallel()
	credDir := filepath.Join(t.TempDir(), "cred")
	p := newPlan(t, func(s *spec) {
		s.CredentialEnv = map[string]string{"GITHUB_TOKEN": "github_token"}
		s.CredentialFiles = map[string]string{"kube": "kube_token"}
		s.CredentialDir = credDir
		s.Command = `printf '%s|' "$GITHUB_TOKEN"; cat "$MITRITY_CRED_DIR/kube"; printf '|'; stat -c %a "$MITRITY_CRED_DIR/kube" "$MITRITY_CRED_DIR"`
	})
	creds := map[string]string{"github_token": "ghp_0123456789abcdef", "kube_token": "kube-secret-value"}
	r, out, errs := run(t, New(1), p, creds)
	assert.Equal(t, r.Status, govern.StatusCompleted, errs)
	assert.Equal(t, out, "ghp_0123456789abcdef|kube-secret-value|400\n700\n")
	assert.DeepEqual(t, r.CredentialsInjected, []string{"github_token", "kube_token"})
	_, err := os.Stat(credDir)
	assert.Check(t, os.IsNotExist(err), "the credential directory outlived the run")
}

func TestMissingCredentialFailsToStart(t *testing.T) {
	t.Parallel()
	p := newPlan(t, func(s *spec) { s.CredentialEnv = map[string]string{"T": "absent"} })
	r, _, _ := run(t, New(1), p, nil)
	assert.Equal(t, r.Status, govern.StatusFailedToStart)
	assert.Equal(t, r.Reason, govern.ReasonSpawnError)
}

func TestTimeoutKillsTheGroup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	marker := filepath.Join(dir, "survived")
	p := newPlan(t, func(s *spec) {
		s.Timeout = 300 * time.Millisecond
		// A child ignoring SIGTERM must still die (SIGKILL after the grace).
		s.Command = fmt.Sprintf(`echo started; (trap '' TERM; sleep 3; touch %s) & trap '' TERM; sleep 30`, marker)
	})
	start := time.Now()
	r, out, _ := run(t, New(1, WithKillGrace(200*time.Millisecond)), p, nil)
	assert.Equal(t, r.Status, govern.StatusTimedOut)
	assert.Assert(t, r.TimedOut())
	assert.Assert(t, r.ExitCode == nil)
	assert.Equal(t, out, "started\n")
	assert.Assert(t, time.Since(start) < 5*time.Second)
	time.Sleep(3500 * time.Millisecond)
	_, err := os.Stat(marker)
	assert.Check(t, os.IsNotExist(err), "a process of the timed-out command survived")
}

func TestCancelKills(t *testing.T) {
	t.Parallel()
	p := newPlan(t, func(s *spec) { s.Command = "sleep 30" })
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	r := New(1, WithKillGrace(100*time.Millisecond)).Run(ctx, p, govern.SandboxNone, nil, nil, nil)
	assert.Equal(t, r.Status, govern.StatusKilled)
	assert.Assert(t, r.ExitCode == nil)
}

func TestOutputCap(t *testing.T) {
	t.Parallel()
	p := newPlan(t, func(s *spec) { s.OutputMaxBytes = 1000; s.Command = "head -c 5000 /dev/zero; head -c 10 /dev/zero >&2" })
	r, out, errs := run(t, New(1), p, nil)
	assert.Equal(t, r.Status, govern.StatusCompleted)
	assert.Equal(t, len(out), 1000)
	assert.Equal(t, len(errs), 10)
	assert.DeepEqual(t, r.Stdout, Stream{Bytes: 5000, Discarded: 4000, Truncated: true})
	assert.DeepEqual(t, r.Stderr, Stream{Bytes: 10})
}

func TestStdin(t *testing.T) {
	t.Parallel()
	p := newPlan(t, func(s *spec) { s.Stdin = []byte("hello\n"); s.Command = "tr a-z A-Z" })
	r, out, _ := run(t, New(1), p, nil)
	assert.Equal(t, r.Status, govern.StatusCompleted)
	assert.Equal(t, out, "HELLO\n")
	// No stdin: the command reads EOF, it does not hang.
	p = newPlan(t, func(s *spec) { s.Command = "cat; echo done" })
	r, out, _ = run(t, New(1), p, nil)
	assert.Equal(t, out, "done\n")
}

func TestPinMismatch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := filepath.Join(dir, "x.sh")
	judged := []byte("echo judged\n")
	assert.NilError(t, os.WriteFile(script, judged, 0o755))
	a := shell.Analyze(shell.Input{Text: "bash ./x.sh", Dialect: shell.DialectBash, Cwd: dir, InspectionRoots: []string{dir}})
	assert.Equal(t, len(a.Pins), 1)
	p := newPlan(t, func(s *spec) {
		s.Cwd, s.WorkspaceRoots = dir, []string{dir}
		s.Command = "bash ./x.sh"
		s.Pins = a.Pins
	})
	r, out, _ := run(t, New(1), p, nil)
	assert.Equal(t, r.Status, govern.StatusCompleted)
	assert.Equal(t, out, "judged\n")

	// Swapped after the decision: nothing runs.
	assert.NilError(t, os.WriteFile(script, []byte("echo swapped\n"), 0o755))
	r, out, _ = run(t, New(1), p, nil)
	assert.Equal(t, r.Status, govern.StatusNeverRan)
	assert.Equal(t, r.Reason, govern.ReasonPinMismatch)
	assert.Equal(t, out, "")
}

// An interpreter that is itself a script (a.sh's #! names b.sh) is judged
// bytes too: swapping it after the decision stops the run.
func TestInterpreterScriptPinMismatch(t *testing.T) {
	t.Parallel()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	assert.NilError(t, err)
	interp := filepath.Join(dir, "b.sh")
	assert.NilError(t, os.WriteFile(filepath.Join(dir, "a.sh"), []byte("#!"+interp+"\n"), 0o755))
	assert.NilError(t, os.WriteFile(interp, []byte("#!/bin/sh\necho judged\n"), 0o755))
	a := shell.Analyze(shell.Input{Text: "./a.sh", Dialect: shell.DialectBash, Cwd: dir, InspectionRoots: []string{dir}})
	p := newPlan(t, func(s *spec) {
		s.Cwd, s.WorkspaceRoots = dir, []string{dir}
		s.Command = "./a.sh"
		s.Pins = a.Pins
	})
	r, out, _ := run(t, New(1), p, nil)
	assert.Equal(t, r.Status, govern.StatusCompleted)
	assert.Equal(t, out, "judged\n")

	assert.NilError(t, os.WriteFile(interp, []byte("#!/bin/sh\necho swapped\n"), 0o755))
	r, out, _ = run(t, New(1), p, nil)
	assert.Equal(t, r.Status, govern.StatusNeverRan)
	assert.Equal(t, r.Reason, govern.ReasonPinMismatch)
	assert.Equal(t, out, "")
}

func TestCwdOutsideWorkspace(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	outside := t.TempDir()
	link := filepath.Join(root, "escape")
	assert.NilError(t, os.Symlink(outside, link))
	p := newPlan(t, func(s *spec) { s.Cwd, s.WorkspaceRoots = link, []string{root} })
	r, _, _ := run(t, New(1), p, nil)
	assert.Equal(t, r.Status, govern.StatusNeverRan)
	assert.Equal(t, r.Reason, govern.ReasonCwdOutsideWorkspace)
}

func TestConcurrencyLimit(t *testing.T) {
	t.Parallel()
	e := New(1)
	slow := newPlan(t, func(s *spec) { s.Command = "sleep 1" })
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); e.Run(context.Background(), slow, govern.SandboxNone, nil, nil, nil) }()
	// Wait until the first run holds the slot.
	deadline := time.Now().Add(5 * time.Second)
	for e.slots.Used() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	r := e.Run(context.Background(), newPlan(t, nil), govern.SandboxNone, nil, nil, nil)
	assert.Equal(t, r.Status, govern.StatusNeverRan)
	assert.Equal(t, r.Reason, govern.ReasonConcurrencyLimit)
	wg.Wait()
}

// TestSlotsShared: executors built with the same Slots (the generations
// of one gateway across reloads) share the bound; a lower limit refuses
// new runs while the old ones hold their slots.
func TestSlotsShared(t *testing.T) {
	t.Parallel()
	slots := NewSlots(1)
	first, second := New(1, WithSlots(slots)), New(8, WithSlots(slots))
	slow := newPlan(t, func(s *spec) { s.Command = "sleep 1" })
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); first.Run(context.Background(), slow, govern.SandboxNone, nil, nil, nil) }()
	deadline := time.Now().Add(5 * time.Second)
	for slots.Used() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	r := second.Run(context.Background(), newPlan(t, nil), govern.SandboxNone, nil, nil, nil)
	assert.Equal(t, r.Reason, govern.ReasonConcurrencyLimit)
	slots.SetLimit(2)
	r = second.Run(context.Background(), newPlan(t, nil), govern.SandboxNone, nil, nil, nil)
	assert.Equal(t, r.Status, govern.StatusCompleted)
	wg.Wait()
	assert.Equal(t, slots.Used(), 0)
}

func TestOnlyModeNone(t *testing.T) {
	t.Parallel()
	r := New(1).Run(context.Background(), newPlan(t, nil), govern.SandboxBubblewrap, nil, nil, nil)
	assert.Equal(t, r.Status, govern.StatusFailedToStart)
}

func TestKilledBySignal(t *testing.T) {
	t.Parallel()
	p := newPlan(t, func(s *spec) { s.Command = "kill -KILL $$" })
	r, _, _ := run(t, New(1), p, nil)
	assert.Equal(t, r.Status, govern.StatusKilled)
	assert.Assert(t, r.ExitCode == nil)
}

func TestRunAs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to change user")
	}
	t.Parallel()
	// Every directory on the way must be traversable by the other user.
	base := t.TempDir()
	assert.NilError(t, os.Chmod(filepath.Dir(base), 0o755))
	assert.NilError(t, os.Chmod(base, 0o755))
	dir := filepath.Join(base, "ws")
	assert.NilError(t, os.Mkdir(dir, 0o777))
	assert.NilError(t, os.Chmod(dir, 0o777))
	credDir := filepath.Join(base, "cred")
	p := newPlan(t, func(s *spec) {
		s.Cwd, s.WorkspaceRoots = dir, []string{dir}
		s.RunAs = &plan.User{UID: 65534, GID: 65534, Name: "nobody"}
		s.CredentialFiles, s.CredentialDir = map[string]string{"k": "kid"}, credDir
		s.Command = `id -u; id -g; cat "$MITRITY_CRED_DIR/k"; touch /root/.mitrity-runas-test 2>/dev/null && echo WROTE`
	})
	r, out, errs := run(t, New(1), p, map[string]string{"kid": "value-for-nobody"})
	assert.Equal(t, r.Status, govern.StatusCompleted, "%s %s", errs, r.Message)
	assert.Equal(t, out, "65534\n65534\nvalue-for-nobody")
	_, err := os.Stat("/root/.mitrity-runas-test")
	assert.Check(t, os.IsNotExist(err))
	_, err = plan.New(spec{Shell: "/bin/sh", Dialect: shell.DialectSh, CommandSHA256: "x", Cwd: "/", Timeout: time.Second, OutputMaxBytes: 1, RunAs: &plan.User{UID: 0}})
	assert.ErrorContains(t, err, "never run as root")
}

func TestSpawnError(t *testing.T) {
	t.Parallel()
	p := newPlan(t, func(s *spec) { s.Shell = "/nonexistent/bash" })
	r, _, _ := run(t, New(1), p, nil)
	assert.Equal(t, r.Status, govern.StatusFailedToStart)
	assert.Equal(t, r.Reason, govern.ReasonSpawnError)
}
