package govern

import (
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
)

// TestMakeRuntimeDir: root's runtime directory is traversable by others
// whichever part of the gateway made it first (a 0700 one gets its search
// bits back, nothing more); a user's stays private; one writable by
// others or not a directory is refused.
func TestMakeRuntimeDir(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("root's runtime directory: needs root (CI runs as root)")
	}
	for _, tc := range []struct {
		name   string
		euid   int
		before os.FileMode // 0: missing
		want   os.FileMode
		err    string
	}{
		{name: "root, missing", euid: 0, want: 0o711},
		{name: "root, made 0700 by the live register first", euid: 0, before: 0o700, want: 0o711},
		{name: "root, 0750 kept but traversable", euid: 0, before: 0o750, want: 0o751},
		{name: "root, 0711 unchanged", euid: 0, before: 0o711, want: 0o711},
		{name: "root, writable by others", euid: 0, before: 0o777, want: 0o777, err: "writable by others"},
		{name: "root, another user's", euid: 1, before: 0o700, want: 0o700, err: "belongs to uid 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "mitrity")
			if tc.before != 0 {
				assert.NilError(t, os.Mkdir(dir, 0o700))
				assert.NilError(t, os.Chmod(dir, tc.before))
			}
			err := makeRuntimeDir(dir, tc.euid)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
			} else {
				assert.NilError(t, err)
			}
			fi, err := os.Lstat(dir)
			assert.NilError(t, err)
			assert.Equal(t, fi.Mode().Perm(), tc.want)
		})
	}
	t.Run("not a directory", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "mitrity")
		assert.NilError(t, os.WriteFile(f, nil, 0o600))
		assert.ErrorContains(t, makeRuntimeDir(f, 0), "not a directory")
	})
}
