package config

import (
	"errors"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"

	"github.com/mitrity/mitrity/govern/shell"
	"github.com/mitrity/mitrity/govern/yamlfile"
)

var wantLine = regexp.MustCompile(`(?m)^# want: (.*)$`)

// TestBadConfigs loads every testdata/bad file against the staged host. Each
// file ends with its expected problems, one "# want: line:col: path: message"
// comment per problem (the file name is prefixed here); a "# euid: 0" line
// stages a root gateway. Run with -update to rewrite the wants, then review
// the diff.
func TestBadConfigs(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/bad/*.yaml")
	assert.NilError(t, err)
	assert.Assert(t, len(files) >= 25, "only %d bad configs", len(files))
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(file)
			assert.NilError(t, err)
			l := fakeHost(stagedFiles)
			if strings.Contains(string(data), "\n# euid: 0\n") || strings.HasPrefix(string(data), "# euid: 0\n") {
				l = asRoot(l)
			}
			_, err = l.Load(file)
			assert.Assert(t, err != nil, "%s loaded without error", file)
			var errs *yamlfile.Errors
			assert.Assert(t, errors.As(err, &errs), "%T: %v", err, err)
			var got []string
			for _, fe := range errs.List {
				got = append(got, strings.TrimPrefix(fe.Error(), file+":"))
			}
			if golden.FlagUpdate() {
				body := wantLine.ReplaceAllString(string(data), "")
				body = strings.TrimRight(body, "\n") + "\n"
				for _, g := range got {
					body += "# want: " + g + "\n"
				}
				assert.NilError(t, os.WriteFile(file, []byte(body), 0o644))
				return
			}
			var want []string
			for _, m := range wantLine.FindAllStringSubmatch(string(data), -1) {
				want = append(want, m[1])
			}
			assert.DeepEqual(t, got, want)
			for _, fe := range errs.List {
				assert.Check(t, is.Equal(fe.File, file))
			}
		})
	}
}

// cmpConfig compares Configs: positions are not part of a config's value.
var cmpConfig = []cmp.Option{
	cmpopts.IgnoreUnexported(Config{}),
	cmp.Comparer(func(a, b netip.Prefix) bool { return a == b }),
	cmpopts.EquateEmpty(),
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	c, err := fakeHost(stagedFiles).Parse("/etc/mitrity/mitrity-gateway.yaml", []byte("# empty\n"))
	assert.NilError(t, err)
	want := &Config{
		File: "/etc/mitrity/mitrity-gateway.yaml",
		Exec: Exec{
			Enabled: false,
			Shell:   "/bin/bash",
			Sandbox: Sandbox{Backend: BackendAuto, Seccomp: SeccompRequired},
			Egress:  Egress{AllowedPorts: []int{443, 80}},
			Limits: Limits{
				MaxTimeoutSeconds: 3600,
				StdinMaxBytes:     1 << 20,
				OutputMaxBytes:    1 << 20,
				MaxConcurrent:     4,
				MemoryBytes:       2 << 30,
				Pids:              512,
				TmpfsBytes:        256 << 20,
				FileSizeBytes:     1 << 30,
			},
		},
		Audit:         Audit{Path: "/home/op/.local/state/mitrity/audit.jsonl"},
		Notifications: Notifications{Log: true, Webhook: Webhook{TimeoutSeconds: 5}},
		ThreatIntel:   ThreatIntel{ReloadSeconds: 5},
		Admission:     Admission{Enabled: true, Socket: filepath.Join(os.TempDir(), "mitrity-1000", "admission.sock"), TicketTTLSeconds: 300},
	}
	assert.DeepEqual(t, c, want, cmpConfig...)
}

func TestAuditDefault(t *testing.T) {
	t.Parallel()
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	tests := []struct {
		name string
		euid int
		env  map[string]string
		want string
	}{
		{"xdg", 1000, map[string]string{"XDG_STATE_HOME": "/x/state", "HOME": "/home/op"}, "/x/state/mitrity/audit.jsonl"},
		{"relative xdg ignored", 1000, map[string]string{"XDG_STATE_HOME": "state", "HOME": "/home/op"}, "/home/op/.local/state/mitrity/audit.jsonl"},
		{"home", 1000, map[string]string{"HOME": "/home/op"}, "/home/op/.local/state/mitrity/audit.jsonl"},
		{"root", 0, map[string]string{"XDG_STATE_HOME": "/x/state", "HOME": "/root"}, "/var/lib/mitrity/audit.jsonl"},
		{"nothing", 1000, nil, ""},
	}
	for _, tt := range tests {
		l := fakeHost(stagedFiles)
		l.Geteuid = func() int { return tt.euid }
		l.Getenv = env(tt.env)
		c, err := l.Parse("/etc/m.yaml", nil)
		if tt.want == "" {
			assert.ErrorContains(t, err, "/etc/m.yaml: audit.path: required: there is no default", tt.name)
			continue
		}
		assert.NilError(t, err, tt.name)
		assert.Check(t, is.Equal(c.Audit.Path, tt.want), tt.name)
	}
}

func TestGoodConfigs(t *testing.T) {
	t.Parallel()
	dir, err := filepath.Abs("testdata/good")
	assert.NilError(t, err)
	files := maps.Clone(stagedFiles)
	files[filepath.Join(dir, "policy.yaml")] = 0o644
	full, err := fakeHost(files).Load("testdata/good/full.yaml")
	assert.NilError(t, err)
	want := &Config{
		File: filepath.Join(dir, "full.yaml"),
		Exec: Exec{
			Enabled:    true,
			Shell:      "/bin/sh",
			DefaultCwd: "/workspace",
			RunAs:      "agent",
			Sandbox:    Sandbox{Backend: BackendBubblewrap, Seccomp: SeccompPreferred, SettingsFile: "/etc/mitrity/sandbox.json"},
			Credentials: ExecCredentials{
				Env:   map[string]CredentialRef{"GITHUB_TOKEN": "${credential:github_token}", "PGPASSWORD": "${credential:pg.prod}"},
				Files: map[string]CredentialRef{"gcp.json": "${credential:gcp-key}"},
			},
			Env: ExecEnv{AgentSettable: []string{"DEBUG", "RUST_LOG"}},
			Egress: Egress{
				AllowedPorts:        []int{443},
				DeniedCIDRs:         []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24"), netip.MustParsePrefix("2001:db8::/32")},
				AllowedPrivateCIDRs: []netip.Prefix{netip.MustParsePrefix("10.20.0.0/16"), netip.MustParsePrefix("fd12:3456::/32")},
			},
			Limits: Limits{
				MaxTimeoutSeconds: 600,
				StdinMaxBytes:     0,
				OutputMaxBytes:    4 << 20,
				MaxConcurrent:     16,
				MemoryBytes:       512 << 20,
				Pids:              128,
				TmpfsBytes:        64 << 20,
				FileSizeBytes:     100 << 20,
			},
		},
		Credentials: map[string]CredentialSource{
			"github_token": {ID: "github_token", Env: "GITHUB_TOKEN_FOR_AGENTS"},
			"pg.prod":      {ID: "pg.prod", File: "/etc/mitrity/credentials/pg"},
			"gcp-key":      {ID: "gcp-key", Command: []string{"/usr/bin/op", "read", "op://infra/gcp/key.json"}},
		},
		Policy:        filepath.Join(dir, "policy.yaml"),
		Audit:         Audit{Path: filepath.Join(dir, "audit", "audit.jsonl")},
		Notifications: Notifications{Log: false, Webhook: Webhook{URL: "https://hooks.slack.com/services/T0/B0/x", TimeoutSeconds: 10}},
		ThreatIntel:   ThreatIntel{ReloadSeconds: 5},
		Admission:     Admission{Enabled: true, Socket: filepath.Join(os.TempDir(), "mitrity-1000", "admission.sock"), TicketTTLSeconds: 300},
	}
	assert.DeepEqual(t, full, want, cmpConfig...)
	assert.Equal(t, full.Exec.Dialect(), "sh")
	assert.Equal(t, full.Exec.Credentials.Files["gcp.json"].ID(), "gcp-key")

	// The spec's own example, as written in "Enabling it".
	spec, err := fakeHost(stagedFiles).Load("testdata/good/spec-example.yaml")
	assert.NilError(t, err)
	assert.Check(t, spec.Exec.Enabled)
	assert.Equal(t, spec.Exec.Dialect(), "bash")
	assert.Equal(t, spec.Exec.Credentials.Env["GITHUB_TOKEN"].ID(), "github_token")

	// Disabled: nothing about the shell is probed, so a host without one
	// (the distroless image) still starts.
	off, err := fakeHost(nil).Load("testdata/good/disabled.yaml")
	assert.NilError(t, err)
	assert.Check(t, !off.Exec.Enabled)

	// Root with run_as is fine.
	_, err = asRoot(fakeHost(stagedFiles)).Load("testdata/good/root.yaml")
	assert.NilError(t, err)

	// Root handing the admission socket to one user.
	adm, err := asRoot(fakeHost(stagedFiles)).Load("testdata/good/admission-owner.yaml")
	assert.NilError(t, err)
	assert.DeepEqual(t, adm.Admission, Admission{Enabled: true, Socket: "/run/mitrity-agent/admission.sock", Owners: []string{"agent"}, TicketTTLSeconds: 120})
	assert.Equal(t, adm.Admin.Listen, "127.0.0.1:9464")
}

func TestEmbedded(t *testing.T) {
	t.Parallel()
	c, err := fakeHost(stagedFiles).LoadEmbedded("/srv/repo/")
	assert.NilError(t, err)
	assert.Check(t, c.Embedded)
	assert.Check(t, c.Exec.Enabled)
	assert.Equal(t, c.Exec.Shell, "/bin/bash")
	assert.Equal(t, c.Exec.DefaultCwd, "/srv/repo")
	assert.Equal(t, c.Exec.Sandbox.Backend, BackendAuto)
	assert.Equal(t, c.Exec.Sandbox.Seccomp, SeccompRequired)
	assert.Equal(t, c.Policy, "")
	assert.Equal(t, c.Audit.Path, "/home/op/.local/state/mitrity/audit.jsonl")

	// The embedded file holds the same values as a file that says nothing,
	// except that it enables the shell.
	d, err := fakeHost(stagedFiles).Parse("/etc/m.yaml", []byte("exec: {enabled: true, default_cwd: /srv/repo}"))
	assert.NilError(t, err)
	assert.DeepEqual(t, c, d, append(cmpConfig, cmpopts.IgnoreFields(Config{}, "File", "Embedded"))...)

	noBash := map[string]os.FileMode{"/bin/sh": 0o755, "/srv/repo": os.ModeDir | 0o755}
	c, err = fakeHost(noBash).LoadEmbedded("/srv/repo")
	assert.NilError(t, err)
	assert.Equal(t, c.Exec.Shell, "/bin/sh")
	assert.Equal(t, c.Exec.Dialect(), "sh")

	_, err = fakeHost(stagedFiles).LoadEmbedded("/nonexistent")
	assert.Error(t, err, `embedded default config: exec.default_cwd: "/nonexistent": no such directory`)

	_, err = asRoot(fakeHost(stagedFiles)).LoadEmbedded("/srv/repo")
	assert.Error(t, err, "embedded default config: exec.run_as: required when the gateway runs as root: agent commands never run as root")
}

func TestDefaultYAML(t *testing.T) {
	t.Parallel()
	onDisk, err := os.ReadFile("default.yaml")
	assert.NilError(t, err)
	assert.Equal(t, string(DefaultYAML()), string(onDisk))
	// Copied as is to a file, it is strict YAML and needs only a cwd.
	_, err = fakeHost(stagedFiles).Parse("mitrity-gateway.yaml", DefaultYAML())
	assert.Error(t, err, "mitrity-gateway.yaml:8:1: exec.default_cwd: required when exec.enabled is true: the working directory of a call that names none")
}

func TestValidateInCode(t *testing.T) {
	t.Parallel()
	c, err := fakeHost(stagedFiles).LoadEmbedded("/srv/repo")
	assert.NilError(t, err)
	c.Exec.Limits.Pids = 1
	c.Exec.Egress.AllowedPrivateCIDRs = []netip.Prefix{netip.MustParsePrefix("169.254.0.0/16")}
	err = fakeHost(stagedFiles).Validate(c)
	assert.Error(t, err, "embedded default config: exec.egress.allowed_private_cidrs[0]: \"169.254.0.0/16\": not inside a private range (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, fc00::/7)\n"+
		"embedded default config: exec.limits.pids: 1: must be between 8 and 65536")

	// A Config built from nothing names no file and no position.
	err = fakeHost(stagedFiles).Validate(&Config{Exec: Exec{Enabled: true}})
	assert.ErrorContains(t, err, "exec.shell: required when exec.enabled is true\n")
}

func TestCredentialGrammarMatchesAnalyzer(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"github_token", "aws-prod.key", "A1", "x.y-z_w", "bad id", "", "é", strings.Repeat("a", 129), strings.Repeat("a", 128)} {
		_, ids := shell.RewriteCredentials("${credential:" + id + "}")
		assert.Check(t, is.Equal(ValidCredentialID(id), len(ids) == 1), "id %q", id)
		if ValidCredentialID(id) {
			assert.Check(t, is.Equal(credentialVar(id), shell.CredentialVar(id)))
			assert.Check(t, is.Equal(CredentialRef("${credential:"+id+"}").ID(), id))
		}
	}
	for _, r := range []CredentialRef{"", "${credential:}", "$credential:x", "${credential:x} ", "x${credential:x}", "${credential:a b}"} {
		assert.Check(t, is.Equal(r.ID(), ""), "ref %q", r)
	}
}

func TestEnvNames(t *testing.T) {
	t.Parallel()
	for name, ok := range map[string]bool{
		"GITHUB_TOKEN": true, "_x": true, "a1": true, "DEBUG": true,
		"1A": false, "A-B": false, "": false, "A B": false,
		"MITRITY_X": false, "BASH_FUNC_rm%%": false, "BASH_FUNC_X": false, "LD_PRELOAD": false, "DYLD_INSERT_LIBRARIES": false,
		"BASH_ENV": false, "ENV": false, "SHELLOPTS": false, "PATH": false, "IFS": false, "https_proxy": false, "NO_PROXY": false,
		"PROMPT_COMMAND": false, "PS4": false,
	} {
		assert.Check(t, is.Equal(envNameProblem(name) == "", ok), "name %q: %s", name, envNameProblem(name))
	}
}
