package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRenderSettings: the rendered managed settings pass their own check,
// and a drifted copy fails it naming the drift.
func TestRenderSettings(t *testing.T) {
	t.Parallel()
	hook := binPath(t, "mitrity-hook")
	dir := t.TempDir()
	for _, args := range [][]string{{"--os", "linux"}, {"--os", "linux", "--routing"}, {"--os", "darwin", "--routing", "--socket", "/run/mitrity-dev/admission.sock"}} {
		out, err := exec.Command(hook, append([]string{"render-settings", "--framework", "claude"}, args...)...).Output()
		must(t, err)
		var s map[string]any
		must(t, json.Unmarshal(out, &s))
		if field(s, "sandbox", "enabled") != true || field(s, "sandbox", "allowUnsandboxedCommands") != false {
			t.Fatalf("%v: %s", args, out)
		}
		file := filepath.Join(dir, "managed-settings.json")
		must(t, os.WriteFile(file, out, 0o644))
		check := exec.Command(hook, append([]string{"render-settings", "--check", file}, args...)...)
		if b, err := check.CombinedOutput(); err != nil || !strings.Contains(string(b), "compliant") {
			t.Fatalf("%v: the rendered settings fail their own check: %v\n%s", args, err, b)
		}
		// Drift: Claude Code's own sandbox turned off.
		drift := bytes.Replace(out, []byte(`"enabled": true`), []byte(`"enabled": false`), 1)
		must(t, os.WriteFile(file, drift, 0o644))
		b, err := exec.Command(hook, append([]string{"render-settings", "--check", file}, args...)...).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(b), "sandbox.enabled") {
			t.Fatalf("%v: drift must be reported: %v\n%s", args, err, b)
		}
	}
}

// TestRenderSettingsCodexGemini: Codex's requirements and Gemini's system
// settings, rendered by the binary, pass its own --check; a drifted copy
// fails naming the key; a Gemini user file that switches the hook off by
// name fails --check --merged.
func TestRenderSettingsCodexGemini(t *testing.T) {
	t.Parallel()
	hook := binPath(t, "mitrity-hook")
	dir := t.TempDir()
	for _, tc := range []struct{ fw, old, new, key string }{
		{"codex", "allow_managed_hooks_only = true", "allow_managed_hooks_only = false", "allow_managed_hooks_only"},
		{"gemini", `"enabled": true`, `"enabled": false`, "hooksConfig.enabled"},
	} {
		out, err := exec.Command(hook, "render-settings", "--framework", tc.fw, "--hook-path", "/usr/bin/mitrity-hook").Output()
		must(t, err)
		file := filepath.Join(dir, tc.fw)
		must(t, os.WriteFile(file, out, 0o644))
		b, err := exec.Command(hook, "render-settings", "--framework", tc.fw, "--hook-path", "/usr/bin/mitrity-hook", "--check", file).CombinedOutput()
		if err != nil || !strings.Contains(string(b), "compliant") {
			t.Fatalf("%s: the rendered file fails its own check: %v\n%s\n%s", tc.fw, err, b, out)
		}
		must(t, os.WriteFile(file, bytes.Replace(out, []byte(tc.old), []byte(tc.new), 1), 0o644))
		b, err = exec.Command(hook, "render-settings", "--framework", tc.fw, "--hook-path", "/usr/bin/mitrity-hook", "--check", file).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(b), tc.key) {
			t.Fatalf("%s: drift must be reported: %v\n%s", tc.fw, err, b)
		}
	}
	user := filepath.Join(dir, "user-settings.json")
	must(t, os.WriteFile(user, []byte(`{"hooksConfig": {"disabled": ["mitrity"]}}`), 0o644))
	b, err := exec.Command(hook, "render-settings", "--framework", "gemini", "--hook-path", "/usr/bin/mitrity-hook", "--check", user, "--merged").CombinedOutput()
	if err == nil || !strings.Contains(string(b), "hooksConfig.disabled[0]") {
		t.Fatalf("a user file switching the hook off: %v\n%s", err, b)
	}
}

