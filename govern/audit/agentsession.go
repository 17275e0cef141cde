package audit

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mitrity/mitrity/govern"
)

// TypeAgentSession is an agent session that `mitrity-gateway agent`
// launched in the layered sandbox (docs/agent.md): one event when it
// starts (durably on disk before the agent starts, or it does not) and one
// when it ends, linked to the first. Every call the agent makes inside the
// session carries the start event's id as the head of its session
// ("<start id>/<the framework's session id>").
const TypeAgentSession = "dev.mitrity.agent_session"

// Agent session phases.
const (
	AgentSessionStart = "start"
	AgentSessionEnd   = "end"
)

// Tool and action type of an agent session's events.
const (
	ToolAgent         = "agent"
	ActionAgentLaunch = "agent:launch"
)

// AgentSession is the card of an agent session's event: who launched
// which framework, under what isolation, with which allowlist, and at the
// end how it ended. Never the agent's arguments (a prompt may hold
// anything) nor an environment value: names and hashes only.
type AgentSession struct {
	Phase     string `json:"phase"`
	Framework string `json:"framework"`
	// Program is the framework's program as resolved on the host; Args
	// counts its arguments and ArgsSHA256 hashes them (NUL-separated).
	Program    string `json:"program"`
	Args       int    `json:"args"`
	ArgsSHA256 string `json:"args_sha256"`
	// LaunchedBy is the uid that started the launcher; RunAs the uid the
	// agent runs as (exec.run_as for a root launcher).
	LaunchedBy int    `json:"launched_by"`
	RunAs      int    `json:"run_as"`
	Cwd        string `json:"cwd"`
	// Isolation is what the session runs under.
	Isolation AgentIsolation `json:"isolation"`
	// Allowlist is the agent process's own egress allowlist: its model
	// API and the policy's destinations for it.
	Allowlist []string `json:"allowlist"`
	// End only: how the agent ended, as an execution's status, and what
	// its proxy let through and refused.
	Status     govern.Status `json:"status,omitzero"`
	Reason     govern.Reason `json:"reason,omitempty"`
	ExitCode   *int          `json:"exit_code,omitempty"`
	DurationMS int64         `json:"duration_ms,omitempty"`
	Egress     *Egress       `json:"egress,omitempty"`
	// ProtectedCreated: protected names the agent created in a workspace
	// root, which ended the session (see Execution.ProtectedCreated).
	ProtectedCreated []string `json:"protected_created,omitempty"`
}

// AgentIsolation is the layered sandbox a session runs in.
type AgentIsolation struct {
	// SandboxMode: at the start the mode asked for (bubblewrap); at the
	// end the one that held (bubblewrap or bubblewrap_no_seccomp), absent
	// when the sandbox never started.
	SandboxMode *govern.SandboxMode `json:"sandbox_mode,omitempty"`
	Seccomp     string              `json:"seccomp"`
	// Reads is always "default_deny": ReadOnly, Writable and the
	// workspace roots are all the agent sees of the host.
	Reads    string   `json:"reads"`
	ReadOnly []string `json:"read_only"`
	Writable []string `json:"writable"`
	// Network is always "egress_proxy": no other way out.
	Network string `json:"network"`
	// Routing is the profile's builtin_exec_routing (governed_shell: the
	// launcher refuses any other).
	Routing string `json:"routing"`
	TTY     bool   `json:"tty"`
	// EnvPassed names the variables the agent got; EnvStripped those taken
	// away; EnvAllowFrom which variable added names (AGENT_ISO_ALLOW, the
	// legacy CLAUDE_ISO_ALLOW, or none).
	EnvPassed    []string `json:"env_passed"`
	EnvStripped  []string `json:"env_stripped"`
	EnvAllowFrom string   `json:"env_allow_from,omitempty"`
}

// AgentSessionEvent is a new event of an agent session for agent, at now.
func AgentSessionEvent(source, id, agent, session string, now time.Time, card *AgentSession, d Decision) *Event {
	return &Event{
		SpecVersion: SpecVersion, ID: id, Source: source, Type: TypeAgentSession, Time: now, Subject: agent,
		DataContentType: ContentType,
		Data: Data{Agent: agent, Surface: SurfaceCLI, Tool: ToolAgent, ActionType: ActionAgentLaunch, Session: session,
			Decision: d, AgentSession: card},
	}
}

