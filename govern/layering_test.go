package govern_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The layering, checked on the import graph as `go list` reports it, so
// that a new import that breaks it fails here rather than in review:
// dependencies point inward, to the vocabulary; the leaves that judge
// (the analyzer, the policy, the rules, the plan, the audit record) never
// reach what runs or serves; the analyzer opens no socket and starts no
// process.

const module = "github.com/mitrity/mitrity/govern"

type pkg struct {
	imports  []string
	standard bool
}

// importGraph is every package of this module and what it depends on.
func importGraph(t *testing.T) map[string]pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}|{{join .Imports \",\"}}|{{.Standard}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	g := map[string]pkg{}
	for line := range strings.Lines(string(out)) {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) != 3 {
			t.Fatalf("go list line %q", line)
		}
		var imps []string
		if f[1] != "" {
			imps = strings.Split(f[1], ",")
		}
		g[f[0]] = pkg{imports: imps, standard: f[2] == "true"}
	}
	if _, ok := g[module+"/shell"]; !ok {
		t.Fatalf("go list did not list %s/shell", module)
	}
	return g
}

// closure is p and everything it depends on.
func closure(g map[string]pkg, p string) []string {
	seen := map[string]bool{}
	var walk func(string)
	walk = func(p string) {
		if seen[p] {
			return
		}
		seen[p] = true
		for _, i := range g[p].imports {
			walk(i)
		}
	}
	walk(p)
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

func TestLayering(t *testing.T) {
	g := importGraph(t)
	ours := func(p string) bool { return p == module || strings.HasPrefix(p, module+"/") }

	t.Run("the vocabulary is standard library only", func(t *testing.T) {
		for _, d := range closure(g, module) {
			if d != module && !g[d].standard {
				t.Errorf("%s depends on %s", module, d)
			}
		}
	})
	t.Run("the analyzer opens no socket and starts no process", func(t *testing.T) {
		for _, d := range closure(g, module+"/shell") {
			if d == "net" || strings.HasPrefix(d, "net/") {
				t.Errorf("govern/shell depends on %s", d)
			}
			// mvdan.cc/sh's internal package imports os/exec for a
			// helper the analyzer never calls; no package of ours on
			// the analyzer's path may.
			if ours(d) && slices.ContainsFunc(g[d].imports, func(i string) bool { return i == "os/exec" || i == "os/signal" || i == "net" }) {
				t.Errorf("%s (on the analyzer's path) imports os/exec, os/signal or net", d)
			}
		}
	})
	// What judges never reaches what runs, serves or records.
	middle := []string{"/service", "/executor", "/sandbox", "/mcpserver", "/notify", "/metrics", "/ticket"}
	for _, leaf := range []string{"/shell", "/policy", "/rules", "/plan", "/config", "/dlp", "/secretscan", "/inject", "/intel", "/egress", "/audit", "/pipeline", "/schema"} {
		t.Run("govern"+leaf+" reaches nothing that runs or serves", func(t *testing.T) {
			for _, d := range closure(g, module+leaf) {
				for _, m := range middle {
					if d == module+m || strings.HasPrefix(d, module+m+"/") {
						t.Errorf("govern%s depends on %s", leaf, strings.TrimPrefix(d, module+"/"))
					}
				}
			}
		})
	}
	t.Run("nothing in govern imports a binary", func(t *testing.T) {
		for p, k := range g {
			if !ours(p) {
				continue
			}
			for _, i := range k.imports {
				if strings.HasPrefix(i, "github.com/mitrity/mitrity/") && !ours(i) && !strings.HasPrefix(i, "github.com/mitrity/mitrity/admission") {
					t.Errorf("%s imports %s", p, i)
				}
			}
		}
	})
}
