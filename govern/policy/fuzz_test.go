package policy

import (
	"errors"
	"github.com/mitrity/mitrity/govern/egress"
	"os"
	"path/filepath"
	"testing"

	"github.com/mitrity/mitrity/govern/yamlfile"
)

// FuzzParse: whatever the bytes, loading a policy never panics, a loaded
// policy resolves every agent to a profile, and a refusal is positioned.
func FuzzParse(f *testing.F) {
	f.Add(DefaultYAML())
	files, _ := filepath.Glob("testdata/*/*.yaml")
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("p.yaml", data)
		if err != nil {
			var errs *yamlfile.Errors
			if !errors.As(err, &errs) || len(errs.List) == 0 {
				t.Fatalf("%T: %v", err, err)
			}
			return
		}
		for id := range p.Agents {
			if _, prof := p.ForAgent(id); prof.Name == "" {
				t.Fatalf("agent %q has no profile", id)
			}
		}
		if _, prof := p.ForAgent("unknown-agent-id"); prof.Name == "" {
			t.Fatal("the default agent has no profile")
		}
		for _, a := range p.Agents {
			for _, d := range a.Destinations {
				if e, err := egress.ParseEntry(d); err != nil || e.String() != d {
					t.Fatalf("canonical %q does not parse: %v", d, err)
				}
			}
		}
	})
}
