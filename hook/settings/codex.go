package settings

import (
	"encoding/json"
	"fmt"

	"github.com/pelletier/go-toml/v2"

	"github.com/mitrity/mitrity/hook/framework"
)

// CodexRequirementsPath is where Codex CLI reads the administrator's
// requirements: hooks listed there are managed (trusted by policy, not
// skippable by the user), and allow_managed_hooks_only drops every other.
const CodexRequirementsPath = "/etc/codex/requirements.toml"

type codexRequirements struct {
	AllowManagedHooksOnly bool       `toml:"allow_managed_hooks_only"`
	Hooks                 codexHooks `toml:"hooks"`
}

type codexHooks struct {
	PreToolUse []codexMatcher `toml:"PreToolUse"`
}

type codexMatcher struct {
	Matcher string      `toml:"matcher"`
	Hooks   []codexHook `toml:"hooks"`
}

type codexHook struct {
	Type    string `toml:"type"`
	Command string `toml:"command"`
	Timeout int    `toml:"timeout"` // seconds
}

// RenderCodex renders Codex CLI's requirements (CodexRequirementsPath):
// `mitrity-hook codex` as the managed PreToolUse hook of every shell-like
// tool (Codex names them all Bash), waiting as long as a held call may,
// and managed hooks only. A hook in ~/.codex/hooks.json instead is skipped
// by `codex exec` until someone trusts it in Codex's interactive UI.
func RenderCodex(o Options) ([]byte, error) {
	o, err := o.normalize()
	if err != nil {
		return nil, err
	}
	r := codexRequirements{AllowManagedHooksOnly: true, Hooks: codexHooks{PreToolUse: []codexMatcher{{
		Matcher: "^" + framework.Codex.ShellTool() + "$",
		Hooks:   []codexHook{{Type: "command", Command: o.frameworkCommand(framework.Codex), Timeout: o.HookTimeoutSeconds}},
	}}}}
	body, err := toml.Marshal(r)
	if err != nil {
		return nil, err
	}
	head := "# Codex CLI requirements (" + CodexRequirementsPath + "), rendered by mitrity-hook render-settings --framework codex.\n" +
		"# Managed hooks run without being trusted in Codex's UI and cannot be turned off by the user; see docs/frameworks.md.\n"
	return append([]byte(head), body...), nil
}

// CheckCodex audits a Codex CLI requirements file for what RenderCodex
// writes: the Mitrity hook managed for Bash and waiting long enough, and
// no hook but managed ones.
func CheckCodex(data []byte, o Options) []Finding {
	o, err := o.normalize()
	if err != nil {
		return []Finding{{Problem: "The check cannot run: " + err.Error() + ".", Fix: "pass valid options (os, hook path, socket)."}}
	}
	var hooksJSON struct {
		Hooks map[string]any `json:"hooks"`
	}
	if json.Unmarshal(data, &hooksJSON) == nil && hooksJSON.Hooks != nil {
		// ~/.codex/hooks.json or <repo>/.codex/hooks.json: unmanaged.
		return []Finding{{Problem: "This is a user or project hooks.json, not the managed requirements: Codex CLI runs a hook from it only after someone trusts it in Codex's interactive UI (/hooks), and `codex exec` skips an untrusted one without a word, so shell calls run unjudged; a user can also edit or remove it.",
			Fix: "install the hook in " + CodexRequirementsPath + " (mitrity-hook render-settings --framework codex > " + CodexRequirementsPath + ") and check that file."}}
	}
	var root map[string]any
	if err := toml.Unmarshal(data, &root); err != nil {
		return []Finding{{Problem: fmt.Sprintf("The file is not valid TOML (%v), so Codex CLI refuses or ignores it and applies none of these rules.", err), Fix: "render it again with mitrity-hook render-settings --framework codex."}}
	}
	c := &checker{s: root, o: o}
	if c.get("allow_managed_hooks_only") != true {
		c.add("allow_managed_hooks_only", "is not true: user and project hooks also run, once trusted, and one can answer for a call after Mitrity's did.", "set allow_managed_hooks_only = true.")
	}
	want := o.frameworkCommand(framework.Codex)
	found := c.eachHook("PreToolUse", framework.Codex.ShellTool(), want, func(path string, hook map[string]any) {
		if t, ok := hook["timeout"].(int64); !ok || t < int64(o.HookTimeoutSeconds) {
			c.add(path+".timeout", fmt.Sprintf("is %v: Codex CLI stops waiting for a held call before it is decided, and then runs it (want at least %d seconds).", describeSeconds(hook["timeout"]), o.HookTimeoutSeconds), fmt.Sprintf("set timeout = %d.", o.HookTimeoutSeconds))
		}
	})
	if !found {
		c.add("hooks.PreToolUse", fmt.Sprintf("has no command hook %q for Bash: Codex CLI runs shell calls without asking Mitrity.", want), "render the file with mitrity-hook render-settings --framework codex.")
	}
	return c.findings
}

func describeSeconds(v any) string {
	if t, ok := v.(int64); ok {
		return fmt.Sprintf("%d seconds", t)
	}
	return "unset (Codex's default)"
}
