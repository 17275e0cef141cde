package govern_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// The module graph, checked against the one README.md documents (the table
// under "Layout"): which of this repository's modules each module imports,
// by `go list -deps -test` (what its code and tests import), and which its
// go.mod requires, each with the replace that points it at its folder so
// that the module builds outside the workspace too. A new edge fails here
// with the edge named, rather than in review.

const repo = "github.com/mitrity/mitrity"

// documentedGraph reads README.md's table of module dependencies.
func documentedGraph(t *testing.T, readme string) (graph map[string][]string, stdlibOnly []string) {
	t.Helper()
	_, table, ok := strings.Cut(readme, "| module | imports of this repository's modules |")
	assert.Assert(t, ok, "README.md has no table of module dependencies")
	graph = map[string][]string{}
	for _, line := range strings.Split(table, "\n")[2:] {
		if !strings.HasPrefix(line, "| `") {
			break
		}
		cells := strings.Split(line, "|")
		mod := strings.Trim(strings.TrimSpace(cells[1]), "`")
		deps := []string{}
		for _, f := range strings.Split(cells[2], "`") {
			// The cell lists modules in backquotes; words between them
			// are prose.
			if f = strings.TrimSpace(f); f != "" && !strings.ContainsAny(f, " ,:") && f != "none" {
				deps = append(deps, f)
			}
		}
		slices.Sort(deps)
		graph[mod] = deps
		if strings.Contains(cells[2], "nothing outside the standard library") {
			stdlibOnly = append(stdlibOnly, mod)
		}
	}
	return graph, stdlibOnly
}

func goCmd(t *testing.T, dir string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if ee, ok := err.(*exec.ExitError); ok {
		t.Fatalf("go %v in %s: %v\n%s", args, dir, err, ee.Stderr)
	}
	assert.NilError(t, err)
	return out
}

// ours maps this repository's module paths to their folder names.
func ours(lines []byte) []string {
	var out []string
	for l := range strings.Lines(string(lines)) {
		if m, ok := strings.CutPrefix(strings.TrimSpace(l), repo+"/"); ok && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	slices.Sort(out)
	return out
}

func TestModuleGraph(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("..")
	assert.NilError(t, err)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if os.IsNotExist(err) {
		t.Skip("not in the repository checkout (no README.md beside govern/)")
	}
	assert.NilError(t, err)
	if _, err := os.Stat(filepath.Join(root, "go.work")); err != nil {
		t.Skip("not in the workspace (no go.work beside govern/)")
	}
	graph, stdlibOnly := documentedGraph(t, string(readme))

	// Every module of the workspace is in the table, and only those.
	var work struct{ Use []struct{ DiskPath string } }
	assert.NilError(t, json.Unmarshal(goCmd(t, root, "work", "edit", "-json"), &work))
	var mods []string
	for _, u := range work.Use {
		mods = append(mods, filepath.Base(u.DiskPath))
	}
	slices.Sort(mods)
	documented := slices.Sorted(func(yield func(string) bool) {
		for m := range graph {
			if !yield(m) {
				return
			}
		}
	})
	assert.DeepEqual(t, mods, documented)

	for _, m := range mods {
		t.Run(m, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(root, m)
			want := graph[m]

			imported := ours(goCmd(t, dir, "list", "-deps", "-test", "-f", "{{with .Module}}{{.Path}}{{end}}", "./..."))
			imported = slices.DeleteFunc(imported, func(d string) bool { return d == m })
			for _, d := range imported {
				if !slices.Contains(want, d) {
					t.Errorf("%s imports %s, an edge README.md does not document: remove the import, or document the edge (and say why) in README.md's module table", m, d)
				}
			}
			for _, d := range want {
				if !slices.Contains(imported, d) {
					t.Errorf("README.md says %s imports %s; it does not: drop the edge from the table", m, d)
				}
			}

			var gomod struct {
				Require []struct{ Path string }
				Replace []struct {
					Old struct{ Path string }
					New struct{ Path string }
				}
			}
			assert.NilError(t, json.Unmarshal(goCmd(t, dir, "mod", "edit", "-json"), &gomod))
			var required []string
			for _, r := range gomod.Require {
				if d, ok := strings.CutPrefix(r.Path, repo+"/"); ok {
					required = append(required, d)
				}
			}
			slices.Sort(required)
			if !slices.Equal(required, want) {
				t.Errorf("%s/go.mod requires %v of this repository's modules; README.md documents %v", m, required, want)
			}
			for _, d := range required {
				ok := slices.ContainsFunc(gomod.Replace, func(r struct {
					Old struct{ Path string }
					New struct{ Path string }
				}) bool {
					return r.Old.Path == repo+"/"+d && r.New.Path == "../"+d
				})
				if !ok {
					t.Errorf("%s/go.mod requires %s without `replace %s/%s => ../%s`", m, d, repo, d, d)
				}
			}

			if slices.Contains(stdlibOnly, m) {
				for l := range strings.Lines(string(goCmd(t, dir, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "./..."))) {
					if p := strings.TrimSpace(l); p != "" && !strings.HasPrefix(p, repo+"/"+m) {
						t.Errorf("%s imports %s; README.md says it needs nothing outside the standard library", m, p)
					}
				}
			}
		})
	}
}
