package agentlaunch

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// HookRenderer renders a framework's managed settings with mitrity-hook
// at hook (its render-settings and render-opencode-plugin), as an
// administrator would, for the session's hook path and socket, with
// routing on. Claude Code's are then fitted to the session
// (ClaudeSessionSettings).
func HookRenderer(hook string) Renderer {
	return func(fw Framework, insideHook, socket, agent string) ([]byte, error) {
		args := []string{"render-settings", "--framework", fw.Name, "--os", "linux", "--routing", "--hook-path", insideHook, "--socket", socket}
		if fw.Name == "opencode" {
			args = []string{"render-opencode-plugin", "--hook-path", insideHook}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, hook, args...)
		cmd.Env = []string{"PATH=/usr/bin:/bin"}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("%s %s: %v: %s", hook, strings.Join(args[:3], " "), err, strings.TrimSpace(stderr.String()))
		}
		switch fw.Name {
		case "claude":
			return ClaudeSessionSettings(out, agent)
		case "gemini":
			var b [8]byte
			if _, err := rand.Read(b[:]); err != nil {
				return nil, err
			}
			return GeminiSessionSettings(out, "mitrity-"+hex.EncodeToString(b[:]))
		}
		return out, nil
	}
}

// GeminiSessionSettings names the hooks of Gemini CLI's rendered managed
// settings name, the session's own. Gemini joins hooksConfig.disabled
// across its system, user and project files and disables a hook whose
// name is listed (its command when it has no name), and the user file is
// in the agent's state, which the agent's tools and MCP servers may write
// and which outlasts the session: under the rendered name ("mitrity") a
// list written in one session would run the next one's shell calls
// without the hook. A name made for the session is in no list written
// before it started (Gemini reads the lists once, at start).
func GeminiSessionSettings(rendered []byte, name string) ([]byte, error) {
	var s map[string]any
	if err := json.Unmarshal(rendered, &s); err != nil {
		return nil, fmt.Errorf("the rendered Gemini CLI settings: %w", err)
	}
	hooks, _ := s["hooks"].(map[string]any)
	named := 0
	for _, defs := range hooks {
		list, _ := defs.([]any)
		for _, d := range list {
			def, _ := d.(map[string]any)
			hs, _ := def["hooks"].([]any)
			for _, h := range hs {
				if h, ok := h.(map[string]any); ok {
					h["name"] = name
					named++
				}
			}
		}
	}
	if named == 0 {
		return nil, fmt.Errorf("the rendered Gemini CLI settings have no hooks")
	}
	return json.MarshalIndent(s, "", "  ")
}

// ClaudeSessionSettings fits Claude Code's rendered managed settings to a
// session in the launcher's sandbox. Everything stays (the hook, managed
// hooks only, the permission rules: layers 3 and 4) but Claude Code's own
// sandbox, which cannot start inside ours (no nested user namespaces) and
// under routing never runs the model's commands anyway: with it required,
// Claude Code would run none. Its place is taken by the launcher's
// sandbox around Claude Code and the governed shell's around every
// command (docs/agent.md). The agent id is pinned in the managed env, which
// no project or user settings file can change.
func ClaudeSessionSettings(rendered []byte, agent string) ([]byte, error) {
	var s map[string]any
	if err := json.Unmarshal(rendered, &s); err != nil {
		return nil, fmt.Errorf("the rendered Claude Code settings: %w", err)
	}
	if _, ok := s["hooks"]; !ok {
		return nil, fmt.Errorf("the rendered Claude Code settings have no hooks")
	}
	s["sandbox"] = map[string]any{"enabled": false}
	env, _ := s["env"].(map[string]any)
	if env == nil {
		env = map[string]any{}
	}
	env["MITRITY_AGENT"] = agent
	s["env"] = env
	return json.MarshalIndent(s, "", "  ")
}
