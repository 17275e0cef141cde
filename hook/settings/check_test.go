package settings

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"
)

type settingsMap = map[string]any

func obj(m settingsMap, keys ...string) settingsMap {
	for _, k := range keys {
		m = m[k].(settingsMap)
	}
	return m
}

func firstHook(m settingsMap) settingsMap {
	return obj(m, "hooks")["PreToolUse"].([]any)[0].(settingsMap)["hooks"].([]any)[0].(settingsMap)
}

// edit changes the rule list at permissions.<list>.
func edit(list string, f func([]any) []any) func(settingsMap) {
	return func(m settingsMap) {
		p := obj(m, "permissions")
		p[list] = f(p[list].([]any))
	}
}

func without(rules ...string) func([]any) []any {
	return func(l []any) []any {
		return slices.DeleteFunc(l, func(r any) bool { return slices.Contains(rules, r.(string)) })
	}
}

func with(rules ...string) func([]any) []any {
	return func(l []any) []any {
		for _, r := range rules {
			l = append(l, r)
		}
		return l
	}
}

// want is a finding expected at path whose problem contains problem.
type want struct{ path, problem string }

// TestCheckClaudeDrift: each fixture in testdata/claude/drift is a rendered
// file with one drift (written from the mutation with -update), and the check
// reports exactly that drift.
func TestCheckClaudeDrift(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		o      Options
		mutate func(settingsMap)
		want   []want
	}{
		{"no-hook", linuxRouting, func(m settingsMap) { delete(m, "hooks") },
			[]want{{"hooks.PreToolUse", `has no command hook running "/usr/local/bin/mitrity-hook claude" for the Bash tool`}}},
		{"hook-other-tool", linuxRouting, func(m settingsMap) {
			obj(m, "hooks")["PreToolUse"].([]any)[0].(settingsMap)["matcher"] = "Write|Edit"
		}, []want{{"hooks.PreToolUse", "has no command hook"}}},
		{"hook-other-binary", linuxRouting, func(m settingsMap) { firstHook(m)["command"] = "/usr/bin/mitrity-hook claude" },
			[]want{{"hooks.PreToolUse", "has no command hook"}}},
		{"hook-short-timeout", linuxRouting, func(m settingsMap) { firstHook(m)["timeout"] = 60 },
			[]want{{"hooks.PreToolUse[0].hooks[0].timeout", "is 60 seconds: Claude Code stops waiting for a held call before it is decided, and then runs it (want at least 660)"}}},
		{"hook-no-timeout", linuxRouting, func(m settingsMap) { delete(firstHook(m), "timeout") },
			[]want{{"hooks.PreToolUse[0].hooks[0].timeout", "is unset, so Claude Code gives the hook 600 seconds"}}},
		{"hook-async", linuxRouting, func(m settingsMap) { firstHook(m)["async"] = true },
			[]want{{"hooks.PreToolUse[0].hooks[0].async", "runs the call without waiting"}}},
		{"hook-fails-open", linuxRouting, func(m settingsMap) { delete(firstHook(m), "onFailure") },
			[]want{{"hooks.PreToolUse[0].hooks[0].onFailure", "lets the call run"}}},
		{"hook-wildcard-matcher", linuxRouting, func(m settingsMap) {
			obj(m, "hooks")["PreToolUse"].([]any)[0].(settingsMap)["matcher"] = ".*"
		}, nil},
		{"hooks-not-managed-only", linuxRouting, func(m settingsMap) { delete(m, "allowManagedHooksOnly") },
			[]want{{"allowManagedHooksOnly", "can rewrite it after Mitrity's hook did"}}},
		{"all-hooks-disabled", linuxRouting, func(m settingsMap) { m["disableAllHooks"] = true },
			[]want{{"disableAllHooks", "no shell call reaches Mitrity"}}},
		{"env-other-socket", linuxRouting, func(m settingsMap) { obj(m, "env")[SocketEnv] = "/tmp/mitrity.sock" },
			[]want{{"env.MITRITY_ADMISSION_SOCKET", `is "/tmp/mitrity.sock", not "/run/mitrity/admission.sock"`}}},
		{"sandbox-disabled", linuxRouting, func(m settingsMap) { obj(m, "sandbox")["enabled"] = false },
			[]want{{"sandbox.enabled", "without its sandbox"}}},
		{"sandbox-optional", linuxRouting, func(m settingsMap) { delete(obj(m, "sandbox"), "failIfUnavailable") },
			[]want{{"sandbox.failIfUnavailable", "cannot start"}}},
		{"unsandboxed-allowed", linuxRouting, func(m settingsMap) { obj(m, "sandbox")["allowUnsandboxedCommands"] = true },
			[]want{{"sandbox.allowUnsandboxedCommands", "dangerouslyDisableSandbox"}}},
		{"unsandboxed-by-default", linuxRouting, func(m settingsMap) { delete(obj(m, "sandbox"), "allowUnsandboxedCommands") },
			[]want{{"sandbox.allowUnsandboxedCommands", "defaults to true"}}},
		{"all-unix-sockets", darwinRouting, func(m settingsMap) { obj(m, "sandbox", "network")["allowAllUnixSockets"] = true },
			[]want{{"sandbox.network.allowAllUnixSockets", "every Unix socket"}}},
		{"darwin-socket-missing", darwinRouting, func(m settingsMap) { delete(obj(m, "sandbox", "network"), "allowUnixSockets") },
			[]want{{"sandbox.network.allowUnixSockets", `does not name "/var/run/mitrity/admission.sock"`}}},
		{"linux-relay-missing", linuxRouting, func(m settingsMap) { delete(obj(m, "sandbox"), "excludedCommands") },
			[]want{{"sandbox.excludedCommands", `does not list "/usr/local/bin/mitrity-hook exec *"`}}},
		{"excluded-gh", linuxRouting, func(m settingsMap) {
			s := obj(m, "sandbox")
			s["excludedCommands"] = append(s["excludedCommands"].([]any), "gh *")
		}, []want{{"sandbox.excludedCommands", `lists "gh *"`}}},
		{"bypass-available", linuxRouting, func(m settingsMap) { delete(obj(m, "permissions"), "disableBypassPermissionsMode") },
			[]want{{"permissions.disableBypassPermissionsMode", "skips the ask rules"}}},
		{"git-push-not-asked", linuxRouting, edit("ask", without("Bash(git push)", "Bash(git push *)")),
			[]want{{"permissions.ask", `has no rule for "git push"`}}},
		{"git-global-push-not-asked", linuxRouting, edit("ask", without("Bash(git * push)", "Bash(git * push *)")),
			[]want{{"permissions.ask", `Claude Code runs "git -C /work push origin" without asking`}}},
		{"gh-merge-not-asked", linuxRouting, edit("ask", without("Bash(gh pr merge)", "Bash(gh pr merge *)")),
			[]want{{"permissions.ask", `has no rule for "gh pr merge"`}}},
		{"gh-merge-bare-not-asked", linuxRouting, edit("ask", without("Bash(gh pr merge)")),
			[]want{{"permissions.ask", `Claude Code runs "gh pr merge" without asking`}}},
		{"gh-merge-allowed", linuxRouting, edit("allow", with("Bash(gh pr merge *)")),
			[]want{{"permissions.allow", `"Bash(gh pr merge *)" allows state-mutating commands (gh pr merge)`}}},
		{"gh-catch-all-allowed", linuxRouting, edit("allow", with("Bash(gh *)")),
			[]want{{"permissions.allow", `"Bash(gh *)" allows state-mutating commands (gh pr create, gh pr merge, gh pr close, gh pr comment and`}}},
		{"everything-allowed", linuxRouting, edit("allow", with("Bash")),
			[]want{{"permissions.allow", `"Bash" allows state-mutating commands (git push,`}}},
		{"gh-catch-all-asked", linuxRouting, edit("ask", with("Bash(gh:*)")),
			[]want{{"permissions.ask", `"Bash(gh:*)" is a catch-all that also matches read-only commands (gh pr view, gh pr list`}}},
		{"legacy-prefix-rules", linuxRouting, edit("ask", func(l []any) []any {
			var out []any
			for _, r := range l {
				s := r.(string)
				if strings.HasSuffix(s, " *)") && !strings.HasPrefix(s, "Bash(git * push") {
					out = append(out, strings.TrimSuffix(s, " *)")+":*)")
				} else if !strings.HasSuffix(s, " *)") {
					continue
				} else {
					out = append(out, s)
				}
			}
			return out
		}), nil},
		{"push-denied-instead", linuxRouting, func(m settingsMap) {
			edit("ask", without("Bash(git push)", "Bash(git push *)"))(m)
			edit("deny", with("Bash(git push:*)"))(m)
		}, nil},
		{"ssh-readable", linuxRouting, edit("deny", without("Read(~/.ssh/**)")),
			[]want{{"permissions.deny", `lacks "Read(~/.ssh/**)": the model can read ~/.ssh/** with its file tools and sandboxed commands`}}},
		{"gh-token-allowed", linuxRouting, edit("deny", without("Bash(gh auth token)", "Bash(gh auth token *)")),
			[]want{{"permissions.deny", `lacks "Bash(gh auth token)"`}, {"permissions.deny", `lacks "Bash(gh auth token *)"`}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base, err := RenderClaude(tc.o)
			assert.NilError(t, err)
			var m settingsMap
			assert.NilError(t, json.Unmarshal(base, &m))
			tc.mutate(m)
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			assert.NilError(t, enc.Encode(m))
			fixture := filepath.Join("claude", "drift", tc.name+".json")
			golden.Assert(t, buf.String(), fixture)

			b, err := os.ReadFile(filepath.Join("testdata", fixture))
			assert.NilError(t, err)
			got := CheckClaude(b, tc.o)
			assert.Equal(t, len(got), len(tc.want), "findings: %v", got)
			for i := range min(len(got), len(tc.want)) {
				assert.Check(t, is.Equal(got[i].Path, tc.want[i].path))
				assert.Check(t, is.Contains(got[i].Problem, tc.want[i].problem))
				assert.Check(t, got[i].Fix != "", "finding without a fix: %v", got[i])
			}
		})
	}
}

