package framework

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// fixture reads testdata/payloads/<name>.json, a payload shaped exactly as the
// framework sends it.
func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "payloads", name+".json"))
	assert.NilError(t, err)
	return b
}

func TestParseFixtures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		fixture string
		fw      Name
		want    Call // Input is checked separately
		keys    []string
	}{
		{
			fixture: "claude/bash", fw: Claude,
			want: Call{
				Framework: Claude, SessionID: "8c35adc1-5d1e-4b7f-9a2c-3f1e0b6d4a91",
				ToolUseID: "toolu_01DUxq7Lr3W9YhYzJkQv5c8B", PermissionMode: "default",
				TranscriptPath: "/home/dev/.claude/projects/-home-dev-src-app/8c35adc1-5d1e-4b7f-9a2c-3f1e0b6d4a91.jsonl",
				Cwd:            "/home/dev/src/app", ToolName: "Bash", Shell: true,
				Command: `git push origin main && echo "pushed <main>"`,
			},
			keys: []string{"command", "description", "run_in_background", "timeout"},
		},
		{
			fixture: "claude/bash-subagent", fw: Claude,
			want: Call{
				Framework: Claude, SessionID: "8c35adc1-5d1e-4b7f-9a2c-3f1e0b6d4a91",
				ToolUseID: "toolu_01P9sLk2Vb7Xq4Wn8Rt3Yz6M", PermissionMode: "acceptEdits",
				TranscriptPath: "/home/dev/.claude/projects/-home-dev-src-app/8c35adc1-5d1e-4b7f-9a2c-3f1e0b6d4a91.jsonl",
				Cwd:            "/home/dev/src/app/services/api", ToolName: "Bash", Shell: true,
				Command: "npm run build",
			},
			keys: []string{"command", "dangerouslyDisableSandbox", "description", "run_in_background"},
		},
		{
			fixture: "claude/write", fw: Claude,
			want: Call{
				Framework: Claude, SessionID: "8c35adc1-5d1e-4b7f-9a2c-3f1e0b6d4a91",
				ToolUseID: "toolu_01Ab3Cd5Ef7Gh9Ij1Kl3Mn5O", PermissionMode: "default",
				TranscriptPath: "/home/dev/.claude/projects/-home-dev-src-app/8c35adc1-5d1e-4b7f-9a2c-3f1e0b6d4a91.jsonl",
				Cwd:            "/home/dev/src/app", ToolName: "Write",
			},
			keys: []string{"content", "file_path"},
		},
		{
			fixture: "codex/bash", fw: Codex,
			want: Call{
				Framework: Codex, SessionID: "019a3c2e-7f41-7b52-9e0d-5c8a1b2f3d4e",
				ToolUseID: "call_Vb1pQ8xYz2Lk3Mn4Op5Qr6St", PermissionMode: "default",
				TranscriptPath: "/home/dev/.codex/sessions/2026/10/02/rollout-2026-10-02T09-14-03-019a3c2e-7f41-7b52-9e0d-5c8a1b2f3d4e.jsonl",
				Cwd:            "/home/dev/src/app", ToolName: "Bash", Shell: true,
				Command: "npm test -- --runInBand",
			},
			keys: []string{"command"},
		},
		{
			fixture: "codex/bash-no-transcript", fw: Codex,
			want: Call{
				Framework: Codex, SessionID: "019a3c2e-7f41-7b52-9e0d-5c8a1b2f3d4e",
				ToolUseID: "call_Hq2wE3rT4yU5iO6pA7sD8fG9", PermissionMode: "bypassPermissions",
				Cwd: "/home/dev/src/app", ToolName: "Bash", Shell: true, Command: "rm -rf build",
			},
			keys: []string{"command"},
		},
		{
			// apply_patch carries a "command" too; it is not the shell tool.
			fixture: "codex/apply_patch", fw: Codex,
			want: Call{
				Framework: Codex, SessionID: "019a3c2e-7f41-7b52-9e0d-5c8a1b2f3d4e",
				ToolUseID: "call_Zx9cV8bN7mL6kJ5hG4fD3sA2", PermissionMode: "default",
				TranscriptPath: "/home/dev/.codex/sessions/2026/10/02/rollout-2026-10-02T09-14-03-019a3c2e-7f41-7b52-9e0d-5c8a1b2f3d4e.jsonl",
				Cwd:            "/home/dev/src/app", ToolName: "apply_patch",
			},
			keys: []string{"command"},
		},
		{
			fixture: "gemini/shell", fw: Gemini,
			want: Call{
				Framework: Gemini, SessionID: "d2f1c9a0-3b4e-4c5d-8e6f-7a8b9c0d1e2f",
				TranscriptPath: "/home/dev/.gemini/tmp/5f0e3a1b9c8d7e6f/chats/session-2026-10-02T09-14-d2f1c9a0.json",
				Cwd:            "/home/dev/src/app/services/api", ToolName: "run_shell_command", Shell: true,
				Command: "git status --short",
			},
			keys: []string{"command", "description", "dir_path", "is_background"},
		},
		{
			fixture: "gemini/shell-directory", fw: Gemini,
			want: Call{
				Framework: Gemini, SessionID: "d2f1c9a0-3b4e-4c5d-8e6f-7a8b9c0d1e2f",
				TranscriptPath: "/home/dev/.gemini/tmp/5f0e3a1b9c8d7e6f/chats/session-2026-10-02T09-14-d2f1c9a0.json",
				Cwd:            "/home/dev/src/lib", ToolName: "run_shell_command", Shell: true,
				Command: "make lint",
			},
			keys: []string{"command", "directory"},
		},
		{
			fixture: "gemini/mcp", fw: Gemini,
			want: Call{
				Framework: Gemini, SessionID: "d2f1c9a0-3b4e-4c5d-8e6f-7a8b9c0d1e2f",
				TranscriptPath: "/home/dev/.gemini/tmp/5f0e3a1b9c8d7e6f/chats/session-2026-10-02T09-14-d2f1c9a0.json",
				Cwd:            "/home/dev/src/app", ToolName: "mcp__tickets__create_ticket",
			},
			keys: []string{"priority", "title"},
		},
		{
			fixture: "opencode/bash", fw: OpenCode,
			want: Call{
				Framework: OpenCode, SessionID: "ses_6a1f3c2e9ffe1Q2w3E4r5T6y7U",
				ToolUseID: "toolu_01HkP3vN8qRtY6uW2xZ5aB7c", Cwd: "/home/dev/src/app",
				ToolName: "bash", Shell: true, Command: "go test ./...",
			},
			keys: []string{"command", "description", "timeout"},
		},
		{
			fixture: "opencode/bash-workdir", fw: OpenCode,
			want: Call{
				Framework: OpenCode, SessionID: "ses_6a1f3c2e9ffe1Q2w3E4r5T6y7U",
				ToolUseID: "toolu_01Jm4Nb5Vc6Xz7Lk8Jh9Gf0D", Cwd: "/home/dev/src/lib",
				ToolName: "bash", Shell: true, Command: "ls -la",
			},
			keys: []string{"command", "description", "workdir"},
		},
		{
			fixture: "opencode/read", fw: OpenCode,
			want: Call{
				Framework: OpenCode, SessionID: "ses_6a1f3c2e9ffe1Q2w3E4r5T6y7U",
				ToolUseID: "toolu_01Qw2Er3Ty4Ui5Op6As7Df8G", Cwd: "/home/dev/src/app", ToolName: "read",
			},
			keys: []string{"filePath"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.fixture, func(t *testing.T) {
			t.Parallel()
			got, err := Parse(tc.fw, fixture(t, tc.fixture))
			assert.NilError(t, err)
			keys := sortedKeys(got.Input)
			got.Input = nil
			assert.DeepEqual(t, got, tc.want)
			assert.DeepEqual(t, keys, tc.keys)
		})
	}
}

