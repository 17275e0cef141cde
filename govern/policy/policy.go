package policy

import (
	"path/filepath"
	"strings"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/yamlfile"
)

// Policy is the validated policy file.
type Policy struct {
	// File is the file the policy was loaded from; EmbeddedName for Default.
	File string
	// DefaultAgent applies to every agent id not under Agents.
	DefaultAgent Agent
	Agents       map[string]Agent
	Profiles     map[string]Profile
	// ToolPins are upstream tool definitions pinned by hash (served name
	// -> hex SHA-256): such a tool is served only with exactly that
	// definition, whatever the gateway saw first.
	ToolPins map[string]string

	doc *yamlfile.Doc
}

// Agent is what one agent id is granted.
type Agent struct {
	// ID is the agent id; for the default agent, the id ForAgent was asked for.
	ID string
	// Default is true when the grants are default_agent's.
	Default bool
	// Profile names the agent's profile in Policy.Profiles.
	Profile string
	// Destinations is the egress allowlist in canonical form (see
	// ParseDestination). Empty means no egress.
	Destinations []string
	// Credentials are the credential ids the agent may use.
	Credentials []string
}

// Profile is one mission profile: how the governed shell treats the agents
// that carry it.
type Profile struct {
	Name string
	// SandboxRequired denies a command when no sandbox backend is available
	// (sandbox_unavailable) instead of running it without isolation.
	SandboxRequired bool
	// ExecTimeoutSeconds is the wall-clock ceiling of one execution, itself
	// capped by the config's exec.limits.max_timeout_seconds.
	ExecTimeoutSeconds int
	// BuiltinExecRouting is where a framework's own execution tool,
	// admitted through the hook, actually runs.
	BuiltinExecRouting Routing
	// WorkspaceRoots are the only paths writable inside the sandbox.
	WorkspaceRoots WorkspaceRoots
	// ScriptInspectionRoots are where the analyzer may read scripts.
	ScriptInspectionRoots InspectionRoots
	CommandAnalysisMode   AnalysisMode
	// OpaqueWithCredentials is what happens to a command that carries a
	// credential and runs something the analyzer cannot see through
	// (dynamic code, a script it could not read, code read from a pipe):
	// denied as credential_in_argv, or allowed and flagged.
	OpaqueWithCredentials OpaqueMode
	ToolPermissions       []ToolPermission
	// Rules hold CEL text only; compiling them is the rules stage's job,
	// with each rule's Where for its errors.
	Rules     []Rule
	Injection Injection
	DLP       DLP
	Hold      Hold
	// ExtraDenyPaths are unreadable inside the sandbox, on top of the
	// mandatory deny set.
	ExtraDenyPaths []string
}

// Routing is builtin_exec_routing.
type Routing string

const (
	RoutingFramework     Routing = "framework"      // the framework runs what it admitted
	RoutingGovernedShell Routing = "governed_shell" // the hook rewrites it to the relay
)

// AnalysisMode is command_analysis_mode.
type AnalysisMode string

const (
	AnalysisEnforce AnalysisMode = "enforce" // findings decide
	AnalysisMonitor AnalysisMode = "monitor" // findings are logged as would_deny
	AnalysisOff     AnalysisMode = "off"     // no analysis: shell:execute is denied command_analysis_off
)

// OpaqueMode is opaque_with_credentials.
type OpaqueMode string

const (
	// OpaqueDeny: code the analyzer cannot see through is denied
	// (credential_in_argv) in a run that carries a credential. The default.
	OpaqueDeny OpaqueMode = "deny"
	// OpaqueAllow: it runs, and the audit event's command flags say so
	// (opaque_with_credentials). A credential the analyzer does see on a
	// command line is denied all the same.
	OpaqueAllow OpaqueMode = "allow"
)

// InjectionMode is what a prompt-injection hit does.
type InjectionMode string

const (
	InjectionOff  InjectionMode = "off"
	InjectionHold InjectionMode = "hold"
	InjectionDeny InjectionMode = "deny"
)

// ToolPermission is one allow|deny|ask entry for the action types its
// pattern matches.
type ToolPermission struct {
	// Pattern is an action type where '*' matches any run of characters:
	// "shell:*", "shell:execute", "mcp:github__*", "*".
	Pattern string
	Action  govern.Outcome // Allow, Deny or Ask
	Where   yamlfile.Loc
}