// TestCheckClaudeSeedStyle audits a project-style settings file of the kind
// the agent-isolation reference setup uses (a sandbox block, gh excluded from
// it, a catch-all gh ask): every gap is named.
func TestCheckClaudeSeedStyle(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("testdata", "claude", "seed-style.json"))
	assert.NilError(t, err)
	got := CheckClaude(b, linuxRouting)
	paths := map[string]int{}
	var text []string
	for _, f := range got {
		paths[f.Path]++
		text = append(text, f.String())
	}
	all := strings.Join(text, "\n")
	for _, w := range []string{
		`hooks.PreToolUse: has no command hook running "/usr/local/bin/mitrity-hook claude"`,
		"allowManagedHooksOnly: is not true",
		"sandbox.failIfUnavailable: is not true",
		"sandbox.allowUnsandboxedCommands: is not false",
		`sandbox.excludedCommands: lists "gh *"`,
		`sandbox.excludedCommands: does not list "/usr/local/bin/mitrity-hook exec *"`,
		`permissions.ask: "Bash(gh *)" is a catch-all`,
		`permissions.allow: "Bash(gh pr *)" allows state-mutating commands (gh pr create, gh pr merge`,
		`permissions.deny: lacks "Read(~/.aws/**)"`,
		"env.MITRITY_ADMISSION_SOCKET",
	} {
		assert.Check(t, is.Contains(all, w))
	}
	// Covered by the catch-all ask, gh writes are not missing; a bare
	// `git push` is, since `Bash(git push *)` may not match it.
	assert.Check(t, !strings.Contains(all, `has no rule for "gh pr merge"`), all)
	assert.Check(t, is.Contains(all, `Claude Code runs "git push" without asking`))
	// Denials the file does have are not reported.
	assert.Check(t, !strings.Contains(all, `lacks "Read(~/.ssh/**)"`), all)
}

