package framework

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"
)

const relay = "/usr/local/bin/mitrity-hook exec mt1_0123456789abcdefABCDEF_-xyz"

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// render is the golden form of an answer: exit code, stderr, stdout.
func render(stdout []byte, exit int, stderr string) string {
	return fmt.Sprintf("exit: %d\nstderr: %q\nstdout: %s", exit, stderr, stdout)
}

// TestAnswerGolden renders each framework's answer for each decision over
// payloads shaped as the framework sends them. Regenerate with
// `go test ./framework -update`.
func TestAnswerGolden(t *testing.T) {
	t.Parallel()
	allow := Verdict{Decision: Allow, Reason: "Allowed by rule allow-tests (policy_rule)."}
	route := Verdict{Decision: Allow, Reason: "Allowed by rule allow-tests (policy_rule); routed to the governed shell.", Command: relay}
	deny := Verdict{Decision: Deny, Reason: "Denied by rule no-force-push (policy_rule): force-pushing main is not allowed."}
	ask := Verdict{Decision: Ask, Reason: "Held by rule hold-git-push (policy_rule): pushing needs a person's approval."}
	askRoute := Verdict{Decision: Ask, Reason: ask.Reason, Command: relay}
	tests := []struct {
		name    string
		fixture string
		v       Verdict
	}{
		{"claude-allow", "claude/bash", allow},
		{"claude-allow-rewrite", "claude/bash", route},
		{"claude-allow-rewrite-subagent", "claude/bash-subagent", route},
		{"claude-deny", "claude/bash", deny},
		{"claude-deny-no-reason", "claude/bash", Verdict{Decision: Deny}},
		{"claude-ask", "claude/bash", ask},
		{"claude-ask-rewrite", "claude/bash", askRoute},
		{"claude-defer", "claude/write", Verdict{}},
		{"claude-rewrite-not-shell", "claude/write", route},
		{"codex-allow", "codex/bash", allow},
		{"codex-allow-rewrite", "codex/bash", route},
		{"codex-deny", "codex/bash", deny},
		{"codex-ask", "codex/bash", askRoute},
		{"codex-defer", "codex/apply_patch", Verdict{}},
		{"gemini-allow", "gemini/shell", allow},
		{"gemini-allow-rewrite", "gemini/shell", route},
		{"gemini-deny", "gemini/shell", deny},
		{"gemini-ask", "gemini/shell", ask},
		{"gemini-ask-rewrite", "gemini/shell", askRoute},
		{"gemini-defer", "gemini/mcp", Verdict{}},
		{"opencode-allow", "opencode/bash", allow},
		{"opencode-allow-rewrite", "opencode/bash", route},
		{"opencode-deny", "opencode/bash", deny},
		{"opencode-ask", "opencode/bash", askRoute},
		{"opencode-defer", "opencode/read", Verdict{}},
		{"unknown-decision", "claude/bash", Verdict{Decision: Decision(9)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := Parse(Name(strings.Split(tc.fixture, "/")[0]), fixture(t, tc.fixture))
			assert.NilError(t, err)
			stdout, exit, stderr := Answer(c, tc.v)
			assert.Check(t, exit == 0 || exit == 2, "exit %d", exit)
			if len(stdout) > 0 {
				assert.Check(t, json.Valid(stdout), "stdout is not JSON: %s", stdout)
			}
			golden.Assert(t, render(stdout, exit, stderr), "answers/"+tc.name+".golden")
		})
	}
}

func TestBlockGolden(t *testing.T) {
	t.Parallel()
	for _, n := range append(Names, "cursor") {
		t.Run(string(n), func(t *testing.T) {
			t.Parallel()
			stdout, exit, stderr := Block(n, "Mitrity could not reach the gateway at /run/mitrity/admission.sock (connection refused), so the call is blocked.")
			assert.Equal(t, exit, 2)
			golden.Assert(t, render(stdout, exit, stderr), "answers/block-"+string(n)+".golden")
		})
	}
}

// rewritten extracts the input an answer rewrites the call to.
func rewritten(t *testing.T, n Name, stdout []byte) map[string]json.RawMessage {
	t.Helper()
	var out struct {
		HookSpecificOutput struct {
			UpdatedInput map[string]json.RawMessage `json:"updatedInput"`
			ToolInput    map[string]json.RawMessage `json:"tool_input"`
		} `json:"hookSpecificOutput"`
		Args map[string]json.RawMessage `json:"args"`
	}
	assert.NilError(t, json.Unmarshal(stdout, &out))
	switch n {
	case Gemini:
		return out.HookSpecificOutput.ToolInput
	case OpenCode:
		return out.Args
	}
	return out.HookSpecificOutput.UpdatedInput
}

// TestAnswerRewriteKeepsInput: a rewrite is the whole input as received,
// byte for byte, with only "command" replaced.
func TestAnswerRewriteKeepsInput(t *testing.T) {
	t.Parallel()
	for _, f := range []string{"claude/bash", "claude/bash-subagent", "codex/bash", "gemini/shell", "gemini/shell-directory", "opencode/bash", "opencode/bash-workdir"} {
		t.Run(f, func(t *testing.T) {
			t.Parallel()
			n := Name(strings.Split(f, "/")[0])
			c, err := Parse(n, fixture(t, f))
			assert.NilError(t, err)
			stdout, exit, _ := Answer(c, Verdict{Decision: Allow, Command: relay})
			assert.Equal(t, exit, 0)
			got := rewritten(t, n, stdout)
			assert.DeepEqual(t, sortedKeys(got), sortedKeys(c.Input))
			for k, v := range c.Input {
				if k == "command" {
					var cmd string
					assert.NilError(t, json.Unmarshal(got[k], &cmd))
					assert.Equal(t, cmd, relay)
					continue
				}
				assert.Equal(t, string(got[k]), string(v), "field %s", k)
			}
		})
	}
}

// TestAnswerNeverRunsAHeldCall: where the framework cannot ask, a held call
// is denied (Codex would run a call answered "ask"; OpenCode cannot prompt).
func TestAnswerNeverRunsAHeldCall(t *testing.T) {
	t.Parallel()
	for _, f := range []string{"codex/bash", "opencode/bash"} {
		n := Name(strings.Split(f, "/")[0])
		c, err := Parse(n, fixture(t, f))
		assert.NilError(t, err)
		for _, v := range []Verdict{{Decision: Ask}, {Decision: Ask, Command: relay}} {
			stdout, exit, _ := Answer(c, v)
			assert.Equal(t, exit, 0)
			assert.Check(t, is.Contains(string(stdout), `"deny"`), "%s: %s", f, stdout)
			assert.Check(t, !strings.Contains(string(stdout), relay), "%s: a denial carries no rewrite: %s", f, stdout)
		}
	}
}

func TestAnswerRefusesBadRewrites(t *testing.T) {
	t.Parallel()
	c, err := Parse(Claude, fixture(t, "claude/bash"))
	assert.NilError(t, err)
	for name, cmd := range map[string]string{
		"nul":      "a\x00b",
		"too long": strings.Repeat("x", MaxCommand+1),
		"not utf8": "\xff",
	} {
		_, exit, stderr := Answer(c, Verdict{Decision: Allow, Command: cmd})
		assert.Equal(t, exit, 2, name)
		assert.Check(t, is.Contains(stderr, "rewritten command is unusable"), name)
	}
	// A deny never rewrites, even when a command is given.
	stdout, exit, _ := Answer(c, Verdict{Decision: Deny, Reason: "no", Command: relay})
	assert.Equal(t, exit, 0)
	assert.Check(t, !strings.Contains(string(stdout), "updatedInput"))
	// A call that is not a parsed framework call is blocked.
	_, exit, _ = Answer(Call{}, Verdict{Decision: Allow})
	assert.Equal(t, exit, 2)
}

func TestCleanReason(t *testing.T) {
	t.Parallel()
	assert.Equal(t, cleanReason("  a\x00b\x1b[31mc\r\n\td \xff "), "a b [31mc \n\td \uFFFD")
	long := cleanReason(strings.Repeat("é", MaxReason))
	assert.Check(t, len(long) <= MaxReason, len(long))
	assert.Check(t, strings.HasSuffix(long, "…"))
	_, _, stderr := Block(Codex, "   ")
	assert.Equal(t, stderr, "Mitrity could not check this call, so it is blocked.\n")
}
