package inject

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestZZDocs(t *testing.T) {
	roots := strings.Split(os.Getenv("ZZROOTS"), ":")
	n, hit := 0, 0
	for _, root := range roots {
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			if !strings.HasSuffix(p, ".md") && !strings.HasSuffix(p, ".txt") && !strings.HasSuffix(p, ".sh") && !strings.HasSuffix(p, ".yaml") && !strings.HasSuffix(p, ".go") {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil || len(b) > 1<<20 {
				return nil
			}
			n++
			if got := ScanBytes(b); len(got) > 0 {
				hit++
				for _, f := range got {
					s := max(0, f.Offset-40)
					e := min(len(b), f.Offset+80)
					t.Logf("%s: %s %s: %q", p, f.Kind, f.Detail, string(b[s:e]))
				}
			}
			return nil
		})
	}
	t.Logf("%d of %d files", hit, n)
}