func TestCheckClaudeUnreadable(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct{ file, want string }{
		"not json":   {"{", "not valid JSON"},
		"not object": {`["Bash"]`, "not a JSON object"},
	} {
		got := CheckClaude([]byte(tc.file), linuxRouting)
		assert.Assert(t, len(got) == 1, name)
		assert.Check(t, is.Contains(got[0].Problem, tc.want), name)
		assert.Check(t, is.Contains(got[0].Fix, "render-settings"), name)
	}
	// Wrong types are findings, never a panic.
	got := CheckClaude([]byte(`{"hooks":{"PreToolUse":[1,{"matcher":3,"hooks":"x"},{"hooks":[null,{"type":"command","command":7}]}]},"sandbox":[],"permissions":{"ask":"Bash(git push)","allow":[1,null],"deny":{}}}`), linuxRouting)
	assert.Check(t, len(got) > 10)
}

func TestRuleMatching(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		rule, cmd string
		want      bool
	}{
		{"Bash(gh pr merge *)", "gh pr merge 12", true},
		{"Bash(gh pr merge *)", "gh pr merge", true}, // lenient only
		{"Bash(gh pr merge *)", "gh pr mergex", false},
		{"Bash(gh pr merge)", "gh pr merge", true},
		{"Bash(gh pr merge)", "gh pr merge 12", false},
		{"Bash(gh pr merge:*)", "gh pr merge 12", true},
		{"Bash(gh pr merge:*)", "gh pr merge", true},
		{"Bash(gh pr merge:*)", "gh pr mergex", false},
		{"Bash(gh *)", "gh pr view 1", true},
		{"Bash(gh*)", "ghost", true},
		{"Bash(git * push *)", "git -C /work push origin", true},
		{"Bash(git * push *)", "git push origin", false},
		{"Bash(*)", "anything", true},
		{"Bash", "anything", true},
		{"Bash(  gh   pr  view  *)", "gh pr view 3", true},
		{"Read(~/.ssh/**)", "gh pr view", false},
	} {
		rules := parseRules([]string{tc.rule})
		got := len(rules) == 1 && rules[0].matches(tc.cmd, lenient)
		assert.Check(t, got == tc.want, "%s vs %q: got %v", tc.rule, tc.cmd, got)
	}
	// Strict matching does not take a trailing " *" to cover the bare command.
	assert.Check(t, !parseRules([]string{"Bash(gh pr merge *)"})[0].matches("gh pr merge", strict))
	assert.Check(t, parseRules([]string{"Bash(gh pr merge:*)"})[0].matches("gh pr merge", strict))
	for _, tc := range []struct {
		matcher string
		want    bool
	}{{"Bash", true}, {"", true}, {"*", true}, {"Edit|Bash", true}, {"Bas", false}, {"Ba.*", true}, {"^(Bash)$", true}, {"Write", false}, {"(", false}} {
		assert.Check(t, matcherMatches(tc.matcher, "Bash") == tc.want, tc.matcher)
	}
}

