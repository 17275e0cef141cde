package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mitrity/mitrity/govern"
)

// TestPinLinks: a pin named through a symbolic link inside a workspace
// root is refused (the run could re-point it); links outside the roots,
// which the run cannot change, are followed.
func TestPinLinks(t *testing.T) {
	base := t.TempDir()
	ws := filepath.Join(base, "ws")
	for _, d := range []string{"ws/d/sub", "host/bin"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"ws/d/s.sh", "ws/d/sub/t.sh", "host/bin/tool.sh"} {
		if err := os.WriteFile(filepath.Join(base, f), []byte("echo\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"ws/L":          "d",                         // a directory link in the root
		"ws/run.sh":     "d/s.sh",                    // a file link in the root
		"ws/d/up":       "..",                        // deeper in the root
		"ws/host":       filepath.Join(base, "host"), // in the root, pointing out
		"wslink":        "ws",                        // the root reached through a link outside it
		"host/bin/t.sh": filepath.Join(ws, "d/sub/t.sh"),
	} {
		if err := os.Symlink(target, filepath.Join(base, link)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		path string
		link string // the link named in the refusal; "" allowed
	}{
		{"ws/d/s.sh", ""},
		{"ws/d/sub/t.sh", ""},
		{"wslink/d/s.sh", ""},
		{"host/bin/tool.sh", ""},
		{"host/bin/t.sh", ""}, // a link outside the root into it: the run cannot change it
		{"ws/L/s.sh", "ws/L"},
		{"ws/run.sh", "ws/run.sh"},
		{"ws/d/up/d/s.sh", "ws/d/up"},
		{"ws/host/bin/tool.sh", "ws/host"},
		{"wslink/L/s.sh", "ws/L"},
		{"ws/gone/s.sh", ""}, // nothing there: nothing is bound, nothing to refuse
	} {
		t.Run(c.path, func(t *testing.T) {
			err := pinLinks([]govern.Pin{{Path: filepath.Join(base, c.path)}}, []string{ws})
			switch {
			case c.link == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.link != "" && (err == nil || !strings.Contains(err.Error(), "symbolic link "+filepath.Join(base, c.link)+",")):
				t.Errorf("got %v, want a refusal naming the link %s", err, c.link)
			}
		})
	}
}
