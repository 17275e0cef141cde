package rules

import (
	"encoding/json"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern"
)

func mcpCall(args string) govern.Call {
	return govern.Call{Agent: "claude", Tool: "fs__read_file", ActionType: "mcp:fs__read_file", Surface: "mcp",
		Server: "fs", UpstreamTool: "read_file", Arguments: []byte(args)}
}

func TestInputFromUpstreamCall(t *testing.T) {
	t.Parallel()
	in := InputFrom(mcpCall(`{"path":"/etc/passwd","opts":{"lines":[1,2]},"force":true}`), nil)
	assert.Equal(t, in.Server, "fs")
	assert.Equal(t, in.UpstreamTool, "read_file")
	assert.Equal(t, in.Action, "mcp:fs__read_file")
	assert.DeepEqual(t, in.Arguments, map[string]any{"path": "/etc/passwd", "opts": map[string]any{"lines": []any{1.0, 2.0}}, "force": true})
	assert.DeepEqual(t, in.Commands, []Command{})

	// Arguments that are not a JSON object give the rules none.
	for _, args := range []string{``, `[1,2]`, `"x"`, `{"a":`, `null`} {
		assert.Check(t, is.Len(InputFrom(mcpCall(args), nil).Arguments, 0), "%q", args)
	}
	// A shell call has no server and no arguments.
	sh := InputFrom(govern.Call{Agent: "a", Tool: govern.ToolShellExecute, ActionType: govern.ActionShellExecute, Command: "ls"}, nil)
	assert.Equal(t, sh.Server, "")
	assert.Check(t, sh.Arguments == nil)
}

// TestUpstreamVariables: server, upstream_tool and arguments as CEL sees
// them, for an upstream call and for a shell command.
func TestUpstreamVariables(t *testing.T) {
	t.Parallel()
	up := InputFrom(mcpCall(`{"path":"/etc/shadow","depth":3,"tags":["a","b"],"opts":{"recursive":true},"none":null}`), nil)
	shell := analyze(t, "ls /etc")
	tests := []struct {
		when       string
		up, shell  govern.Outcome
		errorsOnSh bool
	}{
		{`server == "fs"`, govern.Deny, govern.Allow, false},
		{`upstream_tool == "read_file"`, govern.Deny, govern.Allow, false},
		{`server == "fs" && arguments.path.startsWith("/etc")`, govern.Deny, govern.Allow, false},
		{`server == "fs" && arguments.path.startsWith("/srv")`, govern.Allow, govern.Allow, false},
		{`"path" in arguments && under(arguments.path, "/etc")`, govern.Deny, govern.Allow, false},
		{`has(arguments.path) && arguments.path.matches("shadow$")`, govern.Deny, govern.Allow, false},
		{`arguments.depth > 2`, govern.Deny, govern.Deny, true},
		{`has(arguments.depth) && arguments.depth > 2.5`, govern.Deny, govern.Allow, false},
		{`"b" in arguments.tags`, govern.Deny, govern.Deny, true},
		{`has(arguments.opts) && arguments.opts.recursive`, govern.Deny, govern.Allow, false},
		{`has(arguments.none) && arguments.none == null`, govern.Deny, govern.Allow, false},
		{`arguments.size() == 5`, govern.Deny, govern.Allow, false},
		{`arguments.exists(k, k == "path")`, govern.Deny, govern.Allow, false},
		{`action.startsWith("mcp:fs__")`, govern.Deny, govern.Allow, false},
		{`commands.size() == 0 && server != ""`, govern.Deny, govern.Allow, false},
	}
	for _, tt := range tests {
		s := mustCompile(t, Rule{Name: "r", When: tt.when, Action: "deny"})
		d, _ := s.Evaluate(up)
		assert.Check(t, is.Equal(d.Outcome, tt.up), "upstream call: %s: %+v", tt.when, d)
		d, m := s.Evaluate(shell)
		assert.Check(t, is.Equal(d.Outcome, tt.shell), "shell call: %s: %+v", tt.when, d)
		// A rule that reads an argument without has() cannot finish on a
		// call without it, and a rule that cannot finish denies.
		assert.Check(t, is.Equal(len(m) > 0 && m[0].Err != nil, tt.errorsOnSh), "shell call: %s: %+v", tt.when, m)
	}
}

// TestUpstreamPathRule: the documented way to keep a server's writes
// under a directory. startsWith compares text, so /srv/data/out/../x
// passes it; under cleans the path first, and a relative path (an
// upstream call has no cwd) is under no absolute directory.
func TestUpstreamPathRule(t *testing.T) {
	t.Parallel()
	s := mustCompile(t, Rule{Name: "out", When: `server == "fs" && !(has(arguments.path) && under(arguments.path, "/srv/data/out"))`, Action: "deny"})
	naive := mustCompile(t, Rule{Name: "naive", When: `server == "fs" && !(has(arguments.path) && arguments.path.startsWith("/srv/data/out/"))`, Action: "deny"})
	for _, tc := range []struct {
		path  string
		allow bool
	}{
		{"/srv/data/out/a.txt", true},
		{"/srv/data/out/sub/../b.txt", true},
		{"/srv/data/out//c.txt", true},
		{"/srv/data/out/../x", false},
		{"/srv/data/out/../../../etc/passwd", false},
		{"/srv/data/outside/x", false},
		{"out/a.txt", false},
		{"../srv/data/out/a.txt", false},
	} {
		in := InputFrom(mcpCall(`{"path":`+strconvQuote(tc.path)+`}`), nil)
		d, _ := s.Evaluate(in)
		assert.Check(t, is.Equal(d.Outcome == govern.Allow, tc.allow), "under: %s: %+v", tc.path, d)
		if tc.path == "/srv/data/out/../x" {
			d, _ := naive.Evaluate(in)
			assert.Check(t, is.Equal(d.Outcome, govern.Allow), "startsWith admits %s (the caveat the docs state)", tc.path)
		}
	}
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }
