package audit

import "github.com/rs/zerolog"

// CanonicalDecision is the message of the one log line every decision gets.
// A single line with fixed field names lets an operator grep or aggregate
// decisions without reading the audit file.
const CanonicalDecision = "govern.decision"

// Field names of the canonical line. They are constants so producers and
// the tests that read the line cannot drift apart; where a field mirrors an
// event field, the name is the event's.
const (
	FieldAllow          = "allow"      // true when the outcome is allow
	FieldReason         = "reason"     // decision.reason
	FieldRule           = "rule"       // decision.rule
	FieldWouldDeny      = "would_deny" // monitor mode: enforcement would have denied
	FieldErr            = "err"        // decision.error, a pipeline failure
	FieldOutcome        = "outcome"
	FieldStage          = "stage"
	FieldBlockedBy      = "blocked_by"
	FieldEventID        = "event_id"
	FieldLinkedEventID  = "linked_event_id"
	FieldAgent          = "agent"
	FieldSurface        = "surface"
	FieldTool           = "tool"
	FieldActionType     = "action_type"
	FieldSession        = "session"
	FieldCommandSHA256  = "command_sha256"
	FieldStatus         = "status"
	FieldExecReason     = "exec_reason" // execution.reason, beside the decision's reason
	FieldSandboxMode    = "sandbox_mode"
	FieldExitCode       = "exit_code"
	FieldDurationMS     = "duration_ms"
	FieldRedactionCount = "redaction_count"
	FieldEgressDenied   = "egress_denied"
)

// LogDecision emits the canonical govern.decision line for ev. The level
// follows the outcome: a pipeline error logs at error, a denial at warn,
// anything else at info.
func LogDecision(logger zerolog.Logger, ev *Event) {
	d := &ev.Data
	level := zerolog.InfoLevel
	switch {
	case d.Decision.Error != "":
		level = zerolog.ErrorLevel
	case d.Decision.Outcome == OutcomeDeny:
		level = zerolog.WarnLevel
	}
	e := logger.WithLevel(level).
		Bool(FieldAllow, d.Decision.Outcome == OutcomeAllow).
		Str(FieldReason, string(d.Decision.Reason)).
		Str(FieldRule, d.Decision.Rule).
		Bool(FieldWouldDeny, d.Decision.WouldDeny).
		Str(FieldErr, d.Decision.Error).
		Str(FieldOutcome, string(d.Decision.Outcome)).
		Str(FieldStage, d.Decision.Stage).
		Str(FieldEventID, ev.ID).
		Str(FieldAgent, d.Agent).
		Str(FieldSurface, string(d.Surface)).
		Str(FieldTool, d.Tool).
		Str(FieldActionType, d.ActionType)
	if d.BlockedBy != "" {
		e = e.Str(FieldBlockedBy, d.BlockedBy)
	}
	if d.LinkedEventID != "" {
		e = e.Str(FieldLinkedEventID, d.LinkedEventID)
	}
	if d.Session != "" {
		e = e.Str(FieldSession, d.Session)
	}
	if d.Command != nil {
		e = e.Str(FieldCommandSHA256, d.Command.SHA256)
	}
	if x := d.Execution; x != nil {
		e = e.Str(FieldStatus, x.Status.String()).
			Int64(FieldDurationMS, x.DurationMS).
			Int(FieldRedactionCount, x.RedactionCount).
			Int(FieldEgressDenied, x.Egress.Denied)
		if x.Reason != "" {
			e = e.Str(FieldExecReason, string(x.Reason))
		}
		if x.SandboxMode != nil {
			e = e.Str(FieldSandboxMode, x.SandboxMode.String())
		}
		if x.ExitCode != nil {
			e = e.Int(FieldExitCode, *x.ExitCode)
		}
	}
	e.Msg(CanonicalDecision)
}
