package policy

import (
	"errors"
	"github.com/google/go-cmp/cmp"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp/cmpopts"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/config"
	"github.com/mitrity/mitrity/govern/yamlfile"
)

var wantLine = regexp.MustCompile(`(?m)^# want: (.*)$`)

// TestBadPolicies loads every testdata/bad file; each ends with its expected
// problems as "# want: line:col: path: message" comments (the file name is
// prefixed here). -update rewrites them from the actual errors.
func TestBadPolicies(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/bad/*.yaml")
	assert.NilError(t, err)
	assert.Assert(t, len(files) >= 15, "only %d bad policies", len(files))
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(file)
			assert.NilError(t, err)
			_, err = Load(file)
			assert.Assert(t, err != nil, "%s loaded without error", file)
			var errs *yamlfile.Errors
			assert.Assert(t, errors.As(err, &errs), "%T: %v", err, err)
			var got []string
			for _, fe := range errs.List {
				assert.Check(t, is.Equal(fe.File, file))
				got = append(got, strings.TrimPrefix(fe.Error(), file+":"))
			}
			if golden.FlagUpdate() {
				body := strings.TrimRight(wantLine.ReplaceAllString(string(data), ""), "\n") + "\n"
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
		})
	}
}

// defaultProfile is a profile that sets nothing.
func defaultProfile(name string) Profile {
	return Profile{
		Name:                name,
		SandboxRequired:     true,
		ExecTimeoutSeconds:  120,
		BuiltinExecRouting:  RoutingFramework,
		CommandAnalysisMode: AnalysisEnforce,
		// The strict value is the default.
		OpaqueWithCredentials: OpaqueDeny,
		Injection:             Injection{Mode: InjectionDeny, Results: ResultInjectionDeny},
		DLP:                   DLP{Arguments: DLPArgumentsDeny},
		Hold:                  Hold{TimeoutSeconds: 600, OnHook: HookQueue},
	}
}

var cmpPolicy = []cmp.Option{
	cmpopts.IgnoreUnexported(Policy{}),
	cmpopts.IgnoreFields(Rule{}, "Where"),
	cmpopts.IgnoreFields(ToolPermission{}, "Where"),
	cmpopts.EquateEmpty(),
}

func TestProfileDefaults(t *testing.T) {
	t.Parallel()
	for _, src := range []string{
		"profiles:\n  default: {}\n",
		"profiles:\n  default:\n",
		"profiles:\n  default:\n    sandbox_required: null\n    injection: {}\n    hold: {}\n",
	} {
		p, err := Parse("p.yaml", []byte(src))
		assert.NilError(t, err)
		want := &Policy{
			File:         "p.yaml",
			DefaultAgent: Agent{Profile: "default"},
			Agents:       map[string]Agent{},
			Profiles:     map[string]Profile{"default": defaultProfile("default")},
		}
		assert.DeepEqual(t, p, want, cmpPolicy...)
	}
}

// TestSandboxRequiredAbsentIsTrue: only an explicit false turns it off.
func TestSandboxRequiredAbsentIsTrue(t *testing.T) {
	t.Parallel()
	p, err := Parse("p.yaml", []byte("profiles:\n  default: {exec_timeout_seconds: 60}\n  lax: {sandbox_required: false}\n  strict: {sandbox_required: true}\n"))
	assert.NilError(t, err)
	assert.Check(t, p.Profiles["default"].SandboxRequired)
	assert.Check(t, !p.Profiles["lax"].SandboxRequired)
	assert.Check(t, p.Profiles["strict"].SandboxRequired)
}

func TestGoodPolicy(t *testing.T) {
	t.Parallel()
	p, err := Load("testdata/good/full.yaml")
	assert.NilError(t, err)
	dev := Profile{
		Name:                  "dev",
		SandboxRequired:       false,
		ExecTimeoutSeconds:    900,
		BuiltinExecRouting:    RoutingGovernedShell,
		WorkspaceRoots:        WorkspaceRoots{"${workspace}", "/srv/cache"},
		ScriptInspectionRoots: InspectionRoots{"${workspace}/scripts", "/opt/tools"},
		CommandAnalysisMode:   AnalysisMonitor,
		OpaqueWithCredentials: OpaqueAllow,
		ToolPermissions: []ToolPermission{
			{Pattern: "mcp:github__delete_repo", Action: govern.Deny},
			{Pattern: "mcp:github__*", Action: govern.Ask},
			{Pattern: "shell:*", Action: govern.Allow},
		},
		Rules: []Rule{
			{Name: "hold-git-push", When: `command.argv[0] == "git" && command.argv[1] == "push"`, Action: govern.Hold, Message: "a person approves every push"},
			{Name: "no-ssh-reads", When: "command.reads.exists(p, p.startsWith(home + \"/.ssh\"))\n", Action: govern.Deny},
		},
		Injection:      Injection{Mode: InjectionHold, Results: ResultInjectionDeny},
		DLP:            DLP{Bindings: []string{"aws", "github"}, Arguments: DLPArgumentsDeny},
		Hold:           Hold{TimeoutSeconds: 3600, OnHook: HookQueue},
		ExtraDenyPaths: []string{"/srv/secrets", "/home/op/.config/op"},
	}
	want := &Policy{
		File:         "testdata/good/full.yaml",
		DefaultAgent: Agent{Profile: "default"},
		Agents: map[string]Agent{
			"claude-laptop": {ID: "claude-laptop", Profile: "dev",
				Destinations: []string{"api.github.com", "*.npmjs.org:443", "*", "10.1.2.3", "[2001:db8::1]:8443", "2001:db8::2", "registry.example.com"},
				Credentials:  []string{"github_token"}},
			"ci@build-01": {ID: "ci@build-01", Profile: "default"},
		},
		Profiles: map[string]Profile{"default": defaultProfile("default"), "dev": dev},
	}
	assert.DeepEqual(t, p, want, cmpPolicy...)

	// A rule knows where its condition is, for the CEL compiler's errors.
	r := p.Profiles["dev"].Rules[1]
	assert.Equal(t, r.Where.Errorf("undeclared reference to 'home'").Error(),
		"testdata/good/full.yaml:34:15: profiles.dev.rules[1].when: undeclared reference to 'home'")
}

func TestForAgent(t *testing.T) {
	t.Parallel()
	p, err := Load("testdata/good/full.yaml")
	assert.NilError(t, err)

	a, prof := p.ForAgent("claude-laptop")
	assert.Check(t, !a.Default)
	assert.Equal(t, a.ID, "claude-laptop")
	assert.Equal(t, prof.Name, "dev")
	assert.DeepEqual(t, a.Credentials, []string{"github_token"})

	a, prof = p.ForAgent("stranger")
	assert.Check(t, a.Default)
	assert.Equal(t, a.ID, "stranger")
	assert.Equal(t, prof.Name, "default")
	assert.Check(t, is.Len(a.Destinations, 0), "no egress")
	assert.Check(t, is.Len(a.Credentials, 0))
	assert.Check(t, prof.SandboxRequired)

	// The fallback does not write into the policy.
	a2, _ := p.ForAgent("")
	assert.Equal(t, a2.ID, "")
	assert.Equal(t, p.DefaultAgent.ID, "")
}

func TestDefault(t *testing.T) {
	t.Parallel()
	p := Default()
	assert.Equal(t, p.File, EmbeddedName)
	a, prof := p.ForAgent("anyone")
	assert.Check(t, a.Default)
	assert.Equal(t, a.Profile, "default")
	assert.Check(t, is.Len(a.Destinations, 0))
	assert.Check(t, is.Len(a.Credentials, 0))
	want := defaultProfile("default")
	want.ScriptInspectionRoots = InspectionRoots{"${workspace}"}
	want.ToolPermissions = []ToolPermission{{Pattern: "shell:*", Action: govern.Allow}}
	// The embedded default binds every DLP detector.
	want.DLP = DLP{Bindings: []string{"all"}, Arguments: DLPArgumentsDeny}
	assert.DeepEqual(t, prof, want, cmpPolicy...)

	// Each call is a fresh copy.
	p.Profiles["default"] = Profile{}
	_, prof = Default().ForAgent("x")
	assert.Check(t, prof.SandboxRequired)

	onDisk, err := os.ReadFile("default.yaml")
	assert.NilError(t, err)
	assert.Equal(t, string(DefaultYAML()), string(onDisk))
}

// TestRootsStaySeparate: neither list is derived from the other, and each
// resolves its own empty meaning.
func TestRootsStaySeparate(t *testing.T) {
	t.Parallel()
	p, err := Parse("p.yaml", []byte("profiles:\n  default:\n    workspace_roots: [/srv/a]\n  wide:\n    script_inspection_roots: [/]\n"))
	assert.NilError(t, err)
	d := p.Profiles["default"]
	assert.DeepEqual(t, d.WorkspaceRoots.Resolve("/w"), []string{"/srv/a"})
	assert.Check(t, is.Len(d.ScriptInspectionRoots.Resolve("/w"), 0), "empty inspection roots: scripts are not read")
	w := p.Profiles["wide"]
	assert.DeepEqual(t, w.ScriptInspectionRoots.Resolve("/w"), []string{"/"})
	assert.Check(t, is.DeepEqual(w.WorkspaceRoots.Resolve("/w"), []string{"/w"}), "a / inspection root widens no workspace")

	assert.DeepEqual(t, WorkspaceRoots{"${workspace}", "${workspace}/sub/", "/x/../y"}.Resolve("/home/op/repo/"),
		[]string{"/home/op/repo", "/home/op/repo/sub", "/y"})
	assert.DeepEqual(t, InspectionRoots{"${workspace}/scripts"}.Resolve("/w"), []string{"/w/scripts"})
}

func TestToolPermissionMatches(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern, action string
		match           bool
	}{
		{"shell:*", "shell:execute", true},
		{"shell:execute", "shell:execute", true},
		{"shell:execute", "shell:executes", false},
		{"mcp:github__*", "mcp:github__create_issue", true},
		{"mcp:github__*", "mcp:gitlab__create_issue", false},
		{"*", "anything:at_all", true},
		{"*:*", "shell:execute", true},
		{"mcp:*__delete_*", "mcp:github__delete_repo", true},
		{"mcp:*__delete_*", "mcp:github__create_repo", false},
		{"shell:*", "mcp:shell__execute", false},
		{"a*a*a*a*a*b", strings.Repeat("a", 200), false},
	}
	for _, tt := range tests {
		assert.Check(t, is.Equal(ToolPermission{Pattern: tt.pattern}.Matches(tt.action), tt.match), "%s ~ %s", tt.pattern, tt.action)
	}
}

func TestCheckCredentials(t *testing.T) {
	t.Parallel()
	p, err := Load("testdata/good/full.yaml")
	assert.NilError(t, err)
	assert.NilError(t, p.CheckCredentials(func(id string) bool { return id == "github_token" }))
	err = p.CheckCredentials(func(string) bool { return false })
	assert.Error(t, err, `testdata/good/full.yaml:10:19: agents.claude-laptop.credentials[0]: credential "github_token" is not defined in the gateway config`)
}

func TestCredentialGrammarMatchesConfig(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"github_token", "aws-prod.key", "bad id", "", "é", "a/b", strings.Repeat("a", 128), strings.Repeat("a", 129)} {
		assert.Check(t, is.Equal(validCredentialID(id), config.ValidCredentialID(id)), "id %q", id)
	}
}

// TestParseMergeOverride: a profile built from a base with `<<` and one
// knob overridden, the normal use of merge keys (docs/configuration.md).
func TestParseMergeOverride(t *testing.T) {
	src := `default_agent:
  profile: dev
profiles:
  base: &base
    sandbox_required: true
    exec_timeout_seconds: 30
    builtin_exec_routing: framework
  dev:
    <<: *base
    builtin_exec_routing: governed_shell
`
	p, err := Parse("policy.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	dev, base := p.Profiles["dev"], p.Profiles["base"]
	if got := dev.BuiltinExecRouting; got != RoutingGovernedShell {
		t.Errorf("dev routing: %s", got)
	}
	if got := base.BuiltinExecRouting; got != RoutingFramework {
		t.Errorf("base routing: %s", got)
	}
	if dev.ExecTimeoutSeconds != 30 {
		t.Errorf("dev timeout: %d", dev.ExecTimeoutSeconds)
	}
}
