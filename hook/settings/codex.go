package settings

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/mitrity/mitrity/hook/framework"
)

// CodexRequirementsPath is where Codex CLI reads the administrator's
// requirements: hooks listed there are managed (trusted by policy, not
// skippable by the user), and allow_managed_hooks_only drops every other.
const CodexRequirementsPath = "/etc/codex/requirements.toml"

type codexRequirements struct {
	AllowManagedHooksOnly bool `toml:"allow_managed_hooks_only"`
	// Features pins codex_hooks on. Hooks are a feature of Codex CLI, and
	// a user's ~/.codex/config.toml that turns it off (codex_hooks =
	// false, or its old name hooks = false) would run no hook at all, the
	// managed one included; a requirement is the user's to obey.
	Features codexFeatures `toml:"features"`
	Hooks    codexHooks    `toml:"hooks"`
}

type codexFeatures struct {
	CodexHooks bool `toml:"codex_hooks"`
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
	r := codexRequirements{AllowManagedHooksOnly: true, Features: codexFeatures{CodexHooks: true}, Hooks: codexHooks{PreToolUse: []codexMatcher{{
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
	if c.get("features", "codex_hooks") != true {
		c.add("features.codex_hooks", "is not true: a user's ~/.codex/config.toml that turns Codex's hooks feature off (codex_hooks = false, or hooks = false) runs no hook, the managed one included, and every shell call runs unjudged.", "set codex_hooks = true under [features].")
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

// CodexRulesPath is the exec-policy file of Codex's system layer that lets
// the relay out of Codex's sandbox under routing.
const CodexRulesPath = "/etc/codex/rules/mitrity.rules"

// codexRelayPrefix is the argv prefix of every relay line the hook writes
// for Codex: the hook, exec, and the pinned socket when there is one.
func (o Options) codexRelayPrefix() []string {
	p := []string{o.HookPath, "exec"}
	if o.Socket != "" {
		p = append(p, "--socket", o.Socket)
	}
	return p
}

// RenderCodexRules renders CodexRulesPath: one prefix_rule that runs the
// relay, and nothing else, outside Codex's sandbox. Codex's Linux sandbox
// refuses every Unix socket connect, so without it every routed call exits
// 126. Codex lifts its sandbox only when the whole command is that prefix
// (a compound command stays sandboxed), and the hook denies any model
// command that names mitrity-hook (docs/frameworks.md).
func RenderCodexRules(o Options) ([]byte, error) {
	o, err := o.normalize()
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString("# Codex CLI exec policy (" + CodexRulesPath + "), rendered by mitrity-hook render-settings --framework codex --part rules.\n")
	b.WriteString("# Only the relay runs outside Codex's sandbox: the gateway runs the judged command in its own.\n")
	b.WriteString("prefix_rule(\n    pattern = [")
	for i, a := range o.codexRelayPrefix() {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", a)
	}
	b.WriteString("],\n    decision = \"allow\",\n    justification = \"the Mitrity relay: the gateway runs the judged command in its own sandbox\",\n)\n")
	return []byte(b.String()), nil
}

var (
	codexRule     = regexp.MustCompile(`(?s)prefix_rule\s*\((.*?)\)\s*(?:\n|$)`)
	codexPattern  = regexp.MustCompile(`(?s)pattern\s*=\s*\[(.*?)\]`)
	codexDecision = regexp.MustCompile(`decision\s*=\s*"([a-z_]+)"`)
	codexString   = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"`)
)

// CheckCodexRules audits an exec-policy file: under routing the relay's
// rule must be there, and no other rule may allow a command (an allowed
// command runs outside Codex's sandbox, unjudged by it). A rule it cannot
// read is a finding too.
func CheckCodexRules(data []byte, o Options) []Finding {
	o, err := o.normalize()
	if err != nil {
		return []Finding{{Problem: "The check cannot run: " + err.Error() + ".", Fix: "pass valid options (os, hook path, socket)."}}
	}
	var out []Finding
	want := strings.Join(o.codexRelayPrefix(), "\x00")
	found := false
	for i, m := range codexRule.FindAllSubmatch(data, -1) {
		body := m[1]
		pm, dm := codexPattern.FindSubmatch(body), codexDecision.FindSubmatch(body)
		if pm == nil || dm == nil {
			out = append(out, Finding{Path: fmt.Sprintf("prefix_rule[%d]", i), Problem: "cannot be read as a pattern and a decision, so what it lets out of Codex's sandbox is unknown.", Fix: "render the file with mitrity-hook render-settings --framework codex --part rules."})
			continue
		}
		var argv []string
		for _, s := range codexString.FindAllSubmatch(pm[1], -1) {
			argv = append(argv, string(s[1]))
		}
		if string(dm[1]) != "allow" {
			continue
		}
		if strings.Join(argv, "\x00") == want {
			found = true
			continue
		}
		out = append(out, Finding{Path: fmt.Sprintf("prefix_rule[%d]", i), Problem: fmt.Sprintf("allows %q: Codex runs every command starting so outside its sandbox.", strings.Join(argv, " ")), Fix: "remove it; only the relay's rule belongs in this file."})
	}
	allows := 0
	for _, m := range codexRule.FindAllSubmatch(data, -1) {
		if dm := codexDecision.FindSubmatch(m[1]); dm != nil && string(dm[1]) == "allow" {
			allows++
		}
	}
	if n := len(regexp.MustCompile(`"allow"`).FindAll(data, -1)); n > allows {
		out = append(out, Finding{Problem: fmt.Sprintf("names \"allow\" %d time(s) outside a prefix_rule this check can read: what it lets out of Codex's sandbox is unknown.", n-allows), Fix: "keep only the relay's rule in this file."})
	}
	if o.Routing && !found {
		out = append(out, Finding{Path: "prefix_rule", Problem: fmt.Sprintf("no rule allows the relay %q: Codex's sandbox refuses its connection to the admission socket, and every routed call exits 126.", strings.Join(o.codexRelayPrefix(), " ")), Fix: "render the file with mitrity-hook render-settings --framework codex --routing --part rules."})
	}
	return out
}
