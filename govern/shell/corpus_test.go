package shell

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"gotest.tools/v3/assert"
	"gotest.tools/v3/golden"

	"github.com/mitrity/mitrity/govern"
)

// corpusCase is one entry of testdata/corpus/*.yaml. Every field but name
// and cmd is an assertion; an omitted assertion is not checked, except deny
// and opaque, whose zero values are asserted too.
type corpusCase struct {
	Name    string `yaml:"name"`
	Cmd     string `yaml:"cmd"`
	Dialect string `yaml:"dialect"` // default bash
	// Files are created in the workspace (the cwd and the only inspection
	// and writable root) before the analysis, $WS in a body being the
	// workspace; a mode of "+x" is not needed: the analyzer never checks
	// the execute bit.
	Files map[string]string `yaml:"files"`
	// Symlinks are created in the workspace too: name → target ($WS in a
	// target is the workspace).
	Symlinks map[string]string `yaml:"symlinks"`
	// Env is the call's environment (Input.Env); $WS in a value is the
	// workspace.
	Env map[string]string `yaml:"env"`
	// Run lists commands that must be found, each rendered as its argv
	// (dynamic words as ⟨source⟩); Absent lists ones that must not.
	Run    []string `yaml:"run"`
	Absent []string `yaml:"absent"`
	// Flags must all be present; NoFlags asserts there are none at all.
	Flags   []string `yaml:"flags"`
	NoFlags bool     `yaml:"noflags"`
	// Deny is the expected denial reason ("" means none).
	Deny string `yaml:"deny"`
	// Opaque is whether the analysis reports any part as unresolved.
	Opaque bool `yaml:"opaque"`
	// Pins lists the pinned script paths, relative to the workspace.
	Pins  []string `yaml:"pins"`
	Links int      `yaml:"links"`
	// Stdin is the call's standard input.
	Stdin string `yaml:"stdin"`
	// Injected: the run carries an operator-mapped credential
	// (Input.CredentialsInjected); AllowOpaque: the profile allows what
	// the analyzer cannot see through in such a run.
	Injected    bool `yaml:"injected"`
	AllowOpaque bool `yaml:"allow_opaque"`
}

func loadCorpus(t testing.TB) map[string][]corpusCase {
	t.Helper()
	files, err := filepath.Glob("testdata/corpus/*.yaml")
	assert.NilError(t, err)
	out := map[string][]corpusCase{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		assert.NilError(t, err)
		var cases []corpusCase
		if err := yaml.UnmarshalWithOptions(b, &cases, yaml.Strict()); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".yaml")] = cases
	}
	return out
}

// TestCorpus runs every case of testdata/corpus and compares the full
// report with testdata/golden/<file>.golden (go test -update rewrites it).
func TestCorpus(t *testing.T) {
	corpus := loadCorpus(t)
	total := 0
	for file, cases := range corpus {
		total += len(cases)
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			var report strings.Builder
			names := map[string]bool{}
			for _, c := range cases {
				if names[c.Name] {
					t.Errorf("duplicate case name %q", c.Name)
				}
				names[c.Name] = true
				a := runCase(t, c)
				report.WriteString("### " + c.Name + "\n$ " + c.Cmd + "\n")
				var b strings.Builder
				assert.NilError(t, a.WriteReport(&b))
				report.WriteString(stripSum(b.String()) + "\n")
			}
			golden.Assert(t, report.String(), file+".golden")
		})
	}
	if total < 300 {
		t.Errorf("the corpus has %d cases; it must keep at least 300", total)
	}
}

// stripSum drops the first report line (its hash depends on nothing but
// the text, which the case already shows) and the workspace path.
func stripSum(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}

const workspace = "/ws"

