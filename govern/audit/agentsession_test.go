package audit

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern"
)

func agentCard(phase string) *AgentSession {
	mode := govern.SandboxBubblewrap
	return &AgentSession{Phase: phase, Framework: "claude", Program: "/opt/claude/bin/claude", Args: 2,
		ArgsSHA256: "0000000000000000000000000000000000000000000000000000000000000000", LaunchedBy: 0, RunAs: 1001, Cwd: "/srv/ws",
		Isolation: AgentIsolation{SandboxMode: &mode, Seccomp: "required", Reads: "default_deny", ReadOnly: []string{"/usr"},
			Writable: []string{"/srv/ws"}, Network: "egress_proxy", Routing: "governed_shell", EnvPassed: []string{"HOME", "PATH"},
			EnvStripped: []string{"GH_TOKEN"}, EnvAllowFrom: "AGENT_ISO_ALLOW"},
		Allowlist: []string{"api.anthropic.com:443"}}
}

// An agent session's events validate as the card says: a start carries no
// status, an end a valid one with an exit code exactly when completed, and
// no other type carries the card.
func TestAgentSessionEvent(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	zero := 0
	for _, tc := range []struct {
		name string
		ev   func() *Event
		want string
	}{
		{"start", func() *Event {
			return AgentSessionEvent("mitrity-gateway://h", "s1", "claude-code", "s1", now, agentCard(AgentSessionStart), Decision{Outcome: OutcomeAllow})
		}, ""},
		{"end", func() *Event {
			c := agentCard(AgentSessionEnd)
			c.Status, c.ExitCode, c.Egress = govern.StatusCompleted, &zero, &Egress{Allowed: 3, Denied: 1, DeniedHosts: []string{"x.test:443"}}
			ev := AgentSessionEvent("mitrity-gateway://h", "s2", "claude-code", "s1", now, c, Decision{Outcome: OutcomeAllow})
			ev.Data.LinkedEventID = "s1"
			return ev
		}, ""},
		{"end without status", func() *Event {
			return AgentSessionEvent("src", "s2", "a", "s1", now, agentCard(AgentSessionEnd), Decision{Outcome: OutcomeAllow})
		}, "an end needs a valid status"},
		{"killed with an exit code", func() *Event {
			c := agentCard(AgentSessionEnd)
			c.Status, c.ExitCode = govern.StatusKilled, &zero
			return AgentSessionEvent("src", "s2", "a", "s1", now, c, Decision{Outcome: OutcomeAllow})
		}, "exit_code must be set exactly when status is completed"},
		{"start with a status", func() *Event {
			c := agentCard(AgentSessionStart)
			c.Status = govern.StatusCompleted
			return AgentSessionEvent("src", "s1", "a", "s1", now, c, Decision{Outcome: OutcomeAllow})
		}, "a start carries no status"},
		{"unknown phase", func() *Event {
			return AgentSessionEvent("src", "s1", "a", "s1", now, agentCard("middle"), Decision{Outcome: OutcomeAllow})
		}, `phase "middle"`},
		{"card on another type", func() *Event {
			ev := AgentSessionEvent("src", "s1", "a", "s1", now, agentCard(AgentSessionStart), Decision{Outcome: OutcomeAllow})
			ev.Type = TypeDecision
			return ev
		}, "only " + TypeAgentSession + " does"},
		{"type without its card", func() *Event {
			ev := AgentSessionEvent("src", "s1", "a", "s1", now, nil, Decision{Outcome: OutcomeAllow})
			return ev
		}, "without an agent session card"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.ev().Validate()
			if tc.want == "" {
				assert.NilError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

// The card reads back from its JSON and renders for audit show and list.
func TestAgentSessionRender(t *testing.T) {
	t.Parallel()
	c := agentCard(AgentSessionEnd)
	code := 0
	c.Status, c.ExitCode, c.DurationMS = govern.StatusCompleted, &code, 1234
	c.Egress = &Egress{Allowed: 2, Denied: 1, DeniedHosts: []string{"unlisted.test:443"}}
	ev := AgentSessionEvent("mitrity-gateway://h", "e2", "claude-code", "e1", time.Unix(0, 0), c, Decision{Outcome: OutcomeAllow})
	b, err := json.Marshal(ev)
	assert.NilError(t, err)
	var back Event
	assert.NilError(t, json.Unmarshal(b, &back))
	assert.NilError(t, back.Validate())
	assert.DeepEqual(t, back.Data.AgentSession, c)
	var card bytes.Buffer
	assert.NilError(t, RenderCard(&card, &back))
	for _, want := range []string{"Agent session (end)", "default_deny: /usr", "egress_proxy: api.anthropic.com:443", "HOME, PATH (names added by $AGENT_ISO_ALLOW)", "1: GH_TOKEN", "2 allowed, 1 denied: unlisted.test:443"} {
		assert.Check(t, is.Contains(card.String(), want))
	}
	var list bytes.Buffer
	assert.NilError(t, RenderList(&list, []*Event{&back}))
	assert.Check(t, is.Contains(list.String(), "session_end:completed"))
}
