package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern"
)

// TestSetupStallBounded: bubblewrap that never finishes setting the sandbox
// up (a hung mount, a wedged file system: here a stand-in that never
// reports its child) is held to the run's timeout and to cancellation like
// any other run. Before, the supervisor waited for bubblewrap's report
// before it started the clock and without looking at the context: such a
// run never ended. After: it ends at the timeout or the cancellation, says
// why, and the stalled process is gone from the host.
func TestSetupStallBounded(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cancel  bool
		message string
	}{
		{"timeout", false, "expired while bubblewrap was setting the sandbox up"},
		{"cancelled", true, "cancelled while bubblewrap was setting the sandbox up"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			pidFile := filepath.Join(dir, "pid")
			stall := filepath.Join(dir, "bwrap")
			assert.NilError(t, os.WriteFile(stall, []byte("#!/bin/sh\necho $$ > "+pidFile+"\nexec sleep 120\n"), 0o755))
			s := shellSpec(workspace(t), "echo never")
			s.Bwrap = Bwrap{Path: stall, Version: "0.8.0"}
			s.TimeoutMS, s.KillGraceMS = 800, 200
			if tc.cancel {
				s.TimeoutMS = 60000
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel {
				time.AfterFunc(500*time.Millisecond, cancel)
			}
			done := make(chan runOut, 1)
			go func() { done <- runIn(t, ctx, s) }()
			var r runOut
			select {
			case r = <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the run did not end: the supervisor waits on a stalled bubblewrap")
			}
			assert.Check(t, is.Equal(r.Status, govern.StatusFailedToStart), r.Message)
			assert.Check(t, is.Equal(r.Reason, govern.ReasonSpawnError))
			assert.Check(t, is.Contains(r.Message, tc.message))
			assert.Check(t, r.SandboxMode == 0, "a run that never started stamps no sandbox mode: %v", r.SandboxMode)
			assert.Check(t, !strings.Contains(r.stdout, "never"))
			raw, err := os.ReadFile(pidFile)
			assert.NilError(t, err, "the stand-in never ran")
			pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
			assert.NilError(t, err)
			_, err = os.Stat("/proc/" + strconv.Itoa(pid))
			assert.Check(t, os.IsNotExist(err), "the stalled bubblewrap (pid %d) survived the run", pid)
		})
	}
}