func runCase(t *testing.T, c corpusCase) *Analysis {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	assert.NilError(t, err)
	for name, body := range c.Files {
		p := filepath.Join(dir, name)
		assert.NilError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		assert.NilError(t, os.WriteFile(p, []byte(strings.ReplaceAll(body, "$WS", dir)), 0o755))
	}
	for name, target := range c.Symlinks {
		p := filepath.Join(dir, name)
		assert.NilError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		assert.NilError(t, os.Symlink(strings.ReplaceAll(target, "$WS", dir), p))
	}
	var env map[string]string
	for k, v := range c.Env {
		if env == nil {
			env = map[string]string{}
		}
		env[k] = strings.ReplaceAll(v, "$WS", dir)
	}
	d := Dialect(c.Dialect)
	if d == "" {
		d = DialectBash
	}
	in := Input{
		Text:            strings.ReplaceAll(c.Cmd, "$WS", dir),
		Dialect:         d,
		Cwd:             dir,
		Path:            []string{"/usr/local/bin", "/usr/bin", "/bin"},
		Home:            "/home/agent",
		InspectionRoots: []string{dir},
		WritableRoots:   []string{dir},
		CredentialVars:  []string{"GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY"},
		CredentialDir:   govern.CredentialDir,
		Env:             env,

		CredentialsInjected:        c.Injected,
		AllowOpaqueWithCredentials: c.AllowOpaque,
	}
	if c.Stdin != "" {
		in.Stdin = []byte(c.Stdin)
	}
	a := Analyze(in)
	// Make the report independent of the temporary directory.
	replace := func(s string) string { return strings.ReplaceAll(s, dir, workspace) }
	for i := range a.Commands {
		for j := range a.Commands[i].Argv {
			a.Commands[i].Argv[j].Value = replace(a.Commands[i].Argv[j].Value)
		}
		a.Commands[i].Context = replace(a.Commands[i].Context)
		a.Commands[i].Pos.File = replace(a.Commands[i].Pos.File)
		for j := range a.Commands[i].Redirects {
			a.Commands[i].Redirects[j].Path = replace(a.Commands[i].Redirects[j].Path)
		}
	}
	for i := range a.Pins {
		a.Pins[i].Path = replace(a.Pins[i].Path)
		a.Pins[i].RealPath = replace(a.Pins[i].RealPath)
		if b := a.Pins[i].Bytes; bytes.Contains(b, []byte(dir)) {
			// A body naming the workspace ($WS) is shown as it reads
			// with the workspace's stable name.
			b = bytes.ReplaceAll(b, []byte(dir), []byte(workspace))
			sum := sha256.Sum256(b)
			a.Pins[i].SHA256, a.Pins[i].Size = hex.EncodeToString(sum[:]), int64(len(b))
		}
	}
	for i := range a.Flags {
		a.Flags[i].Detail = replace(a.Flags[i].Detail)
		a.Flags[i].Pos.File = replace(a.Flags[i].Pos.File)
	}
	for i := range a.Links {
		a.Links[i].Path = replace(a.Links[i].Path)
		a.Links[i].Write.File = replace(a.Links[i].Write.File)
		a.Links[i].Run.File = replace(a.Links[i].Run.File)
	}
	if a.Denial != nil {
		a.Denial.Message = replace(a.Denial.Message)
		a.Denial.Pos.File = replace(a.Denial.Pos.File)
	}
	checkCase(t, c, a)
	return a
}

func checkCase(t *testing.T, c corpusCase, a *Analysis) {
	t.Helper()
	var got []string
	for _, cmd := range a.Commands {
		got = append(got, argvString(cmd.Argv))
	}
	for _, want := range c.Run {
		if !slices.Contains(got, want) {
			t.Errorf("%s: command %q not found; got %q", c.Name, want, got)
		}
	}
	for _, bad := range c.Absent {
		if slices.Contains(got, bad) {
			t.Errorf("%s: command %q found, but must not be", c.Name, bad)
		}
	}
	kinds := map[string]bool{}
	for _, f := range a.Flags {
		kinds[string(f.Kind)] = true
	}
	for _, f := range c.Flags {
		if !kinds[f] {
			t.Errorf("%s: flag %s missing; got %v", c.Name, f, a.Flags)
		}
	}
	if c.NoFlags && len(a.Flags) > 0 {
		t.Errorf("%s: want no flags, got %v", c.Name, a.Flags)
	}
	deny := ""
	if a.Denial != nil {
		deny = string(a.Denial.Reason)
	}
	if deny != c.Deny {
		t.Errorf("%s: denial %q, want %q (%v)", c.Name, deny, c.Deny, a.Denial)
	}
	if a.Denial == nil && a.Opaque() != c.Opaque {
		t.Errorf("%s: opaque %v, want %v; flags %v", c.Name, a.Opaque(), c.Opaque, a.Flags)
	}
	if c.Pins != nil {
		var pins []string
		for _, p := range a.Pins {
			pins = append(pins, strings.TrimPrefix(p.Path, workspace+"/"))
		}
		if !slices.Equal(pins, c.Pins) {
			t.Errorf("%s: pins %q, want %q", c.Name, pins, c.Pins)
		}
	}
	if len(a.Links) != c.Links {
		t.Errorf("%s: %d write-then-run links, want %d: %v", c.Name, len(a.Links), c.Links, a.Links)
	}
}
