package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mitrity/mitrity/govern"
)

// CloudEvents envelope constants. The envelope is CloudEvents 1.0 in its
// JSON format so any CloudEvents-aware pipeline can route the trail without
// knowing our schema.
const (
	SpecVersion = "1.0"
	ContentType = "application/json"
	// TypeDecision is an event with a decision and no execution card: a
	// denial before anything was attempted, or the admit-time half of a
	// routed hook call.
	TypeDecision = "dev.mitrity.decision"
	// TypeExecution is an event that carries an execution card.
	TypeExecution = "dev.mitrity.execution"
	// SourcePrefix starts every event's source; the host name follows.
	SourcePrefix = "mitrity-gateway://"
	// BlockedByCommand is blocked_by for the analyzer's and the executor's
	// hard denials; any other denial names its pipeline stage.
	BlockedByCommand = "command"
	// MaxDeniedHosts caps egress.denied_hosts: the first 16 distinct
	// host:port pairs, as the spec says; the count is in egress.denied.
	MaxDeniedHosts = 16
)

// Event is one audit record: a CloudEvents 1.0 envelope around Data.
type Event struct {
	SpecVersion     string    `json:"specversion"`
	ID              string    `json:"id"`
	Source          string    `json:"source"`
	Type            string    `json:"type"`
	Time            time.Time `json:"time"`
	Subject         string    `json:"subject,omitempty"` // the agent id
	DataContentType string    `json:"datacontenttype"`
	Data            Data      `json:"data"`
}

// MarshalJSON writes time in UTC, so lines from hosts in different zones
// sort and compare as text.
func (e Event) MarshalJSON() ([]byte, error) {
	type plain Event
	p := plain(e)
	p.Time = p.Time.UTC()
	return json.Marshal(p)
}

// Data is the governed-shell payload of an event.
type Data struct {
	Agent      string   `json:"agent"`
	Surface    Surface  `json:"surface"`
	Tool       string   `json:"tool"`
	ActionType string   `json:"action_type"`
	Session    string   `json:"session,omitempty"`
	Decision   Decision `json:"decision"`
	// BlockedBy is set on a denial: "command" for the analyzer's and the
	// executor's hard denials, else the stage that denied.
	BlockedBy string `json:"blocked_by,omitempty"`
	// LinkedEventID, on the execution half of a routed hook call, is the id
	// of the decision event written at admit time.
	LinkedEventID string `json:"linked_event_id,omitempty"`
	// Command is what the analyzer judged; absent when analysis never ran.
	Command *Command `json:"command,omitempty"`
	// Execution is the execution card; absent when nothing was attempted.
	Execution *Execution `json:"execution,omitempty"`
	// Destination is set on a DLP unauthorized_destination event only.
	Destination *Destination `json:"destination,omitempty"`
	// Upstream is the card of a call forwarded to an upstream MCP server;
	// ToolDefinition a judged upstream tool definition.
	Upstream       *UpstreamCall   `json:"upstream,omitempty"`
	ToolDefinition *ToolDefinition `json:"tool_definition,omitempty"`
	// AgentSession is the card of an agent session launched in the layered
	// sandbox (TypeAgentSession only).
	AgentSession *AgentSession `json:"agent_session,omitempty"`
}

// Decision is the pipeline's verdict as recorded.
type Decision struct {
	Outcome Outcome       `json:"outcome"`
	Reason  govern.Reason `json:"reason,omitempty"`
	Stage   string        `json:"stage,omitempty"`
	Rule    string        `json:"rule,omitempty"`
	Message string        `json:"message,omitempty"`
	// WouldDeny is set in monitor/report mode when enforcement would have
	// denied what was allowed.
	WouldDeny bool `json:"would_deny,omitempty"`
	// Error is a pipeline failure (not a denial), credential values scrubbed.
	Error string `json:"error,omitempty"`
}

