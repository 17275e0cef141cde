package framework

import (
	_ "embed"
	"encoding/json"
	"strconv"
	"strings"
)

// OpenCodeProtocol is the version of the JSON exchanged between the rendered
// OpenCode plugin and `mitrity-hook opencode`. Parse refuses any other
// version, so a plugin rendered by another release fails closed.
const OpenCodeProtocol = 1

// DefaultHookTimeoutSeconds is how long a framework should let the hook run
// before giving up on it: the default hold (hold.timeout_seconds, 600) plus a
// minute for the round trip. The rendered OpenCode plugin uses it as its own
// deadline; Claude Code's managed settings default to it.
const DefaultHookTimeoutSeconds = 660

// OpenCodeRequest is what the plugin writes to `mitrity-hook opencode`'s
// stdin for one tool.execute.before call.
type OpenCodeRequest struct {
	// Version is OpenCodeProtocol.
	Version int `json:"version"`
	// Tool, SessionID and CallID are the hook input's tool, sessionID and
	// callID.
	Tool      string `json:"tool"`
	SessionID string `json:"sessionID"`
	CallID    string `json:"callID"`
	// Directory is the plugin context's directory (the project), where a
	// call without its own workdir runs.
	Directory string `json:"directory"`
	// Args is output.args, the tool's arguments as OpenCode will run them;
	// for bash: command, timeout (ms), workdir, description.
	Args map[string]json.RawMessage `json:"args"`
}

// OpenCodeResponse is what `mitrity-hook opencode` writes on stdout.
type OpenCodeResponse struct {
	// Decision is "allow", "deny" or "defer". OpenCode cannot ask, so an Ask
	// is answered "deny".
	Decision string `json:"decision"`
	// Reason is set on "deny"; the plugin throws it, and OpenCode shows it
	// to the model.
	Reason string `json:"reason,omitempty"`
	// Args, on "allow", are the complete arguments with the rewritten
	// command; the plugin copies args.command into output.args.
	Args map[string]json.RawMessage `json:"args,omitempty"`
}

//go:embed opencode_plugin.js
var openCodePlugin string

// OpenCodePlugin renders the OpenCode plugin that runs hookPath before every
// bash call (place it at .opencode/plugins/mitrity.js, or in
// ~/.config/opencode/plugins/ for every project). hookPath is embedded as a
// JavaScript string literal; check it with CheckHookPath first.
func OpenCodePlugin(hookPath string) []byte {
	quoted, _ := json.Marshal(hookPath) // a string always marshals
	return []byte(strings.NewReplacer(
		`"__MITRITY_HOOK_PATH__"`, string(quoted),
		`__MITRITY_PROTOCOL__`, strconv.Itoa(OpenCodeProtocol),
		`__MITRITY_TIMEOUT_MS__`, strconv.Itoa(DefaultHookTimeoutSeconds*1000),
	).Replace(openCodePlugin))
}
