package sandbox

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"gotest.tools/v3/assert"
)

// TestProbeCached: a full-strength report is remembered and reused; a
// forged or foreign cache file is never believed.
func TestProbeCached(t *testing.T) {
	requireSandbox(t)
	dir := t.TempDir()
	helper := selfExe(t)
	first := ProbeCached(context.Background(), dir, time.Minute, WithHelper(helper))
	assert.Assert(t, first.FullStrength, "%+v", first)
	files, _ := filepath.Glob(filepath.Join(dir, "probe", "*.json"))
	assert.Equal(t, len(files), 1)

	// A planted report naming another bwrap is not used: the path must be
	// the one found now.
	var c cachedProbe
	b, err := os.ReadFile(files[0])
	assert.NilError(t, err)
	assert.NilError(t, json.Unmarshal(b, &c))
	c.Report.BwrapPath = "/tmp/evil-bwrap"
	b, _ = json.Marshal(c)
	assert.NilError(t, os.WriteFile(files[0], b, 0o600))
	again := ProbeCached(context.Background(), dir, time.Minute, WithHelper(helper))
	assert.Assert(t, again.BwrapPath != "/tmp/evil-bwrap")

	// A cache file others can write is ignored.
	assert.NilError(t, os.WriteFile(files[0], b, 0o666))
	assert.NilError(t, os.Chmod(files[0], 0o666))
	_, ok := readProbeCache(filepath.Join(dir, "probe"), files[0])
	assert.Assert(t, !ok)

	// An expired one is probed again.
	c.Report.BwrapPath, c.Expires = first.BwrapPath, time.Now().Add(-time.Second)
	b, _ = json.Marshal(c)
	assert.NilError(t, os.Remove(files[0]))
	assert.NilError(t, os.WriteFile(files[0], b, 0o600))
	_, ok = readProbeCache(filepath.Join(dir, "probe"), files[0])
	assert.Assert(t, ok)
	r := ProbeCached(context.Background(), dir, time.Minute, WithHelper(helper))
	assert.Assert(t, r.FullStrength)
	c2, _ := readProbeCache(filepath.Join(dir, "probe"), files[0])
	assert.Assert(t, c2.Expires.After(time.Now()), "re-probed and re-cached")
}
