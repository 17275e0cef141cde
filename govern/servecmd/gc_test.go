package servecmd

import (
	"os"
	"runtime/debug"
	"testing"

	"gotest.tools/v3/assert"
)

// TestTuneGC: a serving process gets serveGCPercent unless the operator
// set GOGC, which is then left as the runtime read it.
func TestTuneGC(t *testing.T) {
	orig := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(orig) })

	t.Setenv("GOGC", "")
	os.Unsetenv("GOGC")
	tuneGC()
	assert.Equal(t, debug.SetGCPercent(100), serveGCPercent)

	t.Setenv("GOGC", "100")
	tuneGC()
	assert.Equal(t, debug.SetGCPercent(100), 100, "an operator's GOGC is kept")
}