// Matches reports whether actionType matches the pattern.
func (t ToolPermission) Matches(actionType string) bool { return glob(t.Pattern, actionType) }

// glob matches '*' against any run of characters; no other character is
// special. Backtracking only to the last star keeps it O(len*len).
func glob(pattern, s string) bool {
	p, i := 0, 0
	star, mark := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case p < len(pattern) && pattern[p] == s[i]:
			p++
			i++
		case star >= 0:
			p, mark = star+1, mark+1
			i = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// Rule is one policy rule: when the CEL expression When holds, Action.
type Rule struct {
	Name    string
	When    string
	Action  govern.Outcome
	Message string
	// Where locates When in the file, so a compile error names its line.
	Where yamlfile.Loc
}

// Injection is the profile's injection block. Mode judges what an agent
// sends; Results what an upstream MCP server sends back.
type Injection struct {
	Mode    InjectionMode
	Results ResultInjection
}

// ResultInjection is injection.results: what a prompt injection found in
// an upstream tool's result (or a resource or prompt it returns) does.
type ResultInjection string

const (
	// ResultInjectionDeny replaces the result with a refusal the model
	// can read. The default.
	ResultInjectionDeny ResultInjection = "deny"
	// ResultInjectionFlag passes the result on with a warning before it,
	// and audits the finding.
	ResultInjectionFlag ResultInjection = "flag"
	ResultInjectionOff  ResultInjection = "off"
)

// DLP is the profile's DLP block: detector names, checked by the DLP
// stage, and what a hit in an upstream tool call's arguments does.
type DLP struct {
	Bindings  []string
	Arguments DLPArguments
}

// DLPArguments is dlp.arguments.
type DLPArguments string

const (
	// DLPArgumentsDeny refuses a call whose arguments hold a secret. The
	// default, and the only choice for a shell command (the gateway
	// cannot change what a command means).
	DLPArgumentsDeny DLPArguments = "deny"
	// DLPArgumentsRedact forwards an upstream tool call with each secret
	// replaced by its marker.
	DLPArgumentsRedact DLPArguments = "redact"
)

// Hold is the profile's hold block.
type Hold struct {
	// TimeoutSeconds is how long a held call waits before it expires to a
	// denial.
	TimeoutSeconds int
	// OnHook is what a held call admitted through a framework hook does.
	OnHook HookHold
}

// HookHold is hold.on_hook.
type HookHold string

const (
	// HookQueue: the hook waits in the gateway's approval queue, as every
	// other held call does.
	HookQueue HookHold = "queue"
	// HookAsk: the framework asks its person; the rewrite to the relay is
	// already in place when they approve.
	HookAsk HookHold = "ask"
)

// WorkspacePlaceholder stands for exec.default_cwd in workspace_roots and
// script_inspection_roots, as a whole entry or as the start of one
// ("${workspace}/scripts").
const WorkspacePlaceholder = "${workspace}"

// WorkspaceRoots are the writable roots. A distinct type from
// InspectionRoots so that neither can be passed, or derived, as the other.
type WorkspaceRoots []string

// Resolve expands the placeholder against defaultCwd. Empty means the single
// root defaultCwd.
func (r WorkspaceRoots) Resolve(defaultCwd string) []string {
	if len(r) == 0 {
		return []string{filepath.Clean(defaultCwd)}
	}
	return expand(r, defaultCwd)
}

// InspectionRoots are where the analyzer may read scripts at decision time.
type InspectionRoots []string

// Resolve expands the placeholder against defaultCwd. Empty means no root:
// scripts are not read, and a command that runs one cannot be judged on it.
func (r InspectionRoots) Resolve(defaultCwd string) []string {
	if len(r) == 0 {
		return nil
	}
	return expand(r, defaultCwd)
}

func expand(roots []string, cwd string) []string {
	out := make([]string, len(roots))
	for i, r := range roots {
		if rest, ok := strings.CutPrefix(r, WorkspacePlaceholder); ok {
			r = cwd + rest
		}
		out[i] = filepath.Clean(r)
	}
	return out
}

// ForAgent returns the agent's grants and its resolved profile; an id not
// under agents gets default_agent's.
func (p *Policy) ForAgent(id string) (Agent, Profile) {
	a, ok := p.Agents[id]
	if !ok {
		a = p.DefaultAgent
		a.ID, a.Default = id, true
	}
	return a, p.Profiles[a.Profile]
}
