package e2e

import (
	"os"
	"path/filepath"
	"testing"
)

// binPath returns the absolute path of the named binary under test (for
// example "mitrity-gateway"), failing the test if it is not an executable file.
func binPath(t testing.TB, name string) string {
	t.Helper()
	if binDir == "" {
		t.Fatal("binPath called outside TestMain's setup")
	}
	p := filepath.Join(binDir, name)
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatalf("binary %s: %v (run make build, or unset MITRITY_BIN to build into a temporary directory)", name, err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		t.Fatalf("binary %s is not an executable file (mode %v)", p, fi.Mode())
	}
	return p
}
