package govern

// ActionShellExecute is the action type of the governed shell's tool. The
// served tool name and the action type are a fixed pair.
const (
	ActionShellExecute = "shell:execute"
	ToolShellExecute   = "shell__execute"
)

// Outcome is what a stage, a rule or the whole pipeline decides.
// Precedence when several apply: deny > hold > ask > allow.
type Outcome int

const (
	Allow Outcome = iota
	Ask           // the framework asks the person (hook surfaces only)
	Hold          // the call waits in the gateway's approval queue
	Deny
)

func (o Outcome) String() string {
	switch o {
	case Allow:
		return "allow"
	case Ask:
		return "ask"
	case Hold:
		return "hold"
	case Deny:
		return "deny"
	}
	return "invalid"
}

// ParseOutcome reads an outcome's word (allow, ask, hold, deny).
func ParseOutcome(s string) (Outcome, bool) {
	for o := Allow; o <= Deny; o++ {
		if o.String() == s {
			return o, true
		}
	}
	return 0, false
}

// Stricter returns the stricter of two outcomes.
func (o Outcome) Stricter(p Outcome) Outcome {
	if p > o {
		return p
	}
	return o
}

// Decision is a verdict with its machine-readable reason and a sentence a
// person or a model can act on. Stage names the pipeline stage that
// decided; Rule the policy rule, when one did.
type Decision struct {
	Outcome Outcome
	Reason  Reason
	Stage   string
	Rule    string
	Message string
}

// Surfaces a call can come from (Call.Surface).
const (
	SurfaceMCP       = "mcp"        // the shell__execute MCP tool
	SurfaceAgentHook = "agent_hook" // a framework's own shell tool, through the hook
	SurfaceCLI       = "cli"        // mitrity-gateway exec
)

// Call is one request, as every surface (MCP tool call, hook admission,
// the exec subcommand) presents it to the pipeline: a shell command
// (ActionType shell:execute) or a call of an upstream MCP server's tool
// (ActionType mcp:<server>__<tool>, Server and Arguments set).
type Call struct {
	Agent      string
	Tool       string // served tool name (shell__execute) or the framework's tool
	ActionType string // shell:execute
	Surface    string // mcp, agent_hook, cli
	Session    string
	Command    string
	Cwd        string // as given; resolved against exec.default_cwd
	Stdin      []byte
	Env        map[string]string // agent-settable variables, values may hold ${credential:<id>}
	// TimeoutSeconds is what the call asked for; 0 means the ceiling.
	TimeoutSeconds int
	// Server is the upstream MCP server of a proxied tool, UpstreamTool
	// the tool's name there, and Arguments its arguments (a JSON object,
	// as the agent sent them).
	Server       string
	UpstreamTool string
	Arguments    []byte
}

// IsShell reports whether the call runs a shell command (the governed
// shell's action type) rather than an upstream tool.
func (c Call) IsShell() bool { return c.ActionType == ActionShellExecute }

// ActionMCPPrefix starts the action type of every upstream tool:
// mcp:<server>__<tool>.
const ActionMCPPrefix = "mcp:"
