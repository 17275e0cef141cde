package settings

import (
	"encoding/json"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"
)

const hookPath = "/usr/local/bin/mitrity-hook"

var (
	linuxRouting  = Options{OS: "linux", HookPath: hookPath, Socket: "/run/mitrity/admission.sock", Routing: true}
	linuxPlain    = Options{OS: "linux", HookPath: hookPath}
	darwinRouting = Options{OS: "darwin", HookPath: hookPath, Socket: "/var/run/mitrity/admission.sock", Routing: true, HookTimeoutSeconds: 960}
)

// TestRenderClaudeGolden renders the managed settings for each host shape;
// each rendering passes its own check. Regenerate with
// `go test ./settings -update`.
func TestRenderClaudeGolden(t *testing.T) {
	t.Parallel()
	for name, o := range map[string]Options{
		"linux-routing":  linuxRouting,
		"linux-plain":    linuxPlain,
		"darwin-routing": darwinRouting,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b, err := RenderClaude(o)
			assert.NilError(t, err)
			assert.Check(t, json.Valid(b))
			golden.Assert(t, string(b), "claude/rendered-"+name+".json")
			assert.DeepEqual(t, CheckClaude(b, o), []Finding(nil))
		})
	}
}

func TestRenderClaudeShape(t *testing.T) {
	t.Parallel()
	get := func(o Options) map[string]any {
		b, err := RenderClaude(o)
		assert.NilError(t, err)
		var m map[string]any
		assert.NilError(t, json.Unmarshal(b, &m))
		return m
	}
	sandbox := func(m map[string]any) map[string]any { return m["sandbox"].(map[string]any) }
	network := func(m map[string]any) map[string]any { return sandbox(m)["network"].(map[string]any) }

	// Linux routing: the relay alone leaves Claude Code's sandbox; no socket
	// is opened (Linux ignores allowUnixSockets).
	m := get(linuxRouting)
	assert.DeepEqual(t, sandbox(m)["excludedCommands"], []any{"/usr/local/bin/mitrity-hook exec *"})
	assert.Check(t, is.Nil(network(m)["allowUnixSockets"]))
	assert.Equal(t, network(m)["allowAllUnixSockets"], false)
	assert.DeepEqual(t, m["env"], map[string]any{"MITRITY_ADMISSION_SOCKET": "/run/mitrity/admission.sock"})

	// macOS routing: the one socket, nothing excluded.
	m = get(darwinRouting)
	assert.DeepEqual(t, network(m)["allowUnixSockets"], []any{"/var/run/mitrity/admission.sock"})
	assert.Check(t, is.Nil(sandbox(m)["excludedCommands"]))
	hook := m["hooks"].(map[string]any)["PreToolUse"].([]any)[0].(map[string]any)["hooks"].([]any)[0].(map[string]any)
	assert.Equal(t, hook["timeout"], 960.0)

	// Without routing Claude Code's sandbox gets no opening at all, and a
	// default socket is not pinned.
	m = get(linuxPlain)
	assert.Check(t, is.Nil(sandbox(m)["excludedCommands"]))
	assert.Check(t, is.Nil(network(m)["allowUnixSockets"]))
	assert.Check(t, is.Nil(m["env"]))

	// Never a catch-all.
	perms := m["permissions"].(map[string]any)
	for _, list := range []string{"allow", "ask", "deny"} {
		for _, r := range perms[list].([]any) {
			assert.Check(t, r != "Bash(gh *)" && r != "Bash(*)" && r != "Bash", "%s has %v", list, r)
		}
	}
}

func TestRenderClaudeOptions(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		o    Options
		want string
	}{
		"no os":             {Options{HookPath: hookPath}, `os "": want linux or darwin`},
		"windows":           {Options{OS: "windows", HookPath: hookPath}, `os "windows"`},
		"relative hook":     {Options{OS: "linux", HookPath: "mitrity-hook"}, "not absolute"},
		"hook with space":   {Options{OS: "linux", HookPath: "/opt/my tools/mitrity-hook"}, "holds ' '"},
		"relative socket":   {Options{OS: "linux", HookPath: hookPath, Socket: "run/a.sock"}, "not a clean absolute path"},
		"darwin no socket":  {Options{OS: "darwin", HookPath: hookPath, Routing: true}, "give the socket path"},
		"timeout too short": {Options{OS: "linux", HookPath: hookPath, HookTimeoutSeconds: 5}, "hook timeout 5 s: want 30 to 86400"},
	} {
		_, err := RenderClaude(tc.o)
		assert.ErrorContains(t, err, tc.want, name)
		f := CheckClaude([]byte(`{}`), tc.o)
		assert.Assert(t, len(f) == 1, name)
		assert.Check(t, is.Contains(f[0].Problem, tc.want), name)
	}
}
