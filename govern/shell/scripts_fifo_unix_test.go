//go:build unix

package shell

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"
)

// A named pipe in an inspection root, named like a script: a sandboxed
// command can make one in the workspace (mkfifo needs no privilege), and
// opening it for reading waits for a writer. The analysis must not wait:
// before, `bash ./x.sh` held the gateway's decision (and a one-shot
// `mitrity-gateway exec`, past SIGTERM) for as long as no one wrote.
func TestScriptFIFONotOpenedBlocking(t *testing.T) {
	t.Parallel()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	assert.NilError(t, err)
	assert.NilError(t, syscall.Mkfifo(filepath.Join(dir, "x.sh"), 0o644))
	done := make(chan *Analysis, 1)
	go func() {
		done <- Analyze(Input{Text: "bash ./x.sh", Dialect: DialectBash, Cwd: dir, Path: []string{"/usr/bin", "/bin"},
			Home: "/home/agent", InspectionRoots: []string{dir}, WritableRoots: []string{dir}})
	}()
	select {
	case a := <-done:
		found := false
		for _, f := range a.Flags {
			if f.Kind == FlagScriptNotInspected && strings.Contains(f.Detail, "not a regular file") {
				found = true
			}
		}
		assert.Check(t, found, "flags: %+v", a.Flags)
		assert.Check(t, len(a.Pins) == 0, "a pipe was pinned: %+v", a.Pins)
	case <-time.After(10 * time.Second):
		t.Fatal("the analysis is still waiting on the named pipe after 10s")
	}
}
