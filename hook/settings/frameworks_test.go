package settings

import (
	"bytes"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/hook/framework"
)

// TestRenderCodexAndGemini: what is rendered passes its own check, with and
// without a pinned socket, and each drift is one finding naming its key.
func TestRenderCodexAndGemini(t *testing.T) {
	t.Parallel()
	type drift struct {
		name      string
		old, new  string
		wantPath  string
		wantWords string
	}
	for _, tc := range []struct {
		fw     string
		render func(Options) ([]byte, error)
		check  func([]byte, Options) []Finding
		drifts []drift
	}{
		{"codex", RenderCodex, CheckCodex, []drift{
			{"user hooks allowed", "allow_managed_hooks_only = true", "allow_managed_hooks_only = false", "allow_managed_hooks_only", "user and project hooks"},
			{"hooks feature not pinned", "codex_hooks = true", "", "features.codex_hooks", "runs no hook"},
			{"hooks feature off", "codex_hooks = true", "codex_hooks = false", "features.codex_hooks", "runs no hook"},
			{"short timeout", "timeout = 660", "timeout = 30", "hooks.PreToolUse[0].hooks[0].timeout", "30 seconds"},
			{"no timeout", "timeout = 660", "", "hooks.PreToolUse[0].hooks[0].timeout", "unset"},
			{"another matcher", "'^Bash$'", "'^apply_patch$'", "hooks.PreToolUse", "no command hook"},
			{"another hook", "mitrity-hook codex", "mitrity-hook claude", "hooks.PreToolUse", "no command hook"},
			{"not toml", "[hooks]", "[hooks", "", "not valid TOML"},
		}},
		{"gemini", RenderGemini, func(d []byte, o Options) []Finding { return CheckGemini(d, o, true) }, []drift{
			{"hooks off", `"enabled": true`, `"enabled": false`, "hooksConfig.enabled", "runs no hook"},
			{"switched off by name", `"enabled": true`, `"enabled": true, "disabled": ["mitrity"]`, "hooksConfig.disabled[0]", "skips the Mitrity hook"},
			{"short timeout", `"timeout": 660000`, `"timeout": 60000`, "hooks.BeforeTool[0].hooks[0].timeout", "60000 ms"},
			{"another tool", `"matcher": "run_shell_command"`, `"matcher": "read_file"`, "hooks.BeforeTool", "no command hook"},
			{"not json", "{", "[", "", "not valid JSON"},
		}},
	} {
		for _, o := range []Options{linuxPlain, linuxRouting} {
			out, err := tc.render(o)
			assert.NilError(t, err, tc.fw)
			assert.Check(t, is.Len(tc.check(out, o), 0), "%s: the rendered file fails its own check:\n%s", tc.fw, out)
			assert.Check(t, is.Contains(string(out), o.frameworkCommand(framework.Name(tc.fw))), tc.fw)
			for _, d := range tc.drifts {
				assert.Assert(t, bytes.Contains(out, []byte(d.old)), "%s %s: %q not in\n%s", tc.fw, d.name, d.old, out)
				got := tc.check(bytes.Replace(out, []byte(d.old), []byte(d.new), 1), o)
				assert.Assert(t, is.Len(got, 1), "%s %s: %v", tc.fw, d.name, got)
				assert.Check(t, is.Equal(got[0].Path, d.wantPath), "%s %s", tc.fw, d.name)
				assert.Check(t, is.Contains(got[0].Problem, d.wantWords), "%s %s", tc.fw, d.name)
			}
		}
	}
}

// TestCheckGeminiMerged: a user's or project's settings need no hook of
// their own, but must not switch the system's off.
func TestCheckGeminiMerged(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		file string
		want []string
	}{
		"empty":            {`{}`, nil},
		"unrelated":        {`{"hooksConfig": {"disabled": ["lint"]}}`, nil},
		"by name":          {`{"hooksConfig": {"disabled": ["mitrity"]}}`, []string{"hooksConfig.disabled[0]"}},
		"by command":       {`{"hooksConfig": {"disabled": ["x", "` + hookPath + ` gemini"]}}`, []string{"hooksConfig.disabled[1]"}},
		"hooks system off": {`{"hooksConfig": {"enabled": false}}`, []string{"hooksConfig.enabled"}},
	} {
		got := CheckGemini([]byte(tc.file), linuxPlain, false)
		var paths []string
		for _, f := range got {
			paths = append(paths, f.Path)
		}
		assert.Check(t, is.DeepEqual(paths, tc.want), "%s: %v", name, got)
	}
}

// TestCheckCodexUserHooks: a user's hooks.json is reported as unmanaged
// (skipped by codex exec until trusted), whatever it holds.
func TestCheckCodexUserHooks(t *testing.T) {
	t.Parallel()
	user := `{"hooks": {"PreToolUse": [{"matcher": "^Bash$", "hooks": [{"type": "command", "command": "` + hookPath + ` codex", "timeout": 660}]}]}}`
	got := CheckCodex([]byte(user), linuxPlain)
	assert.Assert(t, is.Len(got, 1))
	assert.Check(t, is.Contains(got[0].Problem, "skips an untrusted one"))
	assert.Check(t, is.Contains(got[0].Fix, CodexRequirementsPath))
}

// TestCodexRules: the rendered rule passes its check; a rule that lets
// anything else out of Codex's sandbox, a missing relay rule under
// routing and a rule the check cannot read are each a finding.
func TestCodexRules(t *testing.T) {
	t.Parallel()
	out, err := RenderCodexRules(linuxRouting)
	assert.NilError(t, err)
	assert.Check(t, is.Contains(string(out), `pattern = ["`+hookPath+`", "exec", "--socket", "/run/mitrity/admission.sock"]`))
	assert.Check(t, is.Len(CheckCodexRules(out, linuxRouting), 0), "%s", out)
	plain, err := RenderCodexRules(linuxPlain)
	assert.NilError(t, err)
	assert.Check(t, is.Contains(string(plain), `pattern = ["`+hookPath+`", "exec"]`))
	wider := `prefix_rule(pattern = ["bash"], decision = "allow")` + "\n"
	for name, tc := range map[string]struct {
		file string
		want string
	}{
		"another allow":     {string(out) + wider, "allows \"bash\""},
		"no relay rule":     {wider, "allows \"bash\""},
		"only a prompt":     {`prefix_rule(pattern = ["git", "push"], decision = "prompt")` + "\n", "no rule allows the relay"},
		"unreadable":        {string(out) + "prefix_rule(decision = \"allow\")\n", "cannot be read"},
		"allow outside one": {string(out) + "host_rule(\"allow\")\n", "outside a prefix_rule"},
	} {
		got := CheckCodexRules([]byte(tc.file), linuxRouting)
		var all []string
		for _, f := range got {
			all = append(all, f.Problem)
		}
		assert.Check(t, len(got) > 0 && is.Contains(strings.Join(all, "\n"), tc.want)().Success(), "%s: %v", name, got)
	}
}