// TestParseInputVerbatim: Input keeps each value byte for byte, so a rewrite
// re-emits what the framework sent.
func TestParseInputVerbatim(t *testing.T) {
	t.Parallel()
	c, err := Parse(Claude, []byte(`{"session_id":"s","cwd":"/w","hook_event_name":"PreToolUse","tool_name":"Bash",
		"tool_input":{"command":"ls","timeout":1.50e3,"x_future":{"a":[1, 2]}}}`))
	assert.NilError(t, err)
	assert.Equal(t, string(c.Input["timeout"]), "1.50e3")
	assert.Equal(t, string(c.Input["x_future"]), `{"a":[1, 2]}`)
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	claude := func(mutate func(m map[string]any)) string {
		m := map[string]any{
			"session_id": "s1", "transcript_path": "/t.jsonl", "cwd": "/w", "permission_mode": "default",
			"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "toolu_1",
			"tool_input": map[string]any{"command": "ls", "description": "list"},
		}
		mutate(m)
		b, err := json.Marshal(m)
		assert.NilError(t, err)
		return string(b)
	}
	input := func(cmd any) func(map[string]any) {
		return func(m map[string]any) { m["tool_input"] = map[string]any{"command": cmd} }
	}
	tests := []struct {
		name    string
		fw      Name
		payload string
		want    string
	}{
		{"unknown framework", "cursor", `{}`, `unknown framework "cursor"`},
		{"empty", Claude, ``, "not valid JSON"},
		{"not json", Claude, `session_id=1`, "not valid JSON"},
		{"array", Claude, `[{"session_id":"s"}]`, "want a JSON object, got an array"},
		{"two objects", Claude, claude(func(map[string]any) {}) + `{}`, "data after the object"},
		{"truncated", Claude, `{"session_id":"s"`, "not valid JSON"},
		{"invalid utf-8", Claude, "{\"session_id\":\"\xff\"}", "not valid UTF-8"},
		{"too large", Claude, `{"pad":"` + strings.Repeat("a", MaxPayload) + `"}`, "over the 1048576-byte limit"},
		{"duplicate key", Claude, `{"session_id":"a","session_id":"b"}`, `key "session_id" appears twice`},
		{"duplicate command", Claude, `{"session_id":"s","cwd":"/w","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls","command":"rm -rf /"}}`, `tool_input: key "command" appears twice`},
		{"missing event", Claude, claude(func(m map[string]any) { delete(m, "hook_event_name") }), "hook_event_name: missing"},
		{"wrong event", Claude, claude(func(m map[string]any) { m["hook_event_name"] = "PostToolUse" }), `hook_event_name: "PostToolUse": mitrity-hook claude answers only PreToolUse`},
		{"gemini event for claude", Claude, string(fixture(t, "gemini/shell")), `"BeforeTool": mitrity-hook claude answers only PreToolUse`},
		{"claude event for gemini", Gemini, string(fixture(t, "claude/bash")), `"PreToolUse": mitrity-hook gemini answers only BeforeTool`},
		{"missing session", Claude, claude(func(m map[string]any) { delete(m, "session_id") }), "session_id: missing"},
		{"empty session", Claude, claude(func(m map[string]any) { m["session_id"] = "" }), "session_id: empty"},
		{"numeric session", Claude, claude(func(m map[string]any) { m["session_id"] = 7 }), "session_id: want a string, got a number"},
		{"nul in session", Claude, claude(func(m map[string]any) { m["session_id"] = "a\x00b" }), "session_id: contains a NUL byte"},
		{"missing cwd", Claude, claude(func(m map[string]any) { delete(m, "cwd") }), "cwd: missing"},
		{"relative cwd", Claude, claude(func(m map[string]any) { m["cwd"] = "src/app" }), `cwd: "src/app" is not an absolute path`},
		{"missing tool", Claude, claude(func(m map[string]any) { delete(m, "tool_name") }), "tool_name: missing"},
		{"null transcript for claude is typed", Claude, claude(func(m map[string]any) { m["transcript_path"] = 3 }), "transcript_path: want a string"},
		{"tool_use_id object", Claude, claude(func(m map[string]any) { m["tool_use_id"] = map[string]any{} }), "tool_use_id: want a string, got an object"},
		{"missing input", Claude, claude(func(m map[string]any) { delete(m, "tool_input") }), "tool_input: missing"},
		{"input not object", Claude, claude(func(m map[string]any) { m["tool_input"] = "ls" }), "tool_input: want a JSON object, got a string"},
		{"missing command", Claude, claude(input(nil)), "tool_input.command: want a string, got null"},
		{"no command", Claude, claude(func(m map[string]any) { m["tool_input"] = map[string]any{"description": "x"} }), "tool_input.command: missing"},
		{"command array", Claude, claude(input([]string{"rm", "-rf"})), "tool_input.command: want a string, got an array"},
		{"empty command", Claude, claude(input("")), "tool_input.command: empty"},
		{"blank command", Claude, claude(input(" \t\n")), "tool_input.command: empty"},
		{"nul command", Claude, claude(input("ls\x00rm")), "tool_input.command: contains a NUL byte"},
		{"long command", Claude, claude(input(strings.Repeat("a", MaxCommand+1))), "tool_input.command: 65537 bytes, over the 65536-byte limit"},
		{"codex exec_command argv", Codex, strings.Replace(string(fixture(t, "codex/bash")), `"tool_name":"Bash","tool_input":{"command":"npm test -- --runInBand"}`, `"tool_name":"exec_command","tool_input":{"command":["bash","-lc","ls"]}`, 1), "tool_input.command: want a string, got an array"},
		{"codex wrong event", Codex, strings.Replace(string(fixture(t, "codex/bash")), `"PreToolUse"`, `"PermissionRequest"`, 1), `"PermissionRequest": mitrity-hook codex answers only PreToolUse`},
		{"gemini dir_path number", Gemini, strings.Replace(string(fixture(t, "gemini/shell")), `"services/api"`, `7`, 1), "tool_input.dir_path: want a string, got a number"},
		{"gemini missing cwd", Gemini, strings.Replace(string(fixture(t, "gemini/shell")), `"cwd":`, `"cwdx":`, 1), "cwd: missing"},
		{"opencode no version", OpenCode, strings.Replace(string(fixture(t, "opencode/bash")), `"version":1,`, ``, 1), "version: missing"},
		{"opencode other version", OpenCode, strings.Replace(string(fixture(t, "opencode/bash")), `"version":1`, `"version":2`, 1), "version: 2: want 1"},
		{"opencode null args", OpenCode, strings.Replace(string(fixture(t, "opencode/bash")), `"args":{"command":"go test ./...","timeout":120000,"description":"Run the Go tests"}`, `"args":null`, 1), "args: want a JSON object, got null"},
		{"opencode missing callID", OpenCode, strings.Replace(string(fixture(t, "opencode/bash")), `"callID"`, `"callId"`, 1), "callID: missing"},
		{"opencode relative directory", OpenCode, strings.Replace(string(fixture(t, "opencode/bash")), `"/home/dev/src/app"`, `"app"`, 1), `directory: "app" is not an absolute path`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(tc.fw, []byte(tc.payload))
			assert.ErrorContains(t, err, tc.want)
			assert.Check(t, errors.Is(err, ErrPayload))
			var pe *PayloadError
			assert.Check(t, errors.As(err, &pe))
			assert.Check(t, is.Contains(err.Error(), string(tc.fw)+" hook payload"))
		})
	}
}