// Command is the judged text, by hash, and what it resolves to.
type Command struct {
	// SHA256 is the hex SHA-256 of the judged text: the command after
	// ${credential:<id>} rewriting, exactly the bytes the shell runs.
	SHA256  string `json:"sha256"`
	Dialect string `json:"dialect"`
	// Cwd is the working directory as the call gave it.
	Cwd string `json:"cwd,omitempty"`
	// StdinSHA256 and StdinBytes describe the call's stdin, when it had one.
	StdinSHA256 string     `json:"stdin_sha256,omitempty"`
	StdinBytes  int        `json:"stdin_bytes,omitempty"`
	Resolved    []Resolved `json:"resolved"`
	Flags       []Flag     `json:"flags,omitempty"`
	Opaque      bool       `json:"opaque"`
	// CredentialsReferenced are the ids named by ${credential:<id>}.
	CredentialsReferenced []string `json:"credentials_referenced,omitempty"`
	// Scripts are the scripts the analyzer read, by path, hash and size.
	Scripts []Script `json:"scripts,omitempty"`
}

// Resolved is one simple command the text would run.
type Resolved struct {
	Argv []string `json:"argv"`
	// Dynamic lists the indexes of Argv whose value could not be known
	// statically; those entries hold the source text instead.
	Dynamic   []int      `json:"dynamic,omitempty"`
	Kind      string     `json:"kind,omitempty"`
	Context   string     `json:"context,omitempty"`
	Wrappers  []string   `json:"wrappers,omitempty"`
	Redirects []Redirect `json:"redirects,omitempty"`
	Opaque    string     `json:"opaque,omitempty"`
}

// Redirect is a path a command reads or writes through a redirection.
type Redirect struct {
	Op      string `json:"op"`
	Path    string `json:"path"`
	Write   bool   `json:"write,omitempty"`
	Dynamic bool   `json:"dynamic,omitempty"`
	Network bool   `json:"network,omitempty"`
}

// Flag is one analyzer finding.
type Flag struct {
	Kind   string `json:"kind"`
	Detail string `json:"detail,omitempty"`
}

// Script is an inspected script: never its body.
type Script struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// Execution is the execution card: what the gateway attempted and what held.
type Execution struct {
	Status govern.Status `json:"status"`
	// Reason explains a non-completed status: pin_mismatch,
	// concurrency_limit, spawn_error or sandbox_unavailable, or empty.
	Reason govern.Reason `json:"reason,omitempty"`
	// SandboxMode is the isolation in force. Absent means not ours to vouch
	// for (nothing was started), never "none".
	SandboxMode *govern.SandboxMode `json:"sandbox_mode,omitempty"`
	// ExitCode is null unless Status is completed.
	ExitCode       *int   `json:"exit_code"`
	DurationMS     int64  `json:"duration_ms"`
	TimeoutSeconds int    `json:"timeout_seconds"`
	Stdout         Stream `json:"stdout"`
	Stderr         Stream `json:"stderr"`
	// RedactionCount counts redactions across both streams.
	RedactionCount int `json:"redaction_count"`
	// OutputSHA256 and OutputBytes describe the redacted output returned
	// to the agent: stdout then stderr, as the agent received them.
	OutputSHA256        string                     `json:"output_sha256,omitempty"`
	OutputBytes         int64                      `json:"output_bytes"`
	PinnedScripts       []PinnedScript             `json:"pinned_scripts"`
	CredentialsInjected []string                   `json:"credentials_injected"`
	Egress              Egress                     `json:"egress"`
	LimitsEnforced      map[Limit]LimitEnforcement `json:"limits_enforced"`
	// ProtectedCreated lists protected paths the command created: absent
	// before the run, present after it (a watched name kills the run and
	// is moved aside; a new repository is only reported).
	ProtectedCreated []string `json:"protected_created"`
	// ProtectedModified lists protected paths whose content changed
	// though they were held read-only: the protection was bypassed.
	ProtectedModified []string `json:"protected_modified"`
	// ArgvRefused lists the program starts the sandbox refused because an
	// argument carried an injected credential (credential_in_argv at run
	// time): the program, the argument's position and the credential's
	// id, never the value.
	ArgvRefused []ArgvRefusal `json:"argv_refused"`
	// CredentialWritten lists the files in the workspace the run changed
	// that hold a credential it was given (any form redaction knows):
	// where a granted run left a value for others to find.
	CredentialWritten []CredentialWritten `json:"credential_written"`
	// MaskReplaced lists the masked paths the host replaced while the run
	// ran: the sandbox killed the run, which may have read the new file in
	// the moment before. Labels, never a gateway file's path. Always
	// present; usually empty.
	MaskReplaced []string `json:"mask_replaced"`
}

