package admission

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"
)

// Paths of the v1 contract.
const (
	PathAdmit  = "/v1/admit"  // POST AdmitRequest -> AdmitResponse
	PathRedeem = "/v1/redeem" // POST RedeemRequest -> stream of Frame
	PathHealth = "/v1/health" // GET -> Health
)

// Limits on a request.
const (
	MaxRequestBytes = 1 << 20
	MaxCommandBytes = 64 << 10
	MaxFieldBytes   = 4 << 10 // every other string
)

// Frameworks the hook speaks for.
const (
	FrameworkClaude   = "claude"
	FrameworkCodex    = "codex"
	FrameworkGemini   = "gemini"
	FrameworkOpenCode = "opencode"
)

// AdmitRequest is a framework's shell call, as the hook saw it.
type AdmitRequest struct {
	Framework string `json:"framework"`
	// Agent is the agent id the policy knows the caller by.
	Agent          string `json:"agent"`
	SessionID      string `json:"session_id,omitempty"`
	ToolName       string `json:"tool_name"`
	ToolUseID      string `json:"tool_use_id,omitempty"`
	Cwd            string `json:"cwd"`
	Command        string `json:"command"`
	PermissionMode string `json:"permission_mode,omitempty"`
	// TimeoutSeconds is the timeout the model asked for (Claude Code's
	// tool_input.timeout, rounded up to seconds); 0: the profile's. It can
	// only shorten the run: the effective ceiling still applies.
	TimeoutSeconds int `json:"timeout_seconds,omitempty"`
}

// Validate refuses a request the gateway cannot judge.
func (r AdmitRequest) Validate() error {
	switch r.Framework {
	case FrameworkClaude, FrameworkCodex, FrameworkGemini, FrameworkOpenCode:
	default:
		return fmt.Errorf("framework %q: want claude, codex, gemini or opencode", r.Framework)
	}
	if r.Agent == "" || !validID(r.Agent) {
		return fmt.Errorf("agent %q: want 1 to 128 letters, digits, '.', '_' or '-'", r.Agent)
	}
	if r.ToolName == "" {
		return fmt.Errorf("tool_name is required")
	}
	if r.Command == "" {
		return fmt.Errorf("command is required")
	}
	if len(r.Command) > MaxCommandBytes {
		return fmt.Errorf("command is %d bytes; at most %d", len(r.Command), MaxCommandBytes)
	}
	if strings.IndexByte(r.Command, 0) >= 0 {
		return fmt.Errorf("command contains a NUL byte")
	}
	if r.TimeoutSeconds < 0 {
		return fmt.Errorf("timeout_seconds %d: want 0 (the profile's) or more", r.TimeoutSeconds)
	}
	if !filepath.IsAbs(r.Cwd) {
		return fmt.Errorf("cwd %q: want an absolute path", r.Cwd)
	}
	for name, v := range map[string]string{"session_id": r.SessionID, "tool_name": r.ToolName, "tool_use_id": r.ToolUseID, "cwd": r.Cwd, "permission_mode": r.PermissionMode} {
		if len(v) > MaxFieldBytes || strings.IndexByte(v, 0) >= 0 {
			return fmt.Errorf("%s: longer than %d bytes or contains a NUL byte", name, MaxFieldBytes)
		}
	}
	return nil
}

func validID(s string) bool {
	if len(s) > 128 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}

// Decision is the admission's answer.
type Decision string

const (
	Allow Decision = "allow"
	Deny  Decision = "deny"
	// Ask: the framework asks its person; under routing the ticket is
	// already issued, so an approval runs the relay.
	Ask Decision = "ask"
)

// Routing is where an admitted call runs (the policy's
// builtin_exec_routing).
type Routing string

const (
	RoutingFramework     Routing = "framework"
	RoutingGovernedShell Routing = "governed_shell"
)

