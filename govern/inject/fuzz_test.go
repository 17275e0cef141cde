package inject

import (
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzScan: no input panics, every offset points into the text, every
// detail is valid UTF-8, and the scan finishes in bounded time.
func FuzzScan(f *testing.F) {
	for _, name := range []string{"hits", "clean"} {
		for _, c := range loadCorpus(f, name, name == "hits") {
			f.Add(c.text)
		}
	}
	f.Fuzz(func(t *testing.T, text string) {
		start := time.Now()
		got := Scan(text)
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("scan of %d bytes took %v", len(text), d)
		}
		for _, fd := range got {
			if fd.Offset < 0 || fd.Offset > len(text) {
				t.Fatalf("offset %d outside [0, %d]: %+v", fd.Offset, len(text), fd)
			}
			if fd.Kind == "" || fd.Detail == "" || !utf8.ValidString(fd.Detail) {
				t.Fatalf("bad finding %+v", fd)
			}
		}
	})
}
