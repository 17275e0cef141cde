package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern"
)

// goneProcess returns the pid of a process that has exited and been
// reaped: an owner that died.
func goneProcess(t *testing.T) int {
	t.Helper()
	c := exec.Command("/bin/true")
	assert.NilError(t, c.Run())
	return c.Process.Pid
}

// started starts argv and returns it with a channel that yields how it
// ended; the test kills what is left at its end.
func started(t *testing.T, argv ...string) (*exec.Cmd, <-chan *os.ProcessState) {
	t.Helper()
	c := exec.Command(argv[0], argv[1:]...)
	assert.NilError(t, c.Start())
	ended := make(chan *os.ProcessState, 1)
	go func() {
		c.Wait()
		ended <- c.ProcessState
	}()
	t.Cleanup(func() { c.Process.Kill() })
	return c, ended
}

// killedBySweep reports whether the process ended by SIGKILL within a
// second (false: it still runs).
func killedBySweep(ended <-chan *os.ProcessState) bool {
	select {
	case st := <-ended:
		ws, ok := st.Sys().(syscall.WaitStatus)
		return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
	case <-time.After(time.Second):
		return false
	}
}

// TestSweepEndsOrphans: a register entry whose supervisor died has what
// is left of its sandbox killed by the next sweep (every run's
// registration, a gateway whose helper died): the first process by its
// recorded pid, and bubblewrap's processes by the run's mark on their
// command line, which is all there is when the supervisor died before it
// learnt the pid (bubblewrap's first process blocked in its setup). An
// entry whose supervisor lives, a reused pid, another run's mark: nothing
// is killed.
func TestSweepEndsOrphans(t *testing.T) {
	requireSandbox(t)
	bwrap, err := findBwrap("")
	assert.NilError(t, err)
	const id, otherID = "f00dfeedf00dfeed", "0123456789abcdef"
	tests := []struct {
		name      string
		ownerDies bool
		mark      string // a bubblewrap carrying this mark; "": a plain sleep
		record    bool   // the entry holds the process's pid
		reused    bool   // ... with another start time
		killed    bool
	}{
		{name: "owner dead, sandbox starting, found by its mark", ownerDies: true, mark: id, killed: true},
		{name: "owner dead, first process recorded", ownerDies: true, record: true, killed: true},
		{name: "owner dead, recorded pid reused", ownerDies: true, record: true, reused: true},
		{name: "owner dead, another run's mark", ownerDies: true, mark: otherID},
		{name: "owner alive", mark: id},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "live")
			assert.NilError(t, openLive(dir))
			argv := []string{"/bin/sleep", "60"}
			if tc.mark != "" {
				// A real bubblewrap carrying a mark the way the supervisor
				// starts it (its first process, a clone, shows the same
				// command line), whose outer process is then killed: its
				// first process is left, as after bubblewrap's setup window.
				argv = []string{bwrap, "--unshare-user", "--unshare-pid", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
					"--setenv", runMarkEnv, tc.mark, "--", "/bin/sleep", "60"}
			}
			c, ended := started(t, argv...)
			if tc.mark != "" {
				t.Cleanup(func() {
					for _, pid := range markedBwraps(tc.mark) {
						syscall.Kill(pid, syscall.SIGKILL)
					}
					waitFor(t, func() bool { return len(markedBwraps(tc.mark)) == 0 })
				})
				waitFor(t, func() bool { return len(markedBwraps(tc.mark)) == 2 })
				c.Process.Kill()
				<-ended
				assert.Check(t, is.Len(markedBwraps(tc.mark), 1), "the orphaned first process")
			}
			e := liveEntry{ID: id, Owner: os.Getpid()}
			if tc.ownerDies {
				e.Owner = goneProcess(t)
			}
			if tc.record {
				st, err := startTime(c.Process.Pid)
				assert.NilError(t, err)
				e.Pid, e.Start = c.Process.Pid, st
				if tc.reused {
					e.Start = st - 1
				}
			}
			b, err := json.Marshal(e)
			assert.NilError(t, err)
			entry := filepath.Join(dir, id+".json")
			assert.NilError(t, os.WriteFile(entry, b, 0o600))

			assert.NilError(t, sweepLive(dir))
			if tc.mark == "" {
				assert.Check(t, is.Equal(killedBySweep(ended), tc.killed))
			} else {
				assert.Check(t, is.Equal(markGone(tc.mark), tc.killed))
			}
			_, err = os.Stat(entry)
			assert.Check(t, is.Equal(os.IsNotExist(err), tc.ownerDies), "entry removed")
		})
	}
}

// markGone reports whether no process carries mark within a second.
func markGone(mark string) bool {
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if len(markedBwraps(mark)) == 0 {
			return true
		}
	}
	return false
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
	}
}

// TestPinHeldOnceOtherRunIsSetUp: a run that pins a script another run
// can write holds the pin inside that run. When that run is still being
// set up (here its first process is stopped, recorded but before it forked
// init), the pinning run waits for it instead of entering a half-built
// mount namespace, and both runs complete.
func TestPinHeldOnceOtherRunIsSetUp(t *testing.T) {
	requireSandbox(t)
	ws := workspace(t)
	judged := []byte("echo JUDGED\n")
	script := filepath.Join(ws, "x.sh")
	assert.NilError(t, os.WriteFile(script, judged, 0o755))
	sum := sha256.Sum256(judged)
	helper := selfExe(t)
	exercised := false
	for attempt := 0; attempt < 10 && !exercised; attempt++ {
		live := filepath.Join(t.TempDir(), "live")
		run := func(s *Spec) runOut {
			return captured(t, func(st Stdio) Result {
				return Run(context.Background(), s, st, WithHelper(helper), WithLiveDir(live))
			})
		}
		aDone := make(chan runOut, 1)
		go func() { aDone <- run(shellSpec(ws, `sleep 0.5; echo A`)) }()
		// Stop A's first process as soon as it is recorded.
		var pid int
		for deadline := time.Now().Add(5 * time.Second); pid == 0; {
			for _, e := range readLive(live, false) {
				pid = e.Pid
			}
			if time.Now().After(deadline) {
				t.Fatal("the first run never recorded its first process")
			}
		}
		syscall.Kill(pid, syscall.SIGSTOP)
		exercised = !hasChild(pid)
		go func() {
			time.Sleep(300 * time.Millisecond)
			syscall.Kill(pid, syscall.SIGCONT)
		}()
		b := shellSpec(ws, `bash x.sh`)
		b.Pins = []govern.Pin{{Path: script, RealPath: script, SHA256: hex.EncodeToString(sum[:]), Bytes: judged}}
		rb := run(b)
		assert.Check(t, is.Equal(rb.Status, govern.StatusCompleted), rb.Message)
		assert.Check(t, is.Equal(rb.stdout, "JUDGED\n"))
		ra := <-aDone
		assert.Check(t, is.Equal(ra.Status, govern.StatusCompleted), ra.Message)
		assert.Check(t, is.Equal(ra.stdout, "A\n"))
	}
	assert.Check(t, exercised, "the first run's first process had always forked init when it was stopped: the wait was never exercised")
}
