package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/mitrity/mitrity/govern"
)

// Event types of the upstream MCP servers the gateway proxies.
const (
	// TypeUpstreamCall is a request the gateway forwarded to an upstream
	// (or tried to): one event per call, after the upstream answered,
	// with hashes and sizes of what went and came back, never the bytes.
	// It carries no sandbox_mode: the gateway did not execute it.
	TypeUpstreamCall = "dev.mitrity.upstream_call"
	// TypeToolDefinition is a tool definition the gateway judged: first
	// seen, changed (both hashes), withheld, approved, or refused for its
	// name.
	TypeToolDefinition = "dev.mitrity.tool_definition"
)

// UpstreamCall is the card of one forwarded request.
type UpstreamCall struct {
	Server string `json:"server"`
	// Method is the MCP method: tools/call, resources/read, prompts/get,
	// or a request the upstream sent (sampling/createMessage,
	// elicitation/create, roots/list).
	Method string `json:"method"`
	// Name is the tool or prompt as the upstream names it, or the
	// resource's URI.
	Name string `json:"name,omitempty"`
	// Status is completed when the upstream answered (even with a tool
	// error), timed_out, killed (cancelled, or the upstream died
	// mid-call) or failed_to_start (never reached the upstream).
	Status govern.Status `json:"status"`
	Reason govern.Reason `json:"reason,omitempty"`
	// IsError is the upstream's own isError.
	IsError         bool   `json:"is_error,omitempty"`
	ArgumentsSHA256 string `json:"arguments_sha256,omitempty"`
	ArgumentsBytes  int    `json:"arguments_bytes"`
	// ArgumentsRedacted counts the secrets DLP took out of the arguments
	// before forwarding (a redact binding).
	ArgumentsRedacted int    `json:"arguments_redacted,omitempty"`
	ResultSHA256      string `json:"result_sha256,omitempty"`
	ResultBytes       int    `json:"result_bytes"`
	// RedactionCount is what redaction took out of the result.
	RedactionCount int  `json:"redaction_count"`
	Truncated      bool `json:"truncated,omitempty"`
	// Injection are the kinds of prompt injection found in the result;
	// InjectionAction what the profile did about them (flag or deny).
	Injection       []string `json:"injection,omitempty"`
	InjectionAction string   `json:"injection_action,omitempty"`
	// CredentialsInjected are the credential ids the request carried
	// (resolved ${credential:<id>} references).
	CredentialsInjected []string `json:"credentials_injected,omitempty"`
	DurationMS          int64    `json:"duration_ms"`
	// ServerSandbox, on a launch of a stdio upstream, is the isolation it
	// runs under (bubblewrap, or none under sandbox: none). It is not
	// sandbox_mode: no call is executed by the gateway.
	ServerSandbox string `json:"server_sandbox,omitempty"`
}

// ToolDefinition is a judged tool definition.
type ToolDefinition struct {
	Server string `json:"server"`
	// Tool is the upstream's name; Served the name the agent sees (empty
	// when it cannot be served).
	Tool   string `json:"tool"`
	Served string `json:"served,omitempty"`
	// SHA256 is the definition's hash now; Previous the one first seen or
	// pinned, when they differ.
	SHA256   string `json:"sha256"`
	Previous string `json:"previous_sha256,omitempty"`
	// State is first_seen, changed, withheld, approved or refused.
	State  string        `json:"state"`
	Reason govern.Reason `json:"reason,omitempty"`
}

// Tool definition states.
const (
	DefinitionFirstSeen = "first_seen"
	DefinitionPinned    = "pinned"
	DefinitionWithheld  = "withheld"
	DefinitionApproved  = "approved"
	DefinitionRefused   = "refused"
)

var definitionStates = []string{DefinitionFirstSeen, DefinitionPinned, DefinitionWithheld, DefinitionApproved, DefinitionRefused}

// HashOf is the hex SHA-256 of b: what a record keeps of bytes.
func HashOf(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func (u *UpstreamCall) validate() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("data.upstream."+format, args...)) }
	if u.Server == "" || u.Method == "" {
		bad("server and method are required")
	}
	if !u.Status.Valid() {
		bad("status %d is not in the vocabulary", uint8(u.Status))
	}
	// A completed call has a reason only when the gateway withheld the
	// answer the upstream gave (an injection under injection.results:
	// deny, a request to the client inside the result).
	if u.Status == govern.StatusCompleted && u.Reason != "" && u.Reason != govern.ReasonPromptInjection && u.Reason != govern.ReasonUpstreamRequestRefused {
		bad("reason %q on a completed call (only prompt_injection or upstream_request_refused: the answer was withheld)", u.Reason)
	}
	for _, h := range []string{u.ArgumentsSHA256, u.ResultSHA256} {
		if h != "" && !isSHA256(h) {
			bad("%q is not a hex SHA-256", h)
		}
	}
	// The card's own consistency, as the execution card has it: a call
	// that got no answer says why, in the closed vocabulary; sizes are
	// sizes; an injection finding comes with what was done about it.
	switch {
	case u.Status.Valid() && u.Status != govern.StatusCompleted && u.Reason == "":
		bad("status %s needs a reason", u.Status)
	case u.Reason != "" && !slices.Contains(govern.Reasons(), u.Reason):
		bad("reason %q is not in the vocabulary", u.Reason)
	}
	if u.ArgumentsBytes < 0 || u.ArgumentsRedacted < 0 || u.ResultBytes < 0 || u.RedactionCount < 0 || u.DurationMS < 0 {
		bad("negative size, count or duration")
	}
	switch {
	case u.InjectionAction != "" && u.InjectionAction != "flag" && u.InjectionAction != "deny":
		bad("injection_action %q, want flag or deny", u.InjectionAction)
	case (len(u.Injection) > 0) != (u.InjectionAction != ""):
		bad("injection and injection_action go together (findings %d, injection_action %q)", len(u.Injection), u.InjectionAction)
	case u.Reason == govern.ReasonPromptInjection && u.InjectionAction != "deny":
		bad("reason %s needs injection_action deny", u.Reason)
	}
	return errs
}

