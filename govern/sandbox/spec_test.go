package sandbox

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern"
)

const sum0 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" // sha256("")

func validSpec() *Spec {
	return &Spec{
		Argv:           []string{"/bin/bash", "--noprofile", "--norc", "-c", "true"},
		Env:            []string{"PATH=/usr/bin:/bin", "EMPTY="},
		Cwd:            "/work/ws/sub",
		WorkspaceRoots: []string{"/work/ws"},
		Pins:           []govern.Pin{{Path: "/work/ws/a.sh", RealPath: "/work/ws/a.sh", SHA256: sum0}},
		CredFiles:      map[string]string{"token": "x"},
		Seccomp:        SeccompPreferred,
		Limits:         Limits{MemoryBytes: 1 << 28, Pids: 64, TmpfsBytes: 1 << 24, FileSizeBytes: 1 << 20, Nofile: 256},
		TimeoutMS:      1000,
	}
}

func TestSpecValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		mutate func(*Spec)
		want   string // "" means valid
	}{
		{"valid", func(*Spec) {}, ""},
		{"empty seccomp means required", func(s *Spec) { s.Seccomp = "" }, ""},
		{"no argv", func(s *Spec) { s.Argv = nil }, "argv: empty"},
		{"relative argv0", func(s *Spec) { s.Argv[0] = "bash" }, "argv[0]"},
		{"NUL in argv", func(s *Spec) { s.Argv[4] = "a\x00b" }, "argv[4]: holds a NUL"},
		{"env without =", func(s *Spec) { s.Env = []string{"PATH"} }, "env[0]: want NAME=VALUE"},
		{"env with empty name", func(s *Spec) { s.Env = []string{"=x"} }, "env[0]"},
		{"no roots", func(s *Spec) { s.WorkspaceRoots = nil }, "workspace_roots: at least one"},
		{"root is /", func(s *Spec) { s.WorkspaceRoots = []string{"/"}; s.Cwd = "/" }, "whole host writable"},
		{"unclean root", func(s *Spec) { s.WorkspaceRoots = []string{"/work/ws/"} }, "not clean"},
		{"cwd outside", func(s *Spec) { s.Cwd = "/work/other" }, "cwd: /work/other is outside"},
		{"cwd prefix trick", func(s *Spec) { s.Cwd = "/work/wsx" }, "outside every workspace root"},
		{"relative deny path", func(s *Spec) { s.DenyPaths = []string{"etc/x"} }, "deny_paths[0]"},
		{"protected escapes", func(s *Spec) { s.ProtectedExtra = []string{"../x"} }, "protected_extra[0]"},
		{"absolute protected", func(s *Spec) { s.ProtectedExtra = []string{"/x"} }, "protected_extra[0]"},
		{"bad pin hash", func(s *Spec) { s.Pins[0].SHA256 = "abc" }, "pins[0].sha256"},
		{"relative pin", func(s *Spec) { s.Pins[0].RealPath = "a.sh" }, "pins[0].realpath"},
		{"cred file with slash", func(s *Spec) { s.CredFiles = map[string]string{"a/b": "x"} }, "cred_files"},
		{"cred file dotdot", func(s *Spec) { s.CredFiles = map[string]string{"..": "x"} }, "cred_files"},
		{"relative proxy", func(s *Spec) { s.ProxySocket = "p.sock" }, "proxy_socket"},
		{"unknown seccomp", func(s *Spec) { s.Seccomp = "maybe" }, `seccomp: "maybe"`},
		{"negative memory", func(s *Spec) { s.Limits.MemoryBytes = -1 }, "limits.memory_bytes"},
		{"too few pids", func(s *Spec) { s.Limits.Pids = 4 }, "limits.pids: 4 is below 16"},
		{"too few files", func(s *Spec) { s.Limits.Nofile = 3 }, "limits.nofile"},
		{"no timeout", func(s *Spec) { s.TimeoutMS = 0 }, "timeout_ms"},
		{"negative grace", func(s *Spec) { s.KillGraceMS = -1 }, "kill_grace_ms"},
		{"run_as root", func(s *Spec) { s.RunAs = &Identity{UID: 0, GID: 5} }, "run_as"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := validSpec()
			tc.mutate(s)
			err := s.Validate()
			if tc.want == "" {
				assert.NilError(t, err)
				return
			}
			assert.Check(t, errors.Is(err, ErrInvalidSpec))
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

func TestSpecValidateJoinsEveryFailure(t *testing.T) {
	t.Parallel()
	s := validSpec()
	s.Argv, s.TimeoutMS = nil, 0
	err := s.Validate()
	assert.ErrorContains(t, err, "argv: empty")
	assert.ErrorContains(t, err, "timeout_ms")
	assert.Check(t, errors.Is((*Spec)(nil).Validate(), ErrInvalidSpec))
}

// The wire form is what the executor writes: snake_case names, pin bytes
// in base64.
func TestSpecJSON(t *testing.T) {
	t.Parallel()
	in := `{"argv":["/bin/sh","-c","true"],"env":["A=1"],"cwd":"/w","workspace_roots":["/w"],
		"pins":[{"path":"/w/a.sh","realpath":"/w/a.sh","sha256":"` + sum0 + `","bytes":"ZWNobyBoaQo="}],
		"cred_files":{"tok":"v"},"proxy_socket":"/run/p.sock","seccomp":"off",
		"limits":{"memory_bytes":1,"pids":16,"tmpfs_bytes":2,"file_size_bytes":3,"nofile":16},
		"timeout_ms":5,"kill_grace_ms":6,"run_as":{"uid":1000,"gid":1000},"bwrap":{"path":"/usr/bin/bwrap","version":"0.8.0"}}`
	var s Spec
	assert.NilError(t, json.Unmarshal([]byte(in), &s))
	assert.Check(t, is.Equal(string(s.Pins[0].Bytes), "echo hi\n"))
	assert.Check(t, is.Equal(s.Seccomp, SeccompOff))
	assert.Check(t, is.Equal(s.Limits.FileSizeBytes, int64(3)))
	assert.Check(t, is.Equal(s.RunAs.UID, uint32(1000)))
	assert.Check(t, is.Equal(s.KillGrace().Milliseconds(), int64(6)))
	assert.Check(t, is.Equal(s.Bwrap.Version, "0.8.0"))
	out, err := json.Marshal(&s)
	assert.NilError(t, err)
	assert.Check(t, strings.Contains(string(out), `"workspace_roots":["/w"]`))
	// The pin's bytes travel in the spec, and nowhere else a pin is
	// written (the analysis, the audit record).
	assert.Check(t, strings.Contains(string(out), `"bytes":"ZWNobyBoaQo="`), string(out))
	var back Spec
	assert.NilError(t, json.Unmarshal(out, &back))
	assert.Check(t, is.DeepEqual(back, s))
	alone, err := json.Marshal(s.Pins[0])
	assert.NilError(t, err)
	assert.Check(t, !strings.Contains(string(alone), "ZWNobyBoaQo="), string(alone))
	assert.Check(t, is.Equal((&Spec{}).KillGrace(), DefaultKillGrace))
}
