package shell

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzAnalyze feeds arbitrary text to the analyzer: it must never panic,
// must finish quickly, and must return either a tree or a denial.
func FuzzAnalyze(f *testing.F) {
	for _, cases := range loadCorpus(f) {
		for _, c := range cases {
			f.Add(c.Cmd, c.Dialect == "sh")
		}
	}
	dir := f.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x.sh"), []byte("#!/bin/sh\n. ./x.sh\nbash -c 'eval \"$1\"' _ id\n"), 0o755); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string, sh bool) {
		d := DialectBash
		if sh {
			d = DialectSh
		}
		start := time.Now()
		a := Analyze(Input{Text: text, Dialect: d, Cwd: dir, Path: []string{"/usr/bin", "/bin"}, InspectionRoots: []string{dir}, WritableRoots: []string{dir}})
		if a == nil {
			t.Fatal("nil analysis")
		}
		if a.Denial == nil && a.SHA256 == "" {
			t.Fatal("no denial and no judged text hash")
		}
		if a.Denial != nil && a.Denial.Reason == "" {
			t.Fatal("denial without a reason")
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("analysis took %v", d)
		}
	})
}
