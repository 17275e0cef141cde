package framework

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// stubHook is a stand-in for mitrity-hook: it records its arguments and stdin
// and prints the canned answer STUB_MODE names. The plugin is what is tested.
const stubHook = `#!/bin/sh
printf '%s\n' "$*" > "$STUB_DIR/argv"
cat > "$STUB_DIR/stdin"
case "$STUB_MODE" in
allow) printf '{"decision":"allow"}\n' ;;
rewrite) printf '{"decision":"allow","args":{"command":"/opt/mitrity/bin/mitrity-hook exec mt1_TICKET_0123456789","description":"Run the Go tests","timeout":120000}}\n' ;;
deny) printf '{"decision":"deny","reason":"Denied by rule no-curl (policy_rule)."}\n' ;;
defer) printf '{"decision":"defer"}\n' ;;
block) printf '{"decision":"deny","reason":"from stdout"}\n'; echo "Mitrity could not reach the gateway." >&2; exit 2 ;;
block-stdout) printf '{"decision":"deny","reason":"Payload refused."}\n'; exit 2 ;;
crash) echo "panic: boom" >&2; exit 1 ;;
garbage) echo "not json" ;;
silent) ;;
ask) printf '{"decision":"ask","reason":"held"}\n' ;;
rewrite-no-command) printf '{"decision":"allow","args":{"description":"d"}}\n' ;;
killed) kill -9 $$ ;;
esac
`

type pluginResult struct {
	Threw   bool           `json:"threw"`
	Message string         `json:"message"`
	Args    map[string]any `json:"args"`
}