func TestNames(t *testing.T) {
	t.Parallel()
	agents := map[Name]string{}
	for _, n := range Names {
		assert.Check(t, n.Valid())
		agents[n] = n.Agent()
	}
	assert.DeepEqual(t, agents, map[Name]string{Claude: "claude-code", Codex: "codex", Gemini: "gemini-cli", OpenCode: "opencode"})
	assert.Check(t, !Name("cursor").Valid())
	assert.Equal(t, Name("cursor").Agent(), "")
	assert.Check(t, Claude.CanAsk() && Gemini.CanAsk() && !Codex.CanAsk() && !OpenCode.CanAsk())
}

// TestParseCodexShellNames: a Codex shell-like tool reported by its own name
// is still the shell.
func TestParseCodexShellNames(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"Bash", "shell", "local_shell", "shell_command", "exec_command", "container.exec", "unified_exec"} {
		payload := strings.Replace(string(fixture(t, "codex/bash")), `"tool_name":"Bash"`, `"tool_name":"`+tool+`"`, 1)
		c, err := Parse(Codex, []byte(payload))
		assert.NilError(t, err, tool)
		assert.Check(t, c.Shell, tool)
		assert.Equal(t, c.Command, "npm test -- --runInBand", tool)
	}
	c, err := Parse(Codex, fixture(t, "codex/apply_patch"))
	assert.NilError(t, err)
	assert.Check(t, !c.Shell)
}