// CredentialWritten is one file a run left holding a credential.
type CredentialWritten struct {
	Path       string `json:"path"`
	Credential string `json:"credential"`
}

// ArgvRefusal is one program start the exec guard refused.
type ArgvRefusal struct {
	Program    string `json:"program"`
	Argument   int    `json:"argument"`
	Credential string `json:"credential"`
}

// Stream is the size of one output stream.
type Stream struct {
	// Bytes the process wrote, including those discarded past the cap.
	Bytes          int64 `json:"bytes"`
	DiscardedBytes int64 `json:"discarded_bytes"`
	Truncated      bool  `json:"truncated"`
}

// PinnedScript is a script run as the exact bytes that were judged.
type PinnedScript struct {
	Path      string    `json:"path"`
	SHA256    string    `json:"sha256"`
	Size      int64     `json:"size"`
	PinMethod PinMethod `json:"pin_method"`
}

// Egress is what the proxy let through and refused.
type Egress struct {
	Allowed int `json:"allowed"`
	Denied  int `json:"denied"`
	// DeniedHosts holds the first 16 distinct refused host:port pairs.
	DeniedHosts []string `json:"denied_hosts"`
}

// LimitEnforcement says whether one resource bound held, and by what.
type LimitEnforcement struct {
	Enforced  bool      `json:"enforced"`
	Mechanism Mechanism `json:"mechanism"`
}

// Closed vocabularies of the event. Each is a string type whose
// UnmarshalText refuses any other word and whose values Validate checks on
// write, so neither side of the file can drift from the spec.

// Outcome is the decision outcome word.
type Outcome string

const (
	OutcomeAllow Outcome = "allow"
	OutcomeAsk   Outcome = "ask"
	OutcomeHold  Outcome = "hold"
	OutcomeDeny  Outcome = "deny"
)

var outcomes = []Outcome{OutcomeAllow, OutcomeAsk, OutcomeHold, OutcomeDeny}

// OutcomeOf converts the pipeline's outcome to its word.
func OutcomeOf(o govern.Outcome) Outcome { return Outcome(o.String()) }

// Surface is where the call came from.
type Surface string

const (
	SurfaceMCP       Surface = govern.SurfaceMCP
	SurfaceAgentHook Surface = govern.SurfaceAgentHook
	SurfaceCLI       Surface = govern.SurfaceCLI
)

var surfaces = []Surface{SurfaceMCP, SurfaceAgentHook, SurfaceCLI}

// PinMethod is how a script was pinned: bound read-only over its path
// (Linux) or copied to a private directory with the command rewritten to
// the copy (macOS).
type PinMethod string

const (
	PinBind PinMethod = "bind"
	PinCopy PinMethod = "copy"
	// PinVerify: no kernel sandbox (mode none), so the bytes could not be
	// bound; the script was re-hashed immediately before the start and a
	// change stopped the run.
	PinVerify PinMethod = "verify"
)

var pinMethods = []PinMethod{PinBind, PinCopy, PinVerify}

// Limit names a resource bound on the card.
type Limit string

const (
	LimitProcessCount Limit = "process_count"
	LimitMemory       Limit = "memory"
	LimitTmpfsSize    Limit = "tmpfs_size"
	LimitFileSize     Limit = "file_size"
	LimitDaemonKill   Limit = "daemon_kill"
)

// Limits lists every bound a card reports, in display order.
func Limits() []Limit {
	return []Limit{LimitProcessCount, LimitMemory, LimitTmpfsSize, LimitFileSize, LimitDaemonKill}
}

// Mechanism is what enforced a limit; empty when it was not enforced.
type Mechanism string

