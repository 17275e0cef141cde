package settings

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mitrity/mitrity/hook/framework"
)

// GeminiSystemPath is where Gemini CLI reads the system settings, which
// override users' and projects' (macOS: GeminiSystemPathDarwin).
const (
	GeminiSystemPath       = "/etc/gemini-cli/settings.json"
	GeminiSystemPathDarwin = "/Library/Application Support/GeminiCli/settings.json"
)

// GeminiHookName is the name the rendered hook carries: what
// hooksConfig.disabled would have to list to switch it off.
const GeminiHookName = "mitrity"

type geminiSettings struct {
	HooksConfig geminiHooksConfig `json:"hooksConfig"`
	Hooks       geminiHooks       `json:"hooks"`
}

type geminiHooksConfig struct {
	Enabled bool `json:"enabled"`
}

type geminiHooks struct {
	BeforeTool []geminiMatcher `json:"BeforeTool"`
}

type geminiMatcher struct {
	Matcher string       `json:"matcher"`
	Hooks   []geminiHook `json:"hooks"`
}

type geminiHook struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Command     string `json:"command"`
	Timeout     int    `json:"timeout"` // milliseconds
	Description string `json:"description"`
}

// frameworkCommand is the command a framework runs for each shell call: the
// hook's subcommand for it, with the socket when one is pinned (the hook's
// --socket flag; Gemini's and Codex's settings have no env block for hooks).
func (o Options) frameworkCommand(fw framework.Name) string {
	cmd := o.HookPath + " " + string(fw)
	if o.Socket != "" {
		cmd += " --socket " + o.Socket
	}
	return cmd
}

// RenderGemini renders Gemini CLI's system settings (GeminiSystemPath):
// the hooks system on, and `mitrity-hook gemini` as the BeforeTool hook of
// run_shell_command, waiting as long as a held call may. Gemini CLI has no
// managed-only switch for hooks; the system file's hook runs whatever users
// and projects add, and CheckGemini finds one that switches it off.
func RenderGemini(o Options) ([]byte, error) {
	o, err := o.normalize()
	if err != nil {
		return nil, err
	}
	s := geminiSettings{
		HooksConfig: geminiHooksConfig{Enabled: true},
		Hooks: geminiHooks{BeforeTool: []geminiMatcher{{
			Matcher: framework.Gemini.ShellTool(),
			Hooks: []geminiHook{{Name: GeminiHookName, Type: "command", Command: o.frameworkCommand(framework.Gemini),
				Timeout: o.HookTimeoutSeconds * 1000, Description: "Mitrity admission for shell calls"}},
		}}},
	}
	return encodeJSON(s)
}

// CheckGemini audits a Gemini CLI settings file (the system one, or a
// user's or project's, which merge into it) for what RenderGemini writes:
// the hooks system off, the Mitrity hook missing (a system file only),
// waiting less than a held call may, or switched off by name in
// hooksConfig.disabled (a list Gemini CLI joins across every settings file,
// so a user or project file can switch the system's hook off).
func CheckGemini(data []byte, o Options, system bool) []Finding {
	o, err := o.normalize()
	if err != nil {
		return []Finding{{Problem: "The check cannot run: " + err.Error() + ".", Fix: "pass valid options (os, hook path, socket)."}}
	}
	c, findings := newChecker(data, o, "gemini")
	if c == nil {
		return findings
	}
	if c.get("hooksConfig", "enabled") == false {
		c.add("hooksConfig.enabled", "is false: Gemini CLI runs no hook, so no shell call reaches Mitrity.", "remove it or set it to true.")
	}
	want := o.frameworkCommand(framework.Gemini)
	for i, d := range strings_(c.get("hooksConfig", "disabled")) {
		if d == GeminiHookName || strings.Join(strings.Fields(d), " ") == want || strings.Contains(d, "mitrity-hook") {
			c.add(fmt.Sprintf("hooksConfig.disabled[%d]", i), fmt.Sprintf("names %q: Gemini CLI skips the Mitrity hook, and every shell call runs unjudged (this list is joined across the system, user and project files).", d), "remove it.")
		}
	}
	if !system {
		return c.findings
	}
	found := c.eachHook("BeforeTool", framework.Gemini.ShellTool(), want, func(path string, hook map[string]any) {
		// Gemini's default is 60 seconds, in milliseconds.
		if t, ok := hook["timeout"].(float64); !ok || t < float64(o.HookTimeoutSeconds*1000) {
			c.add(path+".timeout", fmt.Sprintf("is %s: Gemini CLI stops waiting for a held call before it is decided (want at least %d, in milliseconds).", describeMillis(hook["timeout"]), o.HookTimeoutSeconds*1000), fmt.Sprintf("set timeout to %d.", o.HookTimeoutSeconds*1000))
		}
	})
	if !found {
		c.add("hooks.BeforeTool", fmt.Sprintf("has no command hook %q for run_shell_command: shell calls never reach Mitrity.", want), "render the file with mitrity-hook render-settings --framework gemini.")
	}
	return c.findings
}

func describeMillis(v any) string {
	if t, ok := v.(float64); ok {
		return fmt.Sprintf("%g ms", t)
	}
	return "unset (60000 ms)"
}

// newChecker parses a settings file; on failure it returns the one
// finding that says so.
func newChecker(data []byte, o Options, fw string) (*checker, []Finding) {
	fix := "render it again with mitrity-hook render-settings --framework " + fw + "."
	var root any
	if err := json.Unmarshal(data, &root); err != nil {
		return nil, []Finding{{Problem: fmt.Sprintf("The file is not valid JSON (%v), so the framework ignores it and applies none of these rules.", err), Fix: fix}}
	}
	s, ok := root.(map[string]any)
	if !ok {
		return nil, []Finding{{Problem: "The file is not a JSON object, so the framework applies none of these rules.", Fix: fix}}
	}
	return &checker{s: s, o: o}, nil
}

func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
