package sandbox

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern"
)

// spawnIn runs s through Spawn with the test binary as mitrity-sandboxrun.
func spawnIn(t *testing.T, ctx context.Context, s *Spec) runOut {
	t.Helper()
	return captured(t, func(stdio Stdio) Result { return Spawn(ctx, selfExe(t), s, stdio) })
}

// TestSpawn: a run in a helper of its own gives the result the in-process
// run gives, and the helper's descriptors (the spec in, the result out)
// never reach the command: it cannot write the gateway a result.
func TestSpawn(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	s := shellSpec(workspace(t), `echo out; echo err >&2; { echo '{"status":"completed","exit_code":0}' >&4; } 2>/dev/null && echo forged; { echo '{}' >&3; } 2>/dev/null && echo forged3; exit 7`)
	r := spawnIn(t, context.Background(), s)
	assert.Check(t, is.Equal(r.Status, govern.StatusCompleted), r.Message)
	assert.Assert(t, r.ExitCode != nil)
	assert.Check(t, is.Equal(*r.ExitCode, 7))
	assert.Check(t, is.Equal(r.stdout, "out\n"))
	assert.Check(t, is.Equal(r.stderr, "err\n"))
	assert.Check(t, r.SandboxMode.Valid())
	assert.Check(t, r.DurationMS > 0)
}

// TestSpawnCancelled: cancelling the context ends the run as cancelled
// (SIGTERM to the helper), and nothing of it is left on the host.
func TestSpawnCancelled(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	m := "spawn-cancel-" + strconv.Itoa(os.Getpid())
	s := shellSpec(workspace(t), `exec -a `+m+` sleep 60`)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(700*time.Millisecond, cancel)
	r := spawnIn(t, ctx, s)
	assert.Check(t, is.Equal(r.Status, govern.StatusKilled), r.Message)
	assert.Check(t, is.Contains(r.Message, "cancelled"))
	assert.Check(t, is.Len(processesNamed(t, m), 0))
}

// TestSpawnHelperKilled: a helper that dies mid-run (a supervisor crash)
// takes the sandbox with it, and the result says the helper ended without
// one; no process of the run survives on the host.
func TestSpawnHelperKilled(t *testing.T) {
	requireSandbox(t)
	m := "spawn-crash-" + strconv.Itoa(os.Getpid())
	s := shellSpec(workspace(t), `exec -a `+m+` sleep 60`)
	done := make(chan runOut, 1)
	go func() { done <- spawnIn(t, context.Background(), s) }()
	deadline := time.Now().Add(10 * time.Second)
	for len(processesNamed(t, m)) == 0 {
		assert.Assert(t, time.Now().Before(deadline), "the command never started")
		time.Sleep(20 * time.Millisecond)
	}
	helpers := 0
	for _, pid := range childrenOf(os.Getpid()) {
		if cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); strings.Contains(string(cmd), "--spec-fd") {
			assert.NilError(t, syscall.Kill(pid, syscall.SIGKILL))
			helpers++
		}
	}
	assert.Assert(t, is.Equal(helpers, 1))
	r := <-done
	assert.Check(t, is.Equal(r.Status, govern.StatusKilled), r.Message)
	assert.Check(t, is.Equal(r.Reason, govern.ReasonSpawnError))
	assert.Check(t, is.Contains(r.Message, "ended without a result"))
	for deadline := time.Now().Add(5 * time.Second); len(processesNamed(t, m)) > 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	assert.Check(t, is.Len(processesNamed(t, m), 0), "the run outlived its helper")
}

// TestSpawnNoHelper: a helper that cannot be started is a refusal before
// anything ran.
func TestSpawnNoHelper(t *testing.T) {
	t.Parallel()
	r := Spawn(context.Background(), "/nonexistent/mitrity-sandboxrun", shellSpec(t.TempDir(), "true"), Stdio{})
	assert.Check(t, is.Equal(r.Status, govern.StatusFailedToStart))
	assert.Check(t, is.Equal(r.Reason, govern.ReasonSpawnError))
	assert.Check(t, is.Contains(r.Message, "/nonexistent/mitrity-sandboxrun"))
}