const (
	MechanismNone   Mechanism = ""
	MechanismCgroup Mechanism = "cgroup" // a delegated cgroup v2
	MechanismRlimit Mechanism = "rlimit" // setrlimit in the sandbox helper
	MechanismPidNS  Mechanism = "pidns"  // a pid namespace: its init's death kills every descendant
	MechanismTmpfs  Mechanism = "tmpfs"  // the size= option of the private tmpfs
)

var mechanisms = []Mechanism{MechanismNone, MechanismCgroup, MechanismRlimit, MechanismPidNS, MechanismTmpfs}

func (o *Outcome) UnmarshalText(b []byte) error   { return parseWord("decision.outcome", b, outcomes, o) }
func (s *Surface) UnmarshalText(b []byte) error   { return parseWord("surface", b, surfaces, s) }
func (p *PinMethod) UnmarshalText(b []byte) error { return parseWord("pin_method", b, pinMethods, p) }
func (l *Limit) UnmarshalText(b []byte) error {
	return parseWord("limits_enforced key", b, Limits(), l)
}
func (m *Mechanism) UnmarshalText(b []byte) error { return parseWord("mechanism", b, mechanisms, m) }

func parseWord[T ~string](what string, b []byte, set []T, dst *T) error {
	if err := checkWord(what, T(b), set); err != nil {
		return err
	}
	*dst = T(b)
	return nil
}

func checkWord[T ~string](what string, v T, set []T) error {
	if slices.Contains(set, v) {
		return nil
	}
	return fmt.Errorf("%s: unknown word %q, want one of %q", what, string(v), set)
}

// ErrInvalidEvent wraps every Validate failure.
var ErrInvalidEvent = errors.New("invalid audit event")

// Validate checks the envelope and every closed vocabulary, and the
// consistency rules of the card (an exit code only when completed, a reason
// only when not, unavailable_denied only when nothing ran). The Writer
// refuses an event that fails it.
func (e *Event) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if e.SpecVersion != SpecVersion {
		bad("specversion %q, want %q", e.SpecVersion, SpecVersion)
	}
	if e.ID == "" {
		bad("id is empty")
	}
	if e.Source == "" {
		bad("source is empty")
	}
	if e.Time.IsZero() {
		bad("time is zero")
	}
	if e.DataContentType != ContentType {
		bad("datacontenttype %q, want %q", e.DataContentType, ContentType)
	}
	switch e.Type {
	case TypeDecision:
		if e.Data.Execution != nil {
			bad("type %s carries an execution card; use %s", TypeDecision, TypeExecution)
		}
	case TypeExecution:
		if e.Data.Execution == nil {
			bad("type %s without an execution card", TypeExecution)
		}
	case TypeUnauthorizedDestination:
	case TypeUpstreamCall:
		if e.Data.Upstream == nil || e.Data.Execution != nil {
			bad("type %s carries an upstream card and no execution card", TypeUpstreamCall)
		}
	case TypeToolDefinition:
		if e.Data.ToolDefinition == nil {
			bad("type %s without a tool definition", TypeToolDefinition)
		}
	case TypeAgentSession:
	default:
		bad("type %q, want %s, %s, %s, %s, %s or %s", e.Type, TypeDecision, TypeExecution, TypeUnauthorizedDestination, TypeUpstreamCall, TypeToolDefinition, TypeAgentSession)
	}
	errs = append(errs, e.validateUpstream()...)
	errs = append(errs, e.validateAgentSession()...)
	errs = append(errs, e.validateDestination()...)
	d := &e.Data
	if d.Agent == "" {
		bad("data.agent is empty")
	}
	if err := checkWord("data.surface", d.Surface, surfaces); err != nil {
		errs = append(errs, err)
	}
	if err := checkWord("data.decision.outcome", d.Decision.Outcome, outcomes); err != nil {
		errs = append(errs, err)
	}
	if d.BlockedBy != "" && d.Decision.Outcome != OutcomeDeny {
		bad("data.blocked_by %q on a %s decision", d.BlockedBy, d.Decision.Outcome)
	}
	if c := d.Command; c != nil {
		if !isSHA256(c.SHA256) {
			bad("data.command.sha256 %q is not a hex SHA-256", c.SHA256)
		}
		if c.StdinSHA256 != "" && !isSHA256(c.StdinSHA256) {
			bad("data.command.stdin_sha256 %q is not a hex SHA-256", c.StdinSHA256)
		}
	}
	if x := d.Execution; x != nil {
		errs = append(errs, x.validate()...)
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalidEvent, errors.Join(errs...))
}

