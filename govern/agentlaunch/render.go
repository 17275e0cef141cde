package agentlaunch

import (
	"bytes"
	"context"
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
		if fw.Name == "claude" {
			return ClaudeSessionSettings(out, agent)
		}
		return out, nil
	}
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
