package framework

import (
	"encoding/json"
	"fmt"
)

// Name identifies an agent framework; it is also the mitrity-hook subcommand
// that serves it.
type Name string

// The frameworks mitrity-hook serves.
const (
	Claude   Name = "claude"
	Codex    Name = "codex"
	Gemini   Name = "gemini"
	OpenCode Name = "opencode"
)

// Names lists every framework, in the order documentation lists them.
var Names = []Name{Claude, Codex, Gemini, OpenCode}

// Valid reports whether n is one of Names.
func (n Name) Valid() bool {
	switch n {
	case Claude, Codex, Gemini, OpenCode:
		return true
	}
	return false
}

// Agent is the agent id the hook reports when MITRITY_AGENT is not set.
func (n Name) Agent() string {
	switch n {
	case Claude:
		return "claude-code"
	case Codex:
		return "codex"
	case Gemini:
		return "gemini-cli"
	case OpenCode:
		return "opencode"
	}
	return ""
}

// Display is the framework's product name.
func (n Name) Display() string {
	switch n {
	case Claude:
		return "Claude Code"
	case Codex:
		return "Codex CLI"
	case Gemini:
		return "Gemini CLI"
	case OpenCode:
		return "OpenCode"
	}
	return string(n)
}

// CanAsk reports whether the framework can put a call to the person from a
// hook answer. Claude Code and Gemini CLI can; Codex CLI rejects "ask" (and
// then runs the call) and an OpenCode plugin has no prompt to raise, so for
// those a held call must wait for the gateway's approval queue. Answer turns
// an Ask for them into a denial rather than let the call through.
func (n Name) CanAsk() bool { return n == Claude || n == Gemini }

// ShellTool is the name the framework gives its built-in shell tool in hook
// payloads. OpenCode's is "bash" (an OpenCode 2 event may say "shell", which
// Parse also accepts).
func (n Name) ShellTool() string {
	switch n {
	case Claude, Codex:
		return "Bash"
	case Gemini:
		return "run_shell_command"
	case OpenCode:
		return "bash"
	}
	return ""
}

// Limits on a payload Parse accepts.
const (
	// MaxPayload bounds the whole stdin payload.
	MaxPayload = 1 << 20
	// MaxCommand bounds the shell command, in bytes.
	MaxCommand = 64 << 10
)

// Call is one tool call as a framework reported it to its hook.
type Call struct {
	Framework Name
	// SessionID, ToolUseID, PermissionMode and TranscriptPath are copied
	// as received; ToolUseID is OpenCode's callID, and PermissionMode and
	// TranscriptPath are empty when the framework does not send them.
	SessionID, ToolUseID, PermissionMode, TranscriptPath string
	// Cwd is the absolute directory the command would run in: the payload's
	// cwd (OpenCode's directory), joined with the tool's own working
	// directory argument when there is one (Gemini's dir_path or directory,
	// OpenCode's workdir).
	Cwd      string
	ToolName string
	// Shell is true when the tool is the framework's built-in shell tool.
	Shell bool
	// Command is the shell command; empty unless Shell.
	Command string
	// Input is the tool input exactly as received, so that a rewrite changes
	// only "command" and keeps every other field, known or not.
	Input map[string]json.RawMessage
}

// Decision is what the hook answers for a call.
type Decision int

// Decisions. The zero value is Defer.
const (
	// Defer expresses no opinion: the framework's own permission flow
	// applies (the answer for tools that are not the shell tool).
	Defer Decision = iota
	// Allow lets the call run, rewritten when Verdict.Command is set.
	Allow
	// Deny refuses the call; Verdict.Reason goes to the model.
	Deny
	// Ask puts the call to the person, where the framework can (CanAsk).
	Ask
)

func (d Decision) String() string {
	switch d {
	case Defer:
		return "defer"
	case Allow:
		return "allow"
	case Deny:
		return "deny"
	case Ask:
		return "ask"
	}
	return fmt.Sprintf("Decision(%d)", int(d))
}

// Verdict is the gateway's answer for a call, as the hook renders it.
type Verdict struct {
	Decision Decision
	// Reason is a sentence a person or a model can act on, including the
	// reason code.
	Reason string
	// Command, when non-empty, replaces tool_input.command (the relay,
	// `mitrity-hook exec <ticket>`). Only Allow and Ask carry a rewrite.
	Command string
}
