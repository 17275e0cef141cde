package agentlaunch

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/audit"
	"github.com/mitrity/mitrity/govern/egress"
	"github.com/mitrity/mitrity/govern/sandbox"
)

// Deps are what a session runs with.
type Deps struct {
	// Helper is mitrity-sandboxrun, ProxyPath mitrity-egressproxy.
	Helper, ProxyPath string
	// ProxyLog receives the proxy's decision lines at ProxyLevel.
	ProxyLog   io.Writer
	ProxyLevel string
	// Scrub takes credential values out of the proxy's report before the
	// end event records it (denied_hosts: a target the agent spelled with
	// one); nil: none. ProxyLog's lines are its writer's to scrub.
	Scrub func(string) string
	// Audit is the gateway's audit log; Source the events' source.
	Audit  *audit.Writer
	Source string
	// Serve serves the session's admission socket, every call on it
	// admitted for the plan's agent inside session (the start event's
	// id), until stop. It is started after the start event is on disk and
	// before the agent.
	Serve func(session string) (stop func(), err error)
	Stdio sandbox.Stdio
	// LaunchedBy is the launcher's uid.
	LaunchedBy int
	Logger     zerolog.Logger
}

// Outcome is how a session ended.
type Outcome struct {
	// Session is the start event's id.
	Session string
	Result  sandbox.Result
	Egress  *egress.Report
	// ExitCode is what the launcher exits with: the agent's own; 124
	// timed out, 126 not started, 137 killed (the relay's codes).
	ExitCode int
}

// ErrAudit is a session refused because its start could not be audited.
var ErrAudit = errors.New("the agent session's start could not be audited: nothing was started (audit_unavailable)")

// Run runs the session p: its start event, durably on disk, before
// anything starts; the admission socket; the agent's egress proxy; the
// sandbox with the agent in it, until the agent ends or ctx is cancelled;
// then its end event, linked to the start.
func Run(ctx context.Context, p *Plan, d Deps) (Outcome, error) {
	id, err := audit.NewID(rand.Reader)
	if err != nil {
		return Outcome{ExitCode: 126}, err
	}
	card := p.card(d.LaunchedBy, audit.AgentSessionStart)
	mode := govern.SandboxBubblewrap
	card.Isolation.SandboxMode = &mode
	start := audit.AgentSessionEvent(d.Source, id, p.Agent, id, time.Now().UTC(), card, audit.Decision{Outcome: audit.OutcomeAllow,
		Message: "agent session started in the layered sandbox"})
	if err := d.Audit.Write(start); err != nil {
		return Outcome{ExitCode: 126}, fmt.Errorf("%w: %v", ErrAudit, err)
	}
	out := Outcome{Session: id}
	began := time.Now()
	res, rep, runErr := p.run(ctx, id, d)
	out.Result, out.Egress = res, rep
	if res.DurationMS == 0 {
		res.DurationMS = time.Since(began).Milliseconds()
	}
	out.ExitCode = exitCode(res)
	end := p.card(d.LaunchedBy, audit.AgentSessionEnd)
	end.Status, end.Reason, end.ExitCode, end.DurationMS = res.Status, res.Reason, res.ExitCode, res.DurationMS
	if res.Status == govern.StatusCompleted {
		end.Reason = ""
	}
	if res.SandboxMode.Valid() && res.Status.Started() {
		m := res.SandboxMode
		end.Isolation.SandboxMode = &m
	}
	if rep != nil {
		eg := audit.Egress{Allowed: rep.Allowed, Denied: rep.Denied, DeniedHosts: []string{}}
		for _, h := range rep.DeniedHosts {
			if d.Scrub != nil {
				h = d.Scrub(h)
			}
			eg.DeniedHosts = append(eg.DeniedHosts, h)
		}
		end.Egress = &eg
	}
	end.ProtectedCreated = res.ProtectedCreated
	endID, err := audit.NewID(rand.Reader)
	if err != nil {
		return out, errors.Join(runErr, err)
	}
	msg := "agent session ended: " + res.Status.String()
	if res.Message != "" {
		msg += ": " + res.Message
	}
	ev := audit.AgentSessionEvent(d.Source, endID, p.Agent, id, time.Now().UTC(), end, audit.Decision{Outcome: audit.OutcomeAllow, Message: msg})
	ev.Data.LinkedEventID = id
	if err := d.Audit.Write(ev); err != nil {
		runErr = errors.Join(runErr, fmt.Errorf("the agent session's end could not be audited: %w", err))
	}
	return out, runErr
}