// AdmitResponse is the decision. Under governed_shell routing an allow or
// ask carries a Ticket; the hook rewrites the command to the relay.
type AdmitResponse struct {
	Decision Decision `json:"decision"`
	// Reason is the closed-vocabulary reason of a deny or ask.
	Reason  string  `json:"reason,omitempty"`
	Message string  `json:"message"`
	Routing Routing `json:"routing"`
	Ticket  string  `json:"ticket,omitempty"`
	// ExpiresAt is when an unredeemed Ticket expires.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// EventID is the decision's audit event.
	EventID string `json:"event_id,omitempty"`
}

// RedeemRequest runs a ticket's plan.
type RedeemRequest struct {
	Ticket string `json:"ticket"`
	// Agent, when set, must be the agent the ticket was issued to.
	Agent string `json:"agent,omitempty"`
}

// Validate refuses a redemption that breaks the request limits: a
// missing, over-long or NUL-bearing ticket, or an agent that is not an
// agent id.
func (r RedeemRequest) Validate() error {
	switch {
	case r.Ticket == "":
		return fmt.Errorf("ticket is required")
	case len(r.Ticket) > MaxFieldBytes:
		return fmt.Errorf("ticket is %d bytes; at most %d", len(r.Ticket), MaxFieldBytes)
	case strings.IndexByte(r.Ticket, 0) >= 0:
		return fmt.Errorf("ticket contains a NUL byte")
	case r.Agent != "" && !validID(r.Agent):
		return fmt.Errorf("agent %q: want 1 to 128 letters, digits, '.', '_' or '-'", clipField(r.Agent))
	}
	return nil
}

// clipField shortens a refused value for an error message.
func clipField(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// FrameType says what a Frame carries.
type FrameType string

const (
	FrameStdout FrameType = "stdout"
	FrameStderr FrameType = "stderr"
	FrameResult FrameType = "result" // the last frame
)

// Frame is one line of a redeem response. Data is already redacted.
type Frame struct {
	Type   FrameType `json:"type"`
	Data   []byte    `json:"data,omitempty"`
	Result *Result   `json:"result,omitempty"`
}

// Result ends a redemption.
type Result struct {
	// ExitCode is what the relay exits with: the command's own; 124 timed
	// out; 126 could not start or refused; 137 killed.
	ExitCode       int    `json:"exit_code"`
	Status         string `json:"status"`
	Reason         string `json:"reason,omitempty"`
	Message        string `json:"message,omitempty"`
	TimedOut       bool   `json:"timed_out,omitempty"`
	Truncated      bool   `json:"truncated,omitempty"`
	SandboxMode    string `json:"sandbox_mode,omitempty"`
	RedactionCount int    `json:"redaction_count"`
	DurationMs     int64  `json:"duration_ms"`
	EventID        string `json:"event_id,omitempty"`
	// ProtectedCreated lists protected paths (git hooks and config, rc
	// files, agent and editor settings) the command created: absent before
	// the run, so the sandbox could not hold them. Reported, not prevented.
	ProtectedCreated []string `json:"protected_created,omitempty"`
}

// Error is the body of every non-2xx response.
type Error struct {
	Code    ErrorCode `json:"error"`
	Message string    `json:"message"`
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// ErrorCode is the closed set of protocol errors.
type ErrorCode string

const (
	ErrInvalidRequest ErrorCode = "invalid_request" // 400
	ErrForbidden      ErrorCode = "forbidden"       // 403: another user
	ErrTicketRefused  ErrorCode = "ticket_refused"  // 404/403: unknown, used, expired or another agent's
	ErrUnavailable    ErrorCode = "unavailable"     // 503
	ErrInternal       ErrorCode = "internal"        // 500
)

// Health is GET /v1/health.
type Health struct {
	Version string `json:"version"` // the gateway's
	API     string `json:"api"`     // "v1"
}

func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	// dec.More would miss a trailing '}' or ']': only the end of the
	// input may follow.
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("trailing data after the JSON object")
	}
	return nil
}