// definitionReasons are the reasons a judged definition can carry.
var definitionReasons = []govern.Reason{govern.ReasonToolDefinitionChanged, govern.ReasonToolDescriptionInjection,
	govern.ReasonToolNameInvalid, govern.ReasonToolDefinitionInvalid}

func (t *ToolDefinition) validate() []error {
	var errs []error
	if t.Server == "" || t.Tool == "" {
		errs = append(errs, fmt.Errorf("data.tool_definition: server and tool are required"))
	}
	if !isSHA256(t.SHA256) || t.Previous != "" && !isSHA256(t.Previous) {
		errs = append(errs, fmt.Errorf("data.tool_definition: hashes must be hex SHA-256"))
	}
	if err := checkWord("data.tool_definition.state", t.State, definitionStates); err != nil {
		errs = append(errs, err)
	}
	// A definition withheld or refused says why; one served does not. A
	// change names the hash it differs from; a first sighting has none.
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("data.tool_definition."+format, args...))
	}
	held := t.State == DefinitionWithheld || t.State == DefinitionRefused
	switch {
	case held && t.Reason == "":
		bad("state %s needs a reason", t.State)
	case !held && t.Reason != "":
		bad("reason %q on state %s: a served definition has no reason", t.Reason, t.State)
	case t.Reason != "" && !slices.Contains(definitionReasons, t.Reason):
		bad("reason %q, want one of %q", t.Reason, definitionReasons)
	}
	if t.Reason == govern.ReasonToolDefinitionChanged && (t.Previous == "" || t.Previous == t.SHA256) {
		bad("a changed definition needs the previous_sha256 it differs from")
	}
	if (t.State == DefinitionFirstSeen || t.State == DefinitionPinned) && t.Previous != "" {
		bad("previous_sha256 on state %s", t.State)
	}
	if t.Served == "" && t.State != DefinitionRefused {
		bad("served is empty on state %s: only a refused name has none", t.State)
	}
	return errs
}

// validateUpstream checks what only the upstream event types have: each
// card on its own type only (an upstream card on a decision, a definition
// on an upstream call, is an event that says two things), no execution
// card on a definition, and each card in itself.
func (e *Event) validateUpstream() []error {
	var errs []error
	d := &e.Data
	if d.Upstream != nil && e.Type != TypeUpstreamCall {
		errs = append(errs, fmt.Errorf("type %s carries data.upstream; only %s does", e.Type, TypeUpstreamCall))
	}
	if d.ToolDefinition != nil && e.Type != TypeToolDefinition {
		errs = append(errs, fmt.Errorf("type %s carries data.tool_definition; only %s does", e.Type, TypeToolDefinition))
	}
	if e.Type == TypeToolDefinition && d.Execution != nil {
		errs = append(errs, fmt.Errorf("type %s carries an execution card", e.Type))
	}
	if d.Upstream != nil {
		errs = append(errs, d.Upstream.validate()...)
	}
	if d.ToolDefinition != nil {
		errs = append(errs, d.ToolDefinition.validate()...)
	}
	return errs
}

// BuildUpstream returns the validated event of a forwarded request, or
// of a judged definition (d set instead of u): typ TypeUpstreamCall or
// TypeToolDefinition.
func (b Builder) BuildUpstream(r Record, u *UpstreamCall, d *ToolDefinition) (*Event, error) {
	if (u == nil) == (d == nil) {
		// Neither would be a decision event by mistake; both, one card
		// silently dropped.
		return nil, fmt.Errorf("%w: an upstream event carries an upstream card or a tool definition, exactly one", ErrInvalidEvent)
	}
	if r.Analysis != nil || r.Run != nil {
		// An upstream event's size is bounded (MaxUpstreamEventBytes):
		// it carries no command or execution card.
		return nil, fmt.Errorf("%w: an upstream event carries no command analysis and no run", ErrInvalidEvent)
	}
	ev, err := b.build(r)
	if err != nil {
		return nil, err
	}
	// The cards are copied: redaction writes the event, never the caller's.
	switch {
	case u != nil:
		c := *u
		ev.Type, ev.Data.Upstream = TypeUpstreamCall, &c
	case d != nil:
		c := *d
		ev.Type, ev.Data.ToolDefinition = TypeToolDefinition, &c
	}
	redactStrings(r.Scrub, ev.texts())
	ev.bound()
	if err := ev.Validate(); err != nil {
		return nil, err
	}
	return ev, nil
}