// run serves the socket and the proxy and runs the sandbox.
func (p *Plan) run(ctx context.Context, session string, d Deps) (sandbox.Result, *egress.Report, error) {
	fail := func(format string, args ...any) (sandbox.Result, *egress.Report, error) {
		err := fmt.Errorf(format, args...)
		return sandbox.Result{Status: govern.StatusFailedToStart, Reason: govern.ReasonSpawnError, Message: err.Error()}, nil, err
	}
	stop, err := d.Serve(session)
	if err != nil {
		return fail("the session's admission socket: %v", err)
	}
	defer stop()
	spec := *p.Spec
	var finish func() egress.ProcessOutcome
	if len(p.Allowlist) > 0 {
		px, runCtx, f, err := egress.SuperviseProcess(ctx, egress.ProcessOptions{Path: d.ProxyPath, Config: p.Egress, Log: d.ProxyLog, Level: d.ProxyLevel})
		if err != nil {
			return fail("the agent's egress proxy: %v", err)
		}
		ctx, finish, spec.ProxySocket = runCtx, f, px.Socket()
	}
	res := sandbox.Spawn(ctx, d.Helper, &spec, d.Stdio)
	var rep *egress.Report
	if finish != nil {
		o := finish()
		rep = o.Report
		if o.Error != "" {
			d.Logger.Warn().Str("error", o.Error).Msg("agent session: the egress proxy gave no report")
		}
		if o.Died && res.Status == govern.StatusKilled {
			res.Message = "ended because its egress proxy failed: " + o.Error
		}
	}
	return res, rep, nil
}

// card is the session's audit card.
func (p *Plan) card(launchedBy int, phase string) *audit.AgentSession {
	s := p.Spec
	ss := s.Session
	h := sha256.New()
	for _, a := range s.Argv[1:] {
		h.Write([]byte(a))
		h.Write([]byte{0})
	}
	runAs := launchedBy
	if s.RunAs != nil {
		runAs = int(s.RunAs.UID)
	}
	writable := append(append([]string(nil), s.WorkspaceRoots...), ss.StateDirs...)
	for _, f := range ss.StateFiles {
		writable = append(writable, f.Path)
	}
	readOnly := []string{}
	for _, r := range ss.ReadOnly {
		if _, err := os.Lstat(r); err == nil && !strings.HasPrefix(r, "/etc/") {
			readOnly = append(readOnly, r)
		}
	}
	readOnly = append(readOnly, "/etc (the system runtime's entries only)")
	return &audit.AgentSession{
		Phase: phase, Framework: p.Framework.Name, Program: p.Program.Path, Args: len(s.Argv) - 1, ArgsSHA256: hex.EncodeToString(h.Sum(nil)),
		LaunchedBy: launchedBy, RunAs: runAs, Cwd: s.Cwd,
		Isolation: audit.AgentIsolation{Seccomp: string(seccompOf(s.Seccomp)), Reads: "default_deny", ReadOnly: readOnly, Writable: writable,
			Network: "egress_proxy", Routing: string(p.Routing), TTY: ss.TTY,
			EnvPassed: nonNil(p.Env.Passed), EnvStripped: nonNil(p.Env.Stripped), EnvAllowFrom: p.Env.AllowFrom},
		Allowlist: nonNil(p.Allowlist),
	}
}

func seccompOf(m sandbox.SeccompMode) sandbox.SeccompMode {
	if m == "" {
		return sandbox.SeccompRequired
	}
	return m
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// exitCode is what the launcher exits with for res: the agent's own when
// it completed, else the relay's codes.
func exitCode(res sandbox.Result) int {
	switch res.Status {
	case govern.StatusCompleted:
		if res.ExitCode != nil {
			return *res.ExitCode
		}
	case govern.StatusTimedOut:
		return 124
	case govern.StatusKilled:
		return 137
	}
	return 126
}
