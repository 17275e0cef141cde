package service

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/audit"
	"github.com/mitrity/mitrity/govern/pipeline"
	"github.com/mitrity/mitrity/govern/policy"
	"github.com/mitrity/mitrity/govern/ticket"
)

// MaxTickets bounds the tickets waiting to be redeemed.
const MaxTickets = 1024

// Admission is the answer to a hook's call.
type Admission struct {
	// Decision is Allow, Ask or Deny.
	Decision govern.Decision
	Routing  policy.Routing
	// Ticket, under governed_shell routing, is what the relay redeems.
	Ticket  string
	Expires time.Time
	EventID string
}

// Admit decides a framework's shell call (call.Surface agent_hook) through
// the same pipeline as every other call and audits the decision. Under the
// profile's builtin_exec_routing: governed_shell an allowed (or asked)
// call's plan is fixed now and a ticket issued for it; uid is the caller,
// bound into the ticket.
func (s *Service) Admit(ctx context.Context, call govern.Call, uid int) Admission {
	return s.bind().admit(ctx, call, uid)
}

// admit answers with the gateway's own words scrubbed of its host paths:
// the framework shows the decision's message to the model.
func (s bound) admit(ctx context.Context, call govern.Call, uid int) Admission {
	a := s.admitting(ctx, call, uid)
	a.Decision.Message = s.scrub.Scrub(a.Decision.Message)
	return a
}

func (s bound) admitting(ctx context.Context, call govern.Call, uid int) Admission {
	call.ActionType, call.Tool, call.Surface = govern.ActionShellExecute, govern.ToolShellExecute, govern.SurfaceAgentHook
	st, d := s.pipe.Decide(ctx, call, s.host())
	routing := st.Profile.BuiltinExecRouting
	if d.Outcome == govern.Deny {
		res := s.denied(ctx, call, st, d)
		return Admission{Decision: d, Routing: routing, EventID: res.Structured.EventID}
	}
	if routing != policy.RoutingGovernedShell {
		// The framework runs it: the decision is all there is to audit,
		// and the event carries no sandbox mode (not ours to vouch for).
		id, err := s.record(s.decisionRecord(st, d))
		if err != nil {
			return Admission{Decision: s.auditUnavailable(err), Routing: routing}
		}
		return Admission{Decision: d, Routing: routing, EventID: id}
	}
	pr, res := s.prepare(ctx, st)
	if pr == nil {
		// A plan that does not build: audited by prepare, and nothing
		// will run.
		return Admission{Decision: govern.Decision{Outcome: govern.Deny, Reason: govern.Reason(res.Structured.Reason), Stage: "executor", Message: res.Text},
			Routing: routing, EventID: res.Structured.EventID}
	}
	if res, ok := s.recordDecision(pr, d); !ok {
		// Nothing will run: no ticket for a call whose decision is not
		// on disk.
		return Admission{Decision: res.Decision, Routing: routing}
	}
	id := pr.base.LinkedEventID
	tk, exp, err := s.tickets.Issue(ticket.Ticket{Agent: call.Agent, Session: call.Session, UID: uid,
		PlanHash: pr.plan.Hash(), EventID: id, Payload: pr})
	if err != nil {
		reason := govern.ReasonSpawnError
		if errors.Is(err, ticket.ErrFull) {
			reason = govern.ReasonConcurrencyLimit
		}
		d := govern.Decision{Outcome: govern.Deny, Reason: reason, Stage: "executor",
			Message: fmt.Sprintf("no ticket could be issued (%v); nothing will run", err)}
		s.neverRan(pr, reason, d.Message)
		return Admission{Decision: d, Routing: routing, EventID: id}
	}
	return Admission{Decision: d, Routing: routing, Ticket: tk, Expires: exp, EventID: id}
}

// decisionRecord is the admit-time event of an allowed or asked hook call.
func (s bound) decisionRecord(st *pipeline.State, d govern.Decision) audit.Record {
	rec := audit.Record{Call: st.Call, Decision: d, Analysis: st.Analysis}
	if len(st.WouldDeny) > 0 {
		rec.WouldDeny = true
	}
	return rec
}

// ErrTicketRefused is Redeem's error for a ticket that does not run.
var ErrTicketRefused = errors.New("ticket refused")

// Redeem runs the plan of the ticket, once: a second redemption, an expired
// or unknown ticket, or one presented by another user (uid) or another
// agent (agent, when not empty) is refused with ErrTicketRefused and
// nothing runs. The execution is audited as the second event of the call,
// linked to its decision. live receives the redacted output as it arrives.
func (s *Service) Redeem(ctx context.Context, id string, agent string, uid int, live Output) (Result, error) {
	t, err := s.tickets.Take(id)
	if err != nil {
		return Result{}, fmt.Errorf("%w: %v", ErrTicketRefused, err)
	}
	pr := t.Payload.(*prepared)
	switch {
	case t.UID != uid:
		msg := fmt.Sprintf("the ticket was issued to uid %d and presented by uid %d; it is spent and nothing ran", t.UID, uid)
		s.neverRan(pr, govern.ReasonTicketRefused, msg)
		return Result{}, fmt.Errorf("%w: %s", ErrTicketRefused, msg)
	case agent != "" && agent != t.Agent:
		msg := fmt.Sprintf("the ticket was issued to agent %s and presented by agent %s; it is spent and nothing ran", t.Agent, agent)
		s.neverRan(pr, govern.ReasonTicketRefused, msg)
		return Result{}, fmt.Errorf("%w: %s", ErrTicketRefused, msg)
	}
	if live != nil {
		// An empty stdout chunk first: the ticket is accepted and the run
		// starts now, so a stream that breaks from here on means the run
		// was killed with its gateway, not that it never started.
		live("stdout", nil)
	}
	return pr.b.run(ctx, pr, live), nil
}

// expired writes the second event of a ticket nobody redeemed.
func (s *Service) expired(t ticket.Ticket) {
	s.neverRan(t.Payload.(*prepared), govern.ReasonTicketExpired,
		fmt.Sprintf("the ticket issued at %s expired unredeemed at %s; nothing ran", t.Issued.UTC().Format(time.RFC3339), t.Expires.UTC().Format(time.RFC3339)))
}

// neverRan audits the execution half of a routed call that did not run,
// and returns its event id ("" when it could not be written).
func (s *Service) neverRan(pr *prepared, reason govern.Reason, msg string) string {
	rec := pr.base
	rec.Decision = govern.Decision{Outcome: govern.Allow, Reason: reason, Stage: "executor", Message: msg}
	// No sandbox_mode: nothing was started, so no isolation is vouched for.
	rec.Run = &audit.Run{Status: govern.StatusNeverRan, Reason: reason, TimeoutSeconds: pr.ceiling}
	return s.write(rec)
}
