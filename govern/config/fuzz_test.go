package config

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/mitrity/mitrity/govern/yamlfile"
)

// FuzzLoad: whatever the bytes, loading never panics, and a refusal is
// always the positioned *yamlfile.Errors an operator can read.
func FuzzLoad(f *testing.F) {
	f.Add(DefaultYAML())
	files, _ := filepath.Glob("testdata/*/*.yaml")
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("a: &a [*a, *a]\n"))
	f.Add([]byte("exec: {<<: {enabled: true}}\n"))
	f.Add([]byte("\xff\xfe"))
	l := fakeHost(stagedFiles)
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := l.Parse("/etc/mitrity/f.yaml", data)
		if err == nil {
			if c == nil {
				t.Fatal("nil config without an error")
			}
			if verr := l.Validate(c); verr != nil {
				t.Fatalf("a loaded config does not validate: %v", verr)
			}
			return
		}
		var errs *yamlfile.Errors
		if !errors.As(err, &errs) || len(errs.List) == 0 {
			t.Fatalf("%T: %v", err, err)
		}
		for _, fe := range errs.List {
			if fe.File != "/etc/mitrity/f.yaml" || fe.Msg == "" {
				t.Fatalf("unpositioned problem %#v", fe)
			}
		}
	})
}
