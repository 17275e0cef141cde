package audit

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern"
)

func upstreamCallRecord() Record {
	return Record{
		Call: govern.Call{Agent: "claude-build-7", Tool: "fs__read_file", ActionType: "mcp:fs__read_file", Surface: govern.SurfaceMCP,
			Session: "sess-42", Server: "fs", UpstreamTool: "read_file", Arguments: []byte(`{"path":"/srv/data/a.txt"}`)},
		Decision: govern.Decision{Outcome: govern.Allow},
	}
}

func completedCard() *UpstreamCall {
	return &UpstreamCall{Server: "fs", Method: "tools/call", Name: "read_file", Status: govern.StatusCompleted,
		ArgumentsSHA256: HashOf([]byte(`{"path":"/srv/data/a.txt"}`)), ArgumentsBytes: 26,
		ResultSHA256: HashOf([]byte("result")), ResultBytes: 6, RedactionCount: 1, DurationMS: 12,
		CredentialsInjected: []string{"fs_token"}}
}

func definitionRecord() Record {
	return Record{
		Call: govern.Call{Agent: "mitrity-gateway", Tool: "fs__read_file", ActionType: "mcp:fs__read_file", Surface: govern.SurfaceMCP,
			Server: "fs", UpstreamTool: "read_file"},
		Decision: govern.Decision{Outcome: govern.Deny, Reason: govern.ReasonToolDefinitionChanged, Stage: "tool_definition", Message: "changed"},
	}
}

func changedDefinition() *ToolDefinition {
	return &ToolDefinition{Server: "fs", Tool: "read_file", Served: "fs__read_file",
		SHA256: HashOf([]byte("new")), Previous: HashOf([]byte("old")), State: DefinitionWithheld, Reason: govern.ReasonToolDefinitionChanged}
}

func TestBuildUpstream(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		rec  Record
		u    *UpstreamCall
		d    *ToolDefinition
		typ  string
	}{
		{"a completed call", upstreamCallRecord(), completedCard(), nil, TypeUpstreamCall},
		{"a call that timed out", upstreamCallRecord(), func() *UpstreamCall {
			c := completedCard()
			c.Status, c.Reason, c.ResultSHA256, c.ResultBytes = govern.StatusTimedOut, govern.ReasonUpstreamTimeout, "", 0
			return c
		}(), nil, TypeUpstreamCall},
		// The answer came and the gateway withheld it: completed, with
		// the reason it was withheld (as the service records it).
		{"an answer withheld for injection", upstreamCallRecord(), func() *UpstreamCall {
			c := completedCard()
			c.Reason, c.IsError, c.Injection, c.InjectionAction = govern.ReasonPromptInjection, true, []string{"instruction_override"}, "deny"
			return c
		}(), nil, TypeUpstreamCall},
		{"an answer flagged for injection", upstreamCallRecord(), func() *UpstreamCall {
			c := completedCard()
			c.Injection, c.InjectionAction = []string{"role_marker", "instruction_override"}, "flag"
			return c
		}(), nil, TypeUpstreamCall},
		{"an upstream's request refused", Record{
			Call:     govern.Call{Agent: "upstream:fs", Tool: "sampling/createMessage", ActionType: "mcp:fs", Surface: govern.SurfaceMCP, Server: "fs"},
			Decision: govern.Decision{Outcome: govern.Deny, Reason: govern.ReasonUpstreamRequestRefused, Stage: "upstream_request", Message: "refused"},
		}, &UpstreamCall{Server: "fs", Method: "sampling/createMessage", Status: govern.StatusNeverRan, Reason: govern.ReasonUpstreamRequestRefused}, nil, TypeUpstreamCall},
		{"a changed definition", definitionRecord(), nil, changedDefinition(), TypeToolDefinition},
		{"a first seen definition", Record{Call: definitionRecord().Call, Decision: govern.Decision{Outcome: govern.Allow}}, nil,
			&ToolDefinition{Server: "fs", Tool: "read_file", Served: "fs__read_file", SHA256: HashOf([]byte("x")), State: DefinitionFirstSeen}, TypeToolDefinition},
		{"an approved definition", Record{Call: definitionRecord().Call, Decision: govern.Decision{Outcome: govern.Allow}}, nil,
			&ToolDefinition{Server: "fs", Tool: "read_file", Served: "fs__read_file", SHA256: HashOf([]byte("new")), Previous: HashOf([]byte("old")), State: DefinitionApproved}, TypeToolDefinition},
		{"a name that cannot be served", definitionRecord(), nil,
			&ToolDefinition{Server: "fs", Tool: "files.read", SHA256: HashOf([]byte("x")), State: DefinitionRefused, Reason: govern.ReasonToolNameInvalid}, TypeToolDefinition},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ev, err := testBuilder().BuildUpstream(tt.rec, tt.u, tt.d)
			assert.NilError(t, err)
			assert.Equal(t, ev.Type, tt.typ)
			assert.Check(t, ev.Data.Execution == nil, "the gateway did not execute it: no execution card, no sandbox_mode")
			assert.Check(t, ev.Data.Command == nil)
			assert.Check(t, is.Equal(string(ev.Data.Surface), "mcp"))
			b, err := json.Marshal(ev)
			assert.NilError(t, err)
			assert.Check(t, !strings.Contains(string(b), "sandbox_mode"), "%s", b)
			// Neither the arguments nor the result are in the record: only
			// their hashes and sizes.
			assert.Check(t, !strings.Contains(string(b), "/srv/data/a.txt"), "%s", b)
			var back Event
			assert.NilError(t, json.Unmarshal(b, &back))
			assert.NilError(t, back.Validate())
			assert.DeepEqual(t, back.Data.Upstream, tt.u)
			assert.DeepEqual(t, back.Data.ToolDefinition, tt.d)
		})
	}
}

