package plan

import (
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
