package settings

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/mitrity/mitrity/hook/framework"
)

// ClaudeManagedPath is where Claude Code reads managed settings on Linux.
// macOS reads /Library/Application Support/ClaudeCode/managed-settings.json.
const ClaudeManagedPath = "/etc/claude-code/managed-settings.json"

// SocketEnv names the admission socket for the hook and the relay.
const SocketEnv = "MITRITY_ADMISSION_SOCKET"

// Bounds on Options.HookTimeoutSeconds.
const (
	MinHookTimeoutSeconds = 30
	MaxHookTimeoutSeconds = 86400
)

// Options describe the host the settings are for.
type Options struct {
	// OS is "linux" or "darwin".
	OS string
	// HookPath is the absolute path of mitrity-hook (see
	// framework.CheckHookPath).
	HookPath string
	// Socket is the absolute path of the admission socket. When set, it is
	// pinned in the settings' env block (MITRITY_ADMISSION_SOCKET), so the
	// hook and the relay use it; empty leaves both on their built-in
	// default. Routing on macOS needs it, to name it in allowUnixSockets.
	Socket string
	// Routing is builtin_exec_routing: governed_shell. Claude Code's own
	// sandbox then runs only the relay, which must reach Socket.
	Routing bool
	// HookTimeoutSeconds is how long Claude Code waits for the hook, which
	// must outlast a held call waiting for approval (the profile's
	// hold.timeout_seconds). Zero means framework.DefaultHookTimeoutSeconds.
	HookTimeoutSeconds int
	// LookPath, when set, lets CheckClaude check the host it runs on for
	// the programs Claude Code's Linux sandbox needs (exec.LookPath).
	LookPath func(string) (string, error)
}

// normalize checks o and fills its defaults.
func (o Options) normalize() (Options, error) {
	var errs []error
	switch o.OS {
	case "linux", "darwin":
	default:
		errs = append(errs, fmt.Errorf("os %q: want linux or darwin", o.OS))
	}
	if err := framework.CheckHookPath(o.HookPath); err != nil {
		errs = append(errs, err)
	}
	if o.Socket != "" && (!filepath.IsAbs(o.Socket) || filepath.Clean(o.Socket) != o.Socket || strings.ContainsAny(o.Socket, "\x00\n\r")) {
		errs = append(errs, fmt.Errorf("socket %q is not a clean absolute path", o.Socket))
	}
	if o.Routing && o.OS == "darwin" && o.Socket == "" {
		errs = append(errs, errors.New("routing on darwin names the admission socket in sandbox.network.allowUnixSockets: give the socket path"))
	}
	if o.HookTimeoutSeconds == 0 {
		o.HookTimeoutSeconds = framework.DefaultHookTimeoutSeconds
	}
	if o.HookTimeoutSeconds < MinHookTimeoutSeconds || o.HookTimeoutSeconds > MaxHookTimeoutSeconds {
		errs = append(errs, fmt.Errorf("hook timeout %d s: want %d to %d", o.HookTimeoutSeconds, MinHookTimeoutSeconds, MaxHookTimeoutSeconds))
	}
	return o, errors.Join(errs...)
}

// hookCommand is the command Claude Code runs for each Bash call.
func (o Options) hookCommand() string { return o.HookPath + " " + string(framework.Claude) }

// The managed settings, in the order they are written.
type claudeSettings struct {
	Schema                string            `json:"$schema"`
	AllowManagedHooksOnly bool              `json:"allowManagedHooksOnly"`
	Hooks                 claudeHooks       `json:"hooks"`
	Env                   map[string]string `json:"env,omitempty"`
	Permissions           claudePermissions `json:"permissions"`
	Sandbox               claudeSandbox     `json:"sandbox"`
}

type claudeHooks struct {
	PreToolUse []claudeMatcher `json:"PreToolUse"`
}

type claudeMatcher struct {
	Matcher string       `json:"matcher"`
	Hooks   []claudeHook `json:"hooks"`
}

type claudeHook struct {
	Type      string `json:"type"`
	Command   string `json:"command"`
	Timeout   int    `json:"timeout"`
	OnFailure string `json:"onFailure"`
}

type claudePermissions struct {
	DisableBypassPermissionsMode string   `json:"disableBypassPermissionsMode"`
	Deny                         []string `json:"deny"`
	Ask                          []string `json:"ask"`
	Allow                        []string `json:"allow"`
}

type claudeSandbox struct {
	Enabled                  bool          `json:"enabled"`
	FailIfUnavailable        bool          `json:"failIfUnavailable"`
	AllowUnsandboxedCommands bool          `json:"allowUnsandboxedCommands"`
	ExcludedCommands         []string      `json:"excludedCommands,omitempty"`
	Network                  claudeNetwork `json:"network"`
}

type claudeNetwork struct {
	AllowAllUnixSockets bool     `json:"allowAllUnixSockets"`
	AllowUnixSockets    []string `json:"allowUnixSockets,omitempty"`
}

// RenderClaude renders the managed settings for Claude Code
// (ClaudeManagedPath): the PreToolUse hook for Bash, only managed hooks,
// Claude Code's sandbox required with no way out, state-mutating commands
// confirmed, read-only gh allowed, credential files denied and, under
// routing, the one opening the relay needs to reach the admission socket:
// allowUnixSockets naming that socket on macOS; on Linux, where Claude Code
// ignores allowUnixSockets and seccomp refuses every AF_UNIX socket, an
// excludedCommands entry matching only the relay (see docs/frameworks.md).
func RenderClaude(o Options) ([]byte, error) {
	o, err := o.normalize()
	if err != nil {
		return nil, err
	}
	s := claudeSettings{
		Schema:                "https://json.schemastore.org/claude-code-settings.json",
		AllowManagedHooksOnly: true,
		Hooks: claudeHooks{PreToolUse: []claudeMatcher{{
			Matcher: framework.Claude.ShellTool(),
			Hooks: []claudeHook{{
				Type: "command", Command: o.hookCommand(), Timeout: o.HookTimeoutSeconds, OnFailure: "block",
			}},
		}}},
		Permissions: claudePermissions{
			DisableBypassPermissionsMode: "disable",
			Deny:                         denyRules(),
			Ask:                          askRules(),
			Allow:                        allowRules(),
		},
		Sandbox: claudeSandbox{Enabled: true, FailIfUnavailable: true},
	}
	if o.Socket != "" {
		s.Env = map[string]string{SocketEnv: o.Socket}
	}
	if o.Routing {
		switch o.OS {
		case "darwin":
			s.Sandbox.Network.AllowUnixSockets = []string{o.Socket}
		case "linux":
			s.Sandbox.ExcludedCommands = []string{framework.RelayPattern(o.HookPath)}
		}
	}
	return encodeJSON(s)
}