// nodeBinary is Node, from PATH or the e2e tools scripts/deps installs.
func nodeBinary(t *testing.T) string {
	if p, err := exec.LookPath("node"); err == nil {
		return p
	}
	if p, err := filepath.Abs(".tools/node_modules/.bin/node"); err == nil {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if os.Getenv("MITRITY_REQUIRE_NODE") == "1" {
		t.Fatal("node is required (MITRITY_REQUIRE_NODE=1) and was not found")
	}
	t.Skip("node not found")
	return ""
}

// openCodeDriver loads the rendered plugin as OpenCode (>= 1.3.4) does and
// calls tool.execute.before once for a bash call in DIR.
const openCodeDriver = `
import { pathToFileURL } from "node:url";
const [plugin, dir, command] = process.argv.slice(2);
const mod = await import(pathToFileURL(plugin).href);
const hooks = await mod.default.server({ directory: dir, worktree: dir });
const output = { args: { command, description: "d" } };
try {
  await hooks["tool.execute.before"]({ tool: "bash", sessionID: "ses_e2e", callID: "call_1" }, output);
  console.log(JSON.stringify({ threw: false, args: output.args }));
} catch (e) {
  console.log(JSON.stringify({ threw: true, message: String(e && e.message) }));
}
`

// TestOpenCodePluginLive drives the rendered OpenCode plugin under Node
// through the real hook to a running gateway: a denial throws, a routed
// allow rewrites args.command to the relay, and the relay runs it.
func TestOpenCodePluginLive(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the hook world runs a root gateway with run_as")
	}
	node := nodeBinary(t)
	t.Parallel()
	hw := newHookWorld(t, 300)
	plugin := filepath.Join(hw.dir, "mitrity.mjs")
	out, err := exec.Command(hw.hook, "render-opencode-plugin", "--hook-path", hw.hook).Output()
	must(t, err)
	must(t, os.WriteFile(plugin, out, 0o644))
	driver := filepath.Join(hw.dir, "driver.mjs")
	must(t, os.WriteFile(driver, []byte(openCodeDriver), 0o644))
	call := func(agent, command string) map[string]any {
		cmd := exec.Command(node, driver, plugin, hw.ws, command)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "MITRITY_ADMISSION_SOCKET=" + hw.sock, "MITRITY_AGENT=" + agent}
		b, err := cmd.Output()
		if err != nil {
			t.Fatalf("node: %v", err)
		}
		var r map[string]any
		must(t, json.Unmarshal(b, &r))
		return r
	}
	if r := call("opencode", "cat ~/.ssh/id_rsa"); r["threw"] != true || !strings.Contains(r["message"].(string), "policy_rule") {
		t.Fatalf("a denial throws with the reason: %v", r)
	}
	if r := call("opencode", "ls"); r["threw"] != false || field(r, "args", "command") != "ls" {
		t.Fatalf("framework routing passes the call unchanged: %v", r)
	}
	r := call("routed-opencode", "echo via-opencode")
	relay, _ := field(r, "args", "command").(string)
	if r["threw"] != false || !strings.HasPrefix(relay, hw.hook+" exec ") || field(r, "args", "description") != "d" {
		t.Fatalf("a routed allow rewrites the command only: %v", r)
	}
	if res := hw.relay(t, nil, relay); res.code != 0 || res.stdout != "via-opencode\n" {
		t.Fatalf("relay: %+v", res)
	}
	// The gateway down: the plugin throws, the call does not run.
	cmd := exec.Command(node, driver, plugin, hw.ws, "ls")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "MITRITY_ADMISSION_SOCKET=" + filepath.Join(hw.dir, "nowhere.sock")}
	b, err := cmd.Output()
	must(t, err)
	if !strings.Contains(string(b), `"threw":true`) {
		t.Fatalf("an unreachable gateway must block: %s", b)
	}
}