func (x *Execution) validate() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("data.execution."+format, args...)) }
	if !x.Status.Valid() {
		bad("status %d is not in the vocabulary", uint8(x.Status))
	}
	switch {
	case x.Status == govern.StatusCompleted && x.Reason != "":
		bad("reason %q on a completed execution", x.Reason)
	case x.Reason != "" && !govern.IsExecutionReason(x.Reason):
		bad("reason %q, want pin_mismatch, concurrency_limit, spawn_error, sandbox_unavailable, ticket_expired or ticket_refused", x.Reason)
	}
	if (x.ExitCode != nil) != (x.Status == govern.StatusCompleted) {
		bad("exit_code must be set exactly when status is completed (status %s)", x.Status)
	}
	if m := x.SandboxMode; m != nil {
		if !m.Valid() {
			bad("sandbox_mode %d is not in the vocabulary", uint8(*m))
		}
		if *m == govern.SandboxUnavailableDenied && (x.Status != govern.StatusNeverRan || x.Reason != govern.ReasonSandboxUnavailable) {
			bad("sandbox_mode unavailable_denied needs status never_ran and reason sandbox_unavailable")
		}
		if x.Status == govern.StatusNeverRan && *m != govern.SandboxUnavailableDenied {
			bad("sandbox_mode %s on an execution that never ran: nothing was isolated (only unavailable_denied, the reason it never ran, is stamped)", m)
		}
	}
	if x.DurationMS < 0 || x.TimeoutSeconds < 0 || x.RedactionCount < 0 || x.OutputBytes < 0 {
		bad("negative duration, timeout, redaction count or output size")
	}
	if x.OutputSHA256 != "" && !isSHA256(x.OutputSHA256) {
		bad("output_sha256 %q is not a hex SHA-256", x.OutputSHA256)
	}
	for _, s := range []Stream{x.Stdout, x.Stderr} {
		if s.Bytes < 0 || s.DiscardedBytes < 0 || s.DiscardedBytes > s.Bytes {
			bad("stream sizes: bytes %d, discarded_bytes %d", s.Bytes, s.DiscardedBytes)
		}
	}
	for _, p := range x.PinnedScripts {
		if err := checkWord("data.execution.pinned_scripts.pin_method", p.PinMethod, pinMethods); err != nil {
			errs = append(errs, err)
		}
		if p.Path == "" || !isSHA256(p.SHA256) {
			bad("pinned script %q without a path or a hex SHA-256", p.Path)
		}
	}
	if len(x.Egress.DeniedHosts) > MaxDeniedHosts {
		bad("egress.denied_hosts has %d entries, at most %d", len(x.Egress.DeniedHosts), MaxDeniedHosts)
	}
	if x.Egress.Allowed < 0 || x.Egress.Denied < len(x.Egress.DeniedHosts) {
		bad("egress counts: allowed %d, denied %d with %d hosts", x.Egress.Allowed, x.Egress.Denied, len(x.Egress.DeniedHosts))
	}
	for _, l := range Limits() {
		if _, ok := x.LimitsEnforced[l]; !ok {
			bad("limits_enforced.%s is missing: every limit is reported, held or not", l)
		}
	}
	for l, le := range x.LimitsEnforced {
		if err := checkWord("data.execution.limits_enforced key", l, Limits()); err != nil {
			errs = append(errs, err)
		}
		if err := checkWord("data.execution.limits_enforced."+string(l)+".mechanism", le.Mechanism, mechanisms); err != nil {
			errs = append(errs, err)
		}
		if le.Enforced == (le.Mechanism == MechanismNone) {
			bad("limits_enforced.%s: enforced %t with mechanism %q (an enforced limit names its mechanism, an unenforced one none)", l, le.Enforced, le.Mechanism)
		}
	}
	return errs
}

// isSHA256 reports whether s is a lower-case hex SHA-256: a hash field can
// then never smuggle anything but a hash.
func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