func TestBuildUpstreamRefuses(t *testing.T) {
	t.Parallel()
	b := testBuilder()
	_, err := b.BuildUpstream(upstreamCallRecord(), nil, nil)
	assert.Check(t, is.ErrorContains(err, "an upstream card or a tool definition"), "no card: not silently a decision event")
	_, err = b.BuildUpstream(upstreamCallRecord(), completedCard(), changedDefinition())
	assert.Check(t, is.ErrorContains(err, "an upstream card or a tool definition"), "two cards: one is not silently dropped")
	run := upstreamCallRecord()
	run.Run = &Run{Status: govern.StatusCompleted}
	_, err = b.BuildUpstream(run, completedCard(), nil)
	assert.Check(t, is.ErrorIs(err, ErrInvalidEvent))
	_, err = b.BuildUpstream(run, nil, changedDefinition())
	assert.Check(t, is.ErrorIs(err, ErrInvalidEvent), "a definition event carries no execution card")
}

func TestValidateUpstream(t *testing.T) {
	t.Parallel()
	call := func(mutate func(ev *Event)) func(t *testing.T) *Event {
		return func(t *testing.T) *Event {
			ev, err := testBuilder().BuildUpstream(upstreamCallRecord(), completedCard(), nil)
			assert.NilError(t, err)
			mutate(ev)
			return ev
		}
	}
	def := func(mutate func(ev *Event)) func(t *testing.T) *Event {
		return func(t *testing.T) *Event {
			ev, err := testBuilder().BuildUpstream(definitionRecord(), nil, changedDefinition())
			assert.NilError(t, err)
			mutate(ev)
			return ev
		}
	}
	u := func(ev *Event) *UpstreamCall { return ev.Data.Upstream }
	d := func(ev *Event) *ToolDefinition { return ev.Data.ToolDefinition }
	tests := []struct {
		name  string
		event func(t *testing.T) *Event
		want  string
	}{
		{"upstream type without its card", call(func(ev *Event) { ev.Data.Upstream = nil }), "upstream card"},
		{"upstream type with an execution card", call(func(ev *Event) { ev.Data.Execution = executionOf(completedRecord().Run) }), "no execution card"},
		{"an upstream card on a decision", call(func(ev *Event) { ev.Type = TypeDecision }), "carries data.upstream"},
		{"a definition on an upstream call", call(func(ev *Event) { ev.Data.ToolDefinition = changedDefinition() }), "carries data.tool_definition"},
		{"no server", call(func(ev *Event) { u(ev).Server = "" }), "server and method are required"},
		{"no method", call(func(ev *Event) { u(ev).Method = "" }), "server and method are required"},
		{"status outside the vocabulary", call(func(ev *Event) { u(ev).Status = 0 }), "status 0"},
		{"a reason on a completed call", call(func(ev *Event) { u(ev).Reason = govern.ReasonUpstreamTimeout }), "on a completed call"},
		{"no reason on a failed call", call(func(ev *Event) { u(ev).Status = govern.StatusTimedOut }), "needs a reason"},
		{"a reason outside the vocabulary", call(func(ev *Event) { u(ev).Status, u(ev).Reason = govern.StatusKilled, "crashed" }), `reason "crashed"`},
		{"a bad argument hash", call(func(ev *Event) { u(ev).ArgumentsSHA256 = "abc" }), "not a hex SHA-256"},
		{"a bad result hash", call(func(ev *Event) { u(ev).ResultSHA256 = strings.Repeat("G", 64) }), "not a hex SHA-256"},
		{"negative sizes", call(func(ev *Event) { u(ev).ResultBytes = -1 }), "negative"},
		{"a negative duration", call(func(ev *Event) { u(ev).DurationMS = -1 }), "negative"},
		{"injection without an action", call(func(ev *Event) { u(ev).Injection = []string{"instruction_override"} }), "injection_action"},
		{"an action without injection", call(func(ev *Event) { u(ev).InjectionAction = "flag" }), "injection_action"},
		{"an unknown action", call(func(ev *Event) { u(ev).Injection, u(ev).InjectionAction = []string{"x"}, "warn" }), "injection_action"},
		{"a definition on a decision", def(func(ev *Event) { ev.Type = TypeDecision }), "carries data.tool_definition"},
		{"definition type without its card", def(func(ev *Event) { ev.Data.ToolDefinition = nil }), "without a tool definition"},
		{"a definition with an execution card", def(func(ev *Event) { ev.Data.Execution = executionOf(completedRecord().Run) }), "execution card"},
		{"no tool", def(func(ev *Event) { d(ev).Tool = "" }), "server and tool are required"},
		{"a bad hash", def(func(ev *Event) { d(ev).SHA256 = "" }), "hex SHA-256"},
		{"a bad previous hash", def(func(ev *Event) { d(ev).Previous = "old" }), "hex SHA-256"},
		{"an unknown state", def(func(ev *Event) { d(ev).State = "changed" }), "data.tool_definition.state"},
		{"withheld without a reason", def(func(ev *Event) { d(ev).Reason = "" }), "needs a reason"},
		{"a first sighting with a reason", def(func(ev *Event) { d(ev).State = DefinitionFirstSeen }), "no reason"},
		{"a change without the previous hash", def(func(ev *Event) { d(ev).Previous = "" }), "previous_sha256"},
		{"a change to the same hash", def(func(ev *Event) { d(ev).Previous = d(ev).SHA256 }), "previous_sha256"},
		{"a reason outside the definition's", def(func(ev *Event) { d(ev).Reason = govern.ReasonUpstreamTimeout }), `reason "upstream_timeout"`},
		{"a served name missing", def(func(ev *Event) { d(ev).Served = "" }), "served"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.event(t).Validate()
			assert.Check(t, is.ErrorIs(err, ErrInvalidEvent))
			assert.Check(t, is.ErrorContains(err, tt.want))
		})
	}
}

// TestUpstreamEventsRead: the reader and the filters take the upstream
// event types like the others.
func TestUpstreamEventsRead(t *testing.T) {
	t.Parallel()
	path := t.TempDir() + "/audit.jsonl"
	w, err := OpenWriter(path)
	assert.NilError(t, err)
	b := testBuilder()
	b.Now = func() time.Time { return fixedTime }
	for _, ev := range []*Event{
		must(b.BuildUpstream(upstreamCallRecord(), completedCard(), nil)),
		must(b.BuildUpstream(definitionRecord(), nil, changedDefinition())),
	} {
		assert.NilError(t, w.Write(ev))
	}
	assert.NilError(t, w.Close())
	got, err := ReadAll(path, Filter{})
	assert.NilError(t, err)
	assert.Equal(t, len(got), 2)
	assert.Equal(t, got[0].Type, TypeUpstreamCall)
	assert.Equal(t, got[1].Type, TypeToolDefinition)
}

func must(ev *Event, err error) *Event {
	if err != nil {
		panic(err)
	}
	return ev
}
