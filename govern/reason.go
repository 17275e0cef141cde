package govern

// Reason is a machine-readable cause attached to every denial, hold and
// non-completed execution. The set is closed: only the constants below exist,
// and each String matches the words of the product spec.
type Reason string

// Hard denials of the governed shell that no policy knob relaxes.
const (
	ReasonSandboxUnavailable        Reason = "sandbox_unavailable"
	ReasonModifiedOutsideGovernance Reason = "modified_outside_governance"
	ReasonCredentialInArgv          Reason = "credential_in_argv"
	ReasonCwdOutsideWorkspace       Reason = "cwd_outside_workspace"
	ReasonCommandAnalysisOff        Reason = "command_analysis_off"
)

// Denials raised by the command analyzer before any policy is consulted.
const (
	// ReasonInvalidInput: the text is too long or holds a byte the parser and
	// the shell could disagree on (NUL, CR, other C0 controls).
	ReasonInvalidInput Reason = "invalid_input"
	// ReasonParseError: the text is not valid in the dialect that would run it.
	ReasonParseError Reason = "parse_error"
)

// Reasons for an execution status other than completed.
const (
	ReasonPinMismatch      Reason = "pin_mismatch"
	ReasonConcurrencyLimit Reason = "concurrency_limit"
	ReasonSpawnError       Reason = "spawn_error"
)

// ReasonPolicyRule: a CEL policy rule decided (deny, hold, ask or allow), or
// a rule could not be evaluated and the call was denied (fail closed). The
// decision's Rule names the rule.
const ReasonPolicyRule Reason = "policy_rule"

// Reasons the pipeline's other stages give.
const (
	// ReasonToolPermission: the profile's tool_permissions deny (or ask for)
	// the action type.
	ReasonToolPermission Reason = "tool_permission"
	// ReasonPromptInjection: the injection scanner hit on the arguments or
	// stdin.
	ReasonPromptInjection Reason = "prompt_injection"
	// ReasonThreatIntel: a host, script hash or command pattern is on the
	// local threat-intel feed.
	ReasonThreatIntel Reason = "threat_intel"
	// ReasonHoldDenied and ReasonHoldExpired end a held call that nobody
	// approved.
	ReasonHoldDenied  Reason = "hold_denied"
	ReasonHoldExpired Reason = "hold_expired"
	// ReasonDLPArgument: a DLP detector the agent is bound to hit on the
	// arguments or stdin.
	ReasonDLPArgument Reason = "dlp_argument"
	// ReasonCredentialNotGranted: the call references a credential the
	// agent holds no grant for (or that is not configured).
	ReasonCredentialNotGranted Reason = "credential_not_granted"
	// ReasonInvalidArgument: a tool argument breaks its documented bounds
	// (env key not settable, stdin too large, bad cwd).
	ReasonInvalidArgument Reason = "invalid_argument"
	// ReasonShuttingDown: the gateway is stopping (SIGTERM) and takes no
	// new call; nothing ran. Retry once it is back.
	ReasonShuttingDown Reason = "shutting_down"
	// ReasonAuditUnavailable: the audit event could not be written, so
	// nothing runs.
	ReasonAuditUnavailable Reason = "audit_unavailable"
	// ReasonTicketExpired: a routed hook call's ticket was never redeemed
	// before it expired (or the gateway stopped first); nothing ran.
	ReasonTicketExpired Reason = "ticket_expired"
	// ReasonTicketRefused: a ticket was presented by another agent or
	// user than it was issued to; it is spent and nothing ran.
	ReasonTicketRefused Reason = "ticket_refused"
	// ReasonUnauthorizedDestination: the egress proxy refused a
	// connection (the DLP event of each refused destination).
	ReasonUnauthorizedDestination Reason = "unauthorized_destination"
)

func (r Reason) String() string { return string(r) }

// Reasons of a proxied upstream MCP tool (mcp:<server>__<tool>).
const (
	// ReasonToolDefinitionChanged: the tool's definition (name,
	// description, schemas, annotations) is not the one first seen or
	// pinned; it is withheld until an operator approves the new one.
	ReasonToolDefinitionChanged Reason = "tool_definition_changed"
	// ReasonToolDescriptionInjection: the tool's description reads as a
	// prompt injection; the tool is withheld.
	ReasonToolDescriptionInjection Reason = "tool_description_injection"
	// ReasonToolNameInvalid: the upstream's tool name cannot be served
	// (not callable from a model API, too long, or colliding).
	ReasonToolNameInvalid Reason = "tool_name_invalid"
	// ReasonToolDefinitionInvalid: the upstream's definition cannot be
	// served as it is (an input schema that is not a JSON object schema).
	ReasonToolDefinitionInvalid Reason = "tool_definition_invalid"
	// ReasonUpstreamUnavailable: the upstream server is down, crashed
	// mid-call or answered with a protocol error.
	ReasonUpstreamUnavailable Reason = "upstream_unavailable"
	// ReasonUpstreamTimeout: the upstream did not answer within the
	// call timeout; the call was cancelled upstream.
	ReasonUpstreamTimeout Reason = "upstream_timeout"
	// ReasonUpstreamRequestRefused: a request from an upstream to the
	// client (sampling, elicitation, roots) the policy does not allow.
	ReasonUpstreamRequestRefused Reason = "upstream_request_refused"
)

// Reasons lists the closed vocabulary, every reason once.
func Reasons() []Reason {
	return []Reason{
		ReasonSandboxUnavailable, ReasonModifiedOutsideGovernance, ReasonCredentialInArgv,
		ReasonCwdOutsideWorkspace, ReasonCommandAnalysisOff,
		ReasonInvalidInput, ReasonParseError,
		ReasonPinMismatch, ReasonConcurrencyLimit, ReasonSpawnError,
		ReasonPolicyRule,
		ReasonToolPermission, ReasonPromptInjection, ReasonThreatIntel,
		ReasonHoldDenied, ReasonHoldExpired, ReasonDLPArgument,
		ReasonCredentialNotGranted, ReasonInvalidArgument, ReasonShuttingDown, ReasonAuditUnavailable,
		ReasonTicketExpired, ReasonTicketRefused, ReasonUnauthorizedDestination,
		ReasonToolDefinitionChanged, ReasonToolDescriptionInjection, ReasonToolNameInvalid, ReasonToolDefinitionInvalid,
		ReasonUpstreamUnavailable, ReasonUpstreamTimeout, ReasonUpstreamRequestRefused,
	}
}

// CredentialDir is where, inside the sandbox, credential files are
// materialised for one execution; $MITRITY_CRED_DIR holds this path.
const CredentialDir = "/run/mitrity/credentials"