// TestOpenCodePlugin loads the rendered plugin with node, through each
// OpenCode loader's module checks, and calls its hook against stubHook.
// It skips without node unless MITRITY_REQUIRE_NODE=1.
func TestOpenCodePlugin(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("MITRITY_REQUIRE_NODE") == "1" {
			t.Fatal("node not found and MITRITY_REQUIRE_NODE=1")
		}
		t.Skip("node not found")
	}
	driver, err := filepath.Abs(filepath.Join("testdata", "opencode", "driver.mjs"))
	assert.NilError(t, err)

	dir := t.TempDir()
	hook := filepath.Join(dir, "mitrity-hook")
	assert.NilError(t, os.WriteFile(hook, []byte(stubHook), 0o755))
	plugins := filepath.Join(dir, "plugins")
	assert.NilError(t, os.Mkdir(plugins, 0o755))
	// OpenCode loads .js plugins as ES modules; tell node the same.
	assert.NilError(t, os.WriteFile(filepath.Join(plugins, "package.json"), []byte(`{"type":"module"}`), 0o644))
	plugin := filepath.Join(plugins, "mitrity.js")
	assert.NilError(t, os.WriteFile(plugin, OpenCodePlugin(hook), 0o644))
	missing := filepath.Join(plugins, "missing.js")
	assert.NilError(t, os.WriteFile(missing, OpenCodePlugin(filepath.Join(dir, "no-such-hook")), 0o644))

	args := map[string]any{"command": "go test ./...", "timeout": 120000.0, "description": "Run the Go tests"}
	argsJSON, err := json.Marshal(args)
	assert.NilError(t, err)

	tests := []struct {
		name, mode, loader, tool string
		plugin                   string
		threw                    string // substring of the thrown message; "" = no throw
		command                  string // args.command after the hook; "" = unchanged
		noCall                   bool   // the hook must not run
	}{
		{name: "allow", mode: "allow", loader: "v1", tool: "bash"},
		{name: "defer", mode: "defer", loader: "v1", tool: "bash"},
		{name: "rewrite", mode: "rewrite", loader: "v1", tool: "bash", command: "/opt/mitrity/bin/mitrity-hook exec mt1_TICKET_0123456789"},
		{name: "rewrite legacy loader", mode: "rewrite", loader: "legacy", tool: "bash", command: "/opt/mitrity/bin/mitrity-hook exec mt1_TICKET_0123456789"},
		{name: "rewrite opencode 2", mode: "rewrite", loader: "v2", tool: "shell", command: "/opt/mitrity/bin/mitrity-hook exec mt1_TICKET_0123456789"},
		{name: "deny", mode: "deny", loader: "v1", tool: "bash", threw: "Denied by rule no-curl (policy_rule)."},
		{name: "deny legacy loader", mode: "deny", loader: "legacy", tool: "bash", threw: "Denied by rule no-curl (policy_rule)."},
		{name: "deny opencode 2", mode: "deny", loader: "v2", tool: "bash", threw: "Denied by rule no-curl (policy_rule)."},
		{name: "exit 2 uses stderr", mode: "block", loader: "v1", tool: "bash", threw: "Mitrity could not reach the gateway."},
		{name: "exit 2 without stderr", mode: "block-stdout", loader: "v1", tool: "bash", threw: "Payload refused."},
		{name: "exit 1", mode: "crash", loader: "v1", tool: "bash", threw: "exited with 1: panic: boom), so it is blocked"},
		{name: "killed", mode: "killed", loader: "v1", tool: "bash", threw: "was killed by SIGKILL"},
		{name: "garbage", mode: "garbage", loader: "v1", tool: "bash", threw: "unreadable answer"},
		{name: "silent", mode: "silent", loader: "v1", tool: "bash", threw: "unreadable answer"},
		{name: "unknown decision", mode: "ask", loader: "v1", tool: "bash", threw: "does not understand"},
		{name: "rewrite without command", mode: "rewrite-no-command", loader: "v1", tool: "bash", threw: "rewrite without a command"},
		{name: "hook missing", mode: "allow", loader: "v1", tool: "bash", plugin: missing, threw: "could not run", noCall: true},
		{name: "other tools are not checked", mode: "deny", loader: "v1", tool: "read", noCall: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			stubDir := t.TempDir()
			p := plugin
			if tc.plugin != "" {
				p = tc.plugin
			}
			cmd := exec.Command(node, driver, p, tc.loader, tc.tool, string(argsJSON))
			cmd.Env = append(os.Environ(), "STUB_DIR="+stubDir, "STUB_MODE="+tc.mode)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			assert.NilError(t, err, "driver: %s", stderr.String())
			var res pluginResult
			assert.NilError(t, json.Unmarshal(out, &res), "driver output %q", out)

			if tc.threw != "" {
				assert.Check(t, res.Threw, "the hook let the call through: %+v", res)
				assert.Check(t, is.Contains(res.Message, tc.threw))
			} else {
				assert.Check(t, !res.Threw, "the hook threw: %s", res.Message)
				want := map[string]any{"command": "go test ./...", "timeout": 120000.0, "description": "Run the Go tests"}
				if tc.command != "" {
					want["command"] = tc.command
				}
				assert.DeepEqual(t, res.Args, want)
			}

			stdin, err := os.ReadFile(filepath.Join(stubDir, "stdin"))
			if tc.noCall {
				assert.Check(t, os.IsNotExist(err), "the hook ran")
				return
			}
			assert.NilError(t, err)
			argv, err := os.ReadFile(filepath.Join(stubDir, "argv"))
			assert.NilError(t, err)
			assert.Equal(t, strings.TrimSpace(string(argv)), "opencode")
			// What the plugin sent is exactly what Parse reads.
			c, err := Parse(OpenCode, stdin)
			assert.NilError(t, err, "plugin sent %s", stdin)
			assert.Equal(t, c.ToolName, tc.tool)
			assert.Equal(t, c.SessionID, "ses_6a1f3c2e9ffe1Q2w3E4r5T6y7U")
			assert.Equal(t, c.ToolUseID, "toolu_01HkP3vN8qRtY6uW2xZ5aB7c")
			assert.Equal(t, c.Cwd, "/home/dev/src/app")
			assert.Equal(t, c.Command, "go test ./...")
			assert.DeepEqual(t, sortedKeys(c.Input), []string{"command", "description", "timeout"})
		})
	}
}

func TestOpenCodePluginRender(t *testing.T) {
	t.Parallel()
	js := string(OpenCodePlugin(`/opt/mitrity/bin/mitrity-hook`))
	assert.Check(t, is.Contains(js, `const HOOK = "/opt/mitrity/bin/mitrity-hook";`))
	assert.Check(t, is.Contains(js, `const PROTOCOL = 1;`))
	assert.Check(t, is.Contains(js, `const TIMEOUT_MS = 660000;`))
	assert.Check(t, !strings.Contains(js, "__MITRITY_"))
	// A path is embedded as a string literal, never as code.
	js = string(OpenCodePlugin(`/x/"; process.exit(0); "`))
	assert.Check(t, is.Contains(js, `const HOOK = "/x/\"; process.exit(0); \"";`))
}
