package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

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
	if u.Status == govern.StatusCompleted && u.Reason != "" {
		bad("reason %q on a completed call", u.Reason)
	}
	for _, h := range []string{u.ArgumentsSHA256, u.ResultSHA256} {
		if h != "" && !isSHA256(h) {
			bad("%q is not a hex SHA-256", h)
		}
	}
	return errs
}

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
	return errs
}

// BuildUpstream returns the validated event of a forwarded request, or
// of a judged definition (d set instead of u): typ TypeUpstreamCall or
// TypeToolDefinition.
func (b Builder) BuildUpstream(r Record, u *UpstreamCall, d *ToolDefinition) (*Event, error) {
	ev, err := b.Build(r)
	if err != nil {
		return nil, err
	}
	switch {
	case u != nil:
		ev.Type, ev.Data.Upstream = TypeUpstreamCall, u
	case d != nil:
		ev.Type, ev.Data.ToolDefinition = TypeToolDefinition, d
	}
	if err := ev.Validate(); err != nil {
		return nil, err
	}
	return ev, nil
}