// TestCheckClaudeSandboxTools: on Linux the check looks for what Claude
// Code's own sandbox needs on the host it runs on; a missing one is a
// finding naming the package, and none is reported when both are there.
func TestCheckClaudeSandboxTools(t *testing.T) {
	t.Parallel()
	rendered, err := RenderClaude(linuxRouting)
	assert.NilError(t, err)
	for name, tc := range map[string]struct {
		have []string
		want []string
	}{
		"both":     {[]string{"bwrap", "socat"}, nil},
		"no socat": {[]string{"bwrap"}, []string{"socat"}},
		"neither":  {nil, []string{"bubblewrap", "socat"}},
		"no bwrap": {[]string{"socat"}, []string{"bubblewrap"}},
	} {
		o := linuxRouting
		o.LookPath = func(bin string) (string, error) {
			if slices.Contains(tc.have, bin) {
				return "/usr/bin/" + bin, nil
			}
			return "", os.ErrNotExist
		}
		got := CheckClaude(rendered, o)
		assert.Check(t, is.Len(got, len(tc.want)), "%s: %v", name, got)
		for i, pkg := range tc.want {
			if i < len(got) {
				assert.Check(t, is.Contains(got[i].Fix, "apt-get install "+pkg), name)
				assert.Check(t, is.Contains(got[i].Problem, "refuses to start"), name)
			}
		}
	}
}
