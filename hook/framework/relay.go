package framework

import (
	"errors"
	"fmt"
	"strings"
)

// HookBinary is the base name mitrity-hook is installed under.
const HookBinary = "mitrity-hook"

// CheckHookPath accepts the path a framework is configured to run
// mitrity-hook from: absolute, and made only of letters, digits and
// "._/+@,:=-". Settings embed it in shell commands and in Claude Code's
// excludedCommands pattern, which match it as text, so a path that would need
// quoting is refused rather than quoted.
func CheckHookPath(path string) error {
	if !strings.HasPrefix(path, "/") {
		return fmt.Errorf("hook path %q is not absolute", path)
	}
	if strings.Contains(path, "/../") || strings.HasSuffix(path, "/..") || strings.Contains(path, "//") {
		return fmt.Errorf("hook path %q is not clean", path)
	}
	for _, r := range path {
		if !plainPathRune(r) {
			return fmt.Errorf("hook path %q holds %q: install mitrity-hook at a path of letters, digits and ._/+@,:=- only", path, r)
		}
	}
	return nil
}

func plainPathRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._/+@,:=-", r)
}

// RelayCommand is the command a routed call is rewritten to:
// `<hookPath> exec <ticket>`. The ticket must be 16 to 256 characters of
// [A-Za-z0-9_-], so that the command needs no quoting and matches
// RelayPattern.
func RelayCommand(hookPath, ticket string) (string, error) {
	if err := CheckHookPath(hookPath); err != nil {
		return "", err
	}
	if len(ticket) < 16 || len(ticket) > 256 {
		return "", fmt.Errorf("ticket is %d characters, want 16 to 256", len(ticket))
	}
	for _, r := range ticket {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return "", errors.New("ticket holds a character outside [A-Za-z0-9_-]")
		}
	}
	return hookPath + " exec " + ticket, nil
}

// RelayPattern is the Claude Code permission-style pattern that matches every
// RelayCommand for hookPath and nothing else that does not start with it:
// `<hookPath> exec *`.
func RelayPattern(hookPath string) string { return hookPath + " exec *" }

// ReferencesHook reports whether a command names mitrity-hook, by its base
// name or by hookPath. The model has no reason to run the hook or the relay
// itself, and on Linux Claude Code runs a command matching RelayPattern
// outside its own sandbox (and, per anthropics/claude-code#81157, a compound
// command with such a part wholly outside), so the hook refuses any call
// whose command references it. Quoting tricks that hide the name from this
// check also hide it from Claude Code's own text match.
func ReferencesHook(command, hookPath string) bool {
	return strings.Contains(command, HookBinary) || hookPath != "" && strings.Contains(command, hookPath)
}