// hostProcesses returns the pids of the processes this pid namespace's
// /proc shows whose entry in it (the directory) passes keep.
func hostProcesses(t *testing.T, keep func(dir string) bool) []int {
	t.Helper()
	var out []int
	entries, err := os.ReadDir("/proc")
	assert.NilError(t, err)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err == nil && keep("/proc/"+e.Name()) {
			out = append(out, pid)
		}
	}
	return out
}

// processesNamed lists the host's processes whose argv[0] is name.
func processesNamed(t *testing.T, name string) []int {
	t.Helper()
	return hostProcesses(t, func(dir string) bool {
		b, _ := os.ReadFile(dir + "/cmdline")
		a0, _, _ := strings.Cut(string(b), "\x00")
		return a0 == name
	})
}

// childrenOf lists the direct children of pid.
func childrenOf(pid int) []int {
	var out []int
	for _, d := range descendants(pid) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(d) + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			out = append(out, d)
		}
	}
	return out
}

// TestHelperKilledDuringSetup: a helper killed at any moment of a run's
// start (here every millisecond from 0 to 39 after it was spawned), which
// is what a SIGKILLed gateway does to the runs it is starting, leaves no
// process of the run on the host. bubblewrap arms the sandbox's
// parent-death signal only when its setup is done; a helper killed during
// the setup left the command to run as an orphan (5-8 of the 40 here)
// until init learnt to check, right before it execs, that pid 1 is armed
// and that bubblewrap's outer process is still there (the lifeline).
func TestHelperKilledDuringSetup(t *testing.T) {
	requireSandbox(t)
	m := "spawn-setup-" + strconv.Itoa(os.Getpid())
	s := shellSpec(workspace(t), `exec -a `+m+` sleep 60`)
	for delay := range 40 {
		done := make(chan runOut, 1)
		go func() { done <- spawnIn(t, context.Background(), s) }()
		time.Sleep(time.Duration(delay) * time.Millisecond)
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
			killed := false
			for _, pid := range childrenOf(os.Getpid()) {
				if cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); strings.Contains(string(cmd), "--spec-fd") {
					syscall.Kill(pid, syscall.SIGKILL)
					killed = true
				}
			}
			if killed || time.Now().After(deadline) {
				break
			}
		}
		<-done
	}
	var left []int
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if left = processesNamed(t, m); len(left) == 0 {
			break
		}
	}
	for _, pid := range left {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	assert.Check(t, is.Len(left, 0), "runs outlived their helper: %v", left)
	// Nor is bubblewrap's first process left, blocked in its setup where
	// its outer process died (in 2 of the 40 before the helper's end was
	// followed by a sweep of the register).
	var orphans []int
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if orphans = orphanedBwraps(t); len(orphans) == 0 {
			break
		}
	}
	for _, pid := range orphans {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	assert.Check(t, is.Len(orphans, 0), "bubblewrap's first processes outlived their helper: %v", orphans)
}

// orphanedBwraps returns the sandboxes' first processes (bubblewrap, in a
// pid namespace below this one, with a run's mark) whose parent is not
// bubblewrap's outer process of the same run: of any test, which each end
// by their own sweep.
func orphanedBwraps(t *testing.T) []int {
	t.Helper()
	mark := func(dir string) string {
		b, _ := os.ReadFile(dir + "/cmdline")
		return runMark(b)
	}
	return hostProcesses(t, func(dir string) bool {
		m := mark(dir)
		if m == "" {
			return false
		}
		status, _ := os.ReadFile(dir + "/status")
		var ppid string
		nested := false
		for _, line := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "PPid:"); ok {
				ppid = strings.TrimSpace(v)
			}
			if v, ok := strings.CutPrefix(line, "NSpid:"); ok {
				nested = len(strings.Fields(v)) > 1
			}
		}
		return nested && mark("/proc/"+ppid) != m
	})
}
