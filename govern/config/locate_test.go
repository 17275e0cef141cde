package config

import (
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
)

// TestLocate walks the search order by removing one source at a time.
// t.Setenv and t.Chdir: not parallel.
func TestLocate(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	assert.NilError(t, os.WriteFile(FileName, []byte("{}\n"), 0o600))
	t.Setenv(EnvConfig, "/from/env.yaml")

	path, embedded := Locate("/from/flag.yaml")
	assert.Equal(t, path, "/from/flag.yaml")
	assert.Check(t, !embedded)

	path, embedded = Locate("")
	assert.Equal(t, path, "/from/env.yaml", "the variable, even though ./"+FileName+" exists")
	assert.Check(t, !embedded)

	t.Setenv(EnvConfig, "")
	path, _ = Locate("")
	assert.Equal(t, path, FileName)

	// A file that is there but unreadable is still the config: falling back
	// would swap the operator's file for another.
	assert.NilError(t, os.Remove(FileName))
	assert.NilError(t, os.Symlink(filepath.Join(dir, "loop"), filepath.Join(dir, "loop")))
	assert.NilError(t, os.Symlink("loop", FileName))
	path, _ = Locate("")
	assert.Equal(t, path, FileName)
	assert.NilError(t, os.Remove(FileName))

	path, embedded = Locate("")
	if _, err := os.Stat(SystemPath); err == nil {
		assert.Equal(t, path, SystemPath)
		assert.Check(t, !embedded)
		t.Logf("%s exists on this host; the embedded fallback is not reachable", SystemPath)
		return
	}
	assert.Equal(t, path, "")
	assert.Check(t, embedded)
}

// TestLoadRelativeName: a config found as ./mitrity-gateway.yaml names
// itself that way in errors, as the operator knows it.
func TestLoadRelativeName(t *testing.T) {
	t.Chdir(t.TempDir())
	assert.NilError(t, os.WriteFile(FileName, []byte("exec:\n  enabled: true\n  shell: /bin/zsh\n  default_cwd: /workspace\n"), 0o600))
	path, _ := Locate("")
	_, err := fakeHost(stagedFiles).Load(path)
	assert.Error(t, err, `mitrity-gateway.yaml:3:10: exec.shell: "/bin/zsh": the basename must be bash or sh; zsh is refused because the command analyzer has no grammar for it`)

	_, err = Load("absent.yaml")
	assert.ErrorContains(t, err, "no such file")
}
