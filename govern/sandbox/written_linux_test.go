package sandbox

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestReadChanged: what the search opens is a regular file beneath the
// root, read up to its bound, whatever a concurrent run swapped in after
// the walk saw a regular file: a FIFO does not block it, a device is not
// read, a symbolic link (to a file, a directory or /dev/zero) is not
// followed.
func TestReadChanged(t *testing.T) {
	root := t.TempDir()
	out := t.TempDir()
	write := func(dir, name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(root, "plain", "hello")
	write(root, "big", "0123456789")
	write(out, "secret", "outside")
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		"to-fifo":   "fifo",
		"to-zero":   "/dev/zero",
		"to-plain":  "plain",
		"to-out":    filepath.Join(out, "secret"),
		"dir-out":   out,
		"dir-local": ".",
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		want string // "" refused
	}{
		{"plain", "hello"},
		{"big", ""}, // over the bound of 8 given below
		{"fifo", ""},
		{"to-fifo", ""},
		{"to-zero", ""},
		{"to-plain", ""},
		{"to-out", ""},
		{"dir-out/secret", ""},
		{"dir-local/plain", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			done := make(chan struct{})
			var got []byte
			var err error
			go func() {
				got, err = readChanged(root, filepath.Join(root, c.name), nil, 8)
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("readChanged blocked")
			}
			if c.want == "" && err == nil {
				t.Errorf("read %q, want a refusal", got)
			}
			if c.want != "" && (err != nil || string(got) != c.want) {
				t.Errorf("got %q, %v; want %q", got, err, c.want)
			}
		})
	}
}