// validateAgentSession checks the card's place and consistency.
func (e *Event) validateAgentSession() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	s := e.Data.AgentSession
	switch {
	case s == nil && e.Type == TypeAgentSession:
		bad("type %s without an agent session card", TypeAgentSession)
		return errs
	case s == nil:
		return nil
	case e.Type != TypeAgentSession:
		bad("type %s carries data.agent_session; only %s does", e.Type, TypeAgentSession)
	case e.Data.Execution != nil:
		bad("type %s carries an execution card", TypeAgentSession)
	}
	switch s.Phase {
	case AgentSessionStart:
		if s.Status != 0 || s.ExitCode != nil {
			bad("data.agent_session: a start carries no status or exit code")
		}
	case AgentSessionEnd:
		if !s.Status.Valid() {
			bad("data.agent_session.status: an end needs a valid status")
		}
		if (s.ExitCode != nil) != (s.Status == govern.StatusCompleted) {
			bad("data.agent_session.exit_code must be set exactly when status is completed (status %s)", s.Status)
		}
	default:
		bad("data.agent_session.phase %q, want start or end", s.Phase)
	}
	if m := s.Isolation.SandboxMode; m != nil && !m.Valid() {
		bad("data.agent_session.isolation.sandbox_mode %d is not in the vocabulary", uint8(*m))
	}
	if s.ArgsSHA256 != "" && !isSHA256(s.ArgsSHA256) {
		bad("data.agent_session.args_sha256 %q is not a hex SHA-256", s.ArgsSHA256)
	}
	return errs
}

// renderAgentSession is the card of an agent session event.
func renderAgentSession(p *printer, s *AgentSession) {
	p.line("Agent session (" + oneLine(s.Phase) + ")")
	p.row("  Framework", s.Framework)
	p.row("  Program", fmt.Sprintf("%s, %d arguments (sha256 %s)", s.Program, s.Args, dash(s.ArgsSHA256)))
	p.row("  Launched by uid", strconv.Itoa(s.LaunchedBy))
	p.row("  Runs as uid", strconv.Itoa(s.RunAs))
	p.row("  Cwd", s.Cwd)
	i := s.Isolation
	p.row("  Sandbox", SandboxModeExplained(i.SandboxMode))
	p.row("  Seccomp", i.Seccomp)
	p.row("  Reads", i.Reads+": "+dash(strings.Join(i.ReadOnly, ", ")))
	p.row("  Writable", dash(strings.Join(i.Writable, ", ")))
	p.row("  Network", i.Network+": "+dash(strings.Join(s.Allowlist, ", ")))
	p.row("  Routing", i.Routing)
	p.row("  Terminal", yesNo(i.TTY))
	env := dash(strings.Join(i.EnvPassed, ", "))
	if i.EnvAllowFrom != "" {
		env += " (names added by $" + i.EnvAllowFrom + ")"
	}
	p.row("  Environment", env+"; values are never recorded")
	p.row("  Stripped", fmt.Sprintf("%d: %s", len(i.EnvStripped), dash(strings.Join(i.EnvStripped, ", "))))
	if s.Phase != AgentSessionEnd {
		return
	}
	p.row("  Status", StatusExplained(s.Status))
	if s.Reason != "" {
		p.row("  Reason", ReasonExplained(s.Reason))
	}
	if s.ExitCode != nil {
		p.row("  Exit code", strconv.Itoa(*s.ExitCode))
	}
	p.row("  Duration", fmt.Sprintf("%d ms", s.DurationMS))
	if eg := s.Egress; eg != nil {
		p.row("  Egress", fmt.Sprintf("%d allowed, %d denied: %s", eg.Allowed, eg.Denied, dash(strings.Join(eg.DeniedHosts, ", "))))
	}
	if len(s.ProtectedCreated) > 0 {
		p.row("  Protected created", strings.Join(s.ProtectedCreated, ", "))
	}
}
