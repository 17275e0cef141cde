package regfile

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"
)

func TestOpen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	reg, fifo, link := filepath.Join(dir, "f"), filepath.Join(dir, "p"), filepath.Join(dir, "l")
	assert.NilError(t, os.WriteFile(reg, []byte("x"), 0o600))
	assert.NilError(t, syscall.Mkfifo(fifo, 0o600))
	assert.NilError(t, os.Symlink(reg, link))
	for _, p := range []string{reg, link} {
		f, err := Open(p)
		assert.NilError(t, err)
		f.Close()
	}
	for p, want := range map[string]string{fifo: "not a regular file (a named pipe)", dir: "not a regular file (a directory)"} {
		done := make(chan error, 1)
		go func() { _, err := Open(p); done <- err }()
		select {
		case err := <-done:
			assert.ErrorContains(t, err, p+": "+want)
		case <-time.After(5 * time.Second):
			t.Fatalf("Open(%s) still waiting after 5s", p)
		}
	}
}
