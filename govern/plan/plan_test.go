package plan

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/shell"
)

func valid() Spec {
	return Spec{Shell: "/bin/bash", Dialect: shell.DialectBash, Command: "ls", CommandSHA256: "ab",
		Cwd: "/w", WorkspaceRoots: []string{"/w"}, Timeout: time.Minute, OutputMaxBytes: 1024,
		Env: map[string]string{"PATH": "/bin"}, Pins: []govern.Pin{{Path: "/w/x.sh", SHA256: "cd", Bytes: []byte("echo")}}}
}

func TestImmutable(t *testing.T) {
	t.Parallel()
	s := valid()
	p, err := New(s)
	assert.NilError(t, err)
	h := p.Hash()
	// Changing the spec, or what an accessor returned, changes nothing.
	s.Env["PATH"] = "/tmp"
	s.WorkspaceRoots[0] = "/"
	s.Pins[0].Bytes[0] = 'X'
	p.Env()["PATH"] = "/tmp"
	p.Pins()[0].Bytes[0] = 'Y'
	p.WorkspaceRoots()[0] = "/"
	assert.Equal(t, p.Env()["PATH"], "/bin")
	assert.Equal(t, p.WorkspaceRoots()[0], "/w")
	assert.Equal(t, string(p.Pins()[0].Bytes), "echo")
	assert.Equal(t, p.Hash(), h)
}

func TestInvalid(t *testing.T) {
	t.Parallel()
	for name, mutate := range map[string]func(*Spec){
		"relative shell":   func(s *Spec) { s.Shell = "bash" },
		"zsh dialect":      func(s *Spec) { s.Dialect = "zsh" },
		"no hash":          func(s *Spec) { s.CommandSHA256 = "" },
		"relative cwd":     func(s *Spec) { s.Cwd = "w" },
		"no timeout":       func(s *Spec) { s.Timeout = 0 },
		"no output cap":    func(s *Spec) { s.OutputMaxBytes = 0 },
		"file without dir": func(s *Spec) { s.CredentialFiles = map[string]string{"k": "id"} },
		"file name path": func(s *Spec) {
			s.CredentialDir, s.CredentialFiles = "/run/c", map[string]string{"../k": "id"}
		},
	} {
		s := valid()
		mutate(&s)
		_, err := New(s)
		assert.Check(t, err != nil, name)
	}
}

func TestHashBindsPins(t *testing.T) {
	t.Parallel()
	a, _ := New(valid())
	s := valid()
	s.Pins[0].SHA256 = "ef"
	b, _ := New(s)
	assert.Assert(t, a.Hash() != b.Hash())
}

// The interpreter script of a #! chain is in the plan's pinned set, so the
// plan's hash (what a ticket binds to) changes with its bytes.
func TestInterpreterScriptPinned(t *testing.T) {
	t.Parallel()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	assert.NilError(t, err)
	interp := filepath.Join(dir, "b.sh")
	assert.NilError(t, os.WriteFile(filepath.Join(dir, "a.sh"), []byte("#!"+interp+"\n"), 0o755))
	build := func(body string) *Plan {
		assert.NilError(t, os.WriteFile(interp, []byte(body), 0o755))
		a := shell.Analyze(shell.Input{Text: "./a.sh", Dialect: shell.DialectBash, Cwd: dir, InspectionRoots: []string{dir}})
		s := valid()
		s.Cwd, s.WorkspaceRoots, s.Pins = dir, []string{dir}, a.Pins
		p, err := New(s)
		assert.NilError(t, err)
		return p
	}
	p := build("#!/bin/sh\necho judged\n")
	i := slices.IndexFunc(p.Pins(), func(pin govern.Pin) bool { return pin.Path == interp })
	assert.Assert(t, i >= 0, "the interpreter script is not pinned: %v", p.Pins())
	assert.Equal(t, string(p.Pins()[i].Bytes), "#!/bin/sh\necho judged\n")
	assert.Equal(t, p.Pins()[i].Dialect, "sh")
	assert.Assert(t, build("#!/bin/sh\necho swapped\n").Hash() != p.Hash())
}
