//go:build unix

package egress

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
)

// A SIGKILLed gateway cannot remove its runs' socket directories; the next
// gateway sweeps them, and touches nothing else.
func TestSweepStaleDirs(t *testing.T) {
	tmp := t.TempDir()
	dead := exec.Command("true")
	assert.NilError(t, dead.Run())
	deadPid := dead.Process.Pid
	mk := func(name string, extra string) string {
		d := filepath.Join(tmp, name)
		assert.NilError(t, os.Mkdir(d, 0o700))
		ln, err := listenPrivate(d)
		assert.NilError(t, err)
		ln.Close()
		if extra != "" {
			assert.NilError(t, os.WriteFile(filepath.Join(d, extra), nil, 0o600))
		}
		return d
	}
	stale := mk(fmt.Sprintf("mitrity-egress-%d-1", deadPid), "")
	live := mk(fmt.Sprintf("mitrity-egress-%d-2", os.Getppid()), "")
	mine := mk(fmt.Sprintf("mitrity-egress-%d-3", os.Getpid()), "")
	other := mk(fmt.Sprintf("mitrity-egress-%d-4", deadPid), "notes.txt")
	open := mk(fmt.Sprintf("mitrity-egress-%d-5", deadPid), "")
	assert.NilError(t, os.Chmod(open, 0o755))
	sweepStaleDirs(tmp)
	_, err := os.Stat(stale)
	assert.Check(t, os.IsNotExist(err), "a dead gateway's directory was kept")
	for _, d := range []string{live, mine, other, open} {
		_, err := os.Stat(d)
		assert.Check(t, err, "%s was swept", d)
	}
}
