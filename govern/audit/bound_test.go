package audit

import (
	"encoding/json"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern"
)

func TestBound(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"", "short", strings.Repeat("a", 300), strings.Repeat("<", 300), strings.Repeat("é", 300),
		strings.Repeat("\x00", 300), strings.Repeat("\xff", 300), strings.Repeat("\u2028", 300), "a" + strings.Repeat("\"", 200)} {
		got := Bound(v, 256)
		b, err := json.Marshal(got)
		assert.NilError(t, err)
		assert.Check(t, len(b)-2 <= 256, "%q: %d bytes of JSON", v, len(b)-2)
		if len(v) <= 5 {
			assert.Check(t, is.Equal(got, v))
			continue
		}
		assert.Check(t, is.Contains(got, "…[cut by the gateway: "), "%q", got)
		assert.Check(t, is.Contains(got, "sha256:"+HashOf([]byte(v))), "%q", got)
		assert.Check(t, strings.HasPrefix(v, strings.Split(got, "…[cut")[0]), "a prefix is kept: %q", got)
	}
	// What fits is kept whole.
	v := strings.Repeat("x", MaxTextBytes)
	assert.Equal(t, Bound(v, MaxTextBytes), v)
}

// TestUpstreamEventBounded: an upstream event whose every string the agent
// or an upstream chose is as long as it can get (in the characters JSON
// escapes the longest) still fits in the room a forwarded call reserves,
// and says how long each cut value was.
func TestUpstreamEventBounded(t *testing.T) {
	t.Parallel()
	huge := strings.Repeat("<\x01", 1<<19) // 1 MiB, every byte a 6-byte escape
	var many []string
	for range 200 {
		many = append(many, huge)
	}
	var ids []string
	for i := range 200 {
		ids = append(ids, strings.Repeat("c", 125)+string(rune('a'+i%26))+string(rune('a'+i/26)))
	}
	rec := Record{
		Call: govern.Call{Agent: huge, Tool: huge, ActionType: huge, Surface: govern.SurfaceMCP, Session: huge,
			Server: huge, UpstreamTool: huge, Arguments: []byte(huge)},
		Decision: govern.Decision{Outcome: govern.Allow, Stage: huge, Rule: huge, Message: huge},
		Err:      errString(huge),
	}
	card := &UpstreamCall{Server: huge, Method: huge, Name: huge, Status: govern.StatusCompleted, Reason: govern.ReasonPromptInjection,
		IsError: true, ArgumentsSHA256: HashOf(nil), ArgumentsBytes: 1 << 62, ArgumentsRedacted: 1 << 62, ResultSHA256: HashOf(nil),
		ResultBytes: 1 << 62, RedactionCount: 1 << 62, Truncated: true, Injection: many, InjectionAction: "deny",
		CredentialsInjected: ids, DurationMS: 1 << 62, ServerSandbox: huge}
	ev, err := testBuilder().BuildUpstream(rec, card, nil)
	assert.NilError(t, err)
	b, err := json.Marshal(ev)
	assert.NilError(t, err)
	t.Logf("the longest upstream event takes %d bytes", len(b)+2)
	assert.Check(t, len(b)+2 <= MaxUpstreamEventBytes, "the event takes %d bytes, the room is %d", len(b)+2, MaxUpstreamEventBytes)
	assert.Check(t, is.Len(ev.Data.Upstream.Injection, MaxInjectionKinds))
	assert.Check(t, is.Len(ev.Data.Upstream.CredentialsInjected, MaxCredentialIDs))
	assert.Check(t, is.Contains(ev.Data.Upstream.Name, "sha256:"+HashOf([]byte(huge))))
	assert.Check(t, is.Len(card.Name, len(huge)), "the caller's card is not changed")

	def, err := testBuilder().BuildUpstream(Record{Call: rec.Call, Decision: govern.Decision{Outcome: govern.Deny, Reason: govern.ReasonToolNameInvalid,
		Stage: "tool_definition", Message: huge}}, nil, &ToolDefinition{Server: huge, Tool: huge, SHA256: HashOf(nil), State: DefinitionRefused,
		Reason: govern.ReasonToolNameInvalid})
	assert.NilError(t, err)
	b, err = json.Marshal(def)
	assert.NilError(t, err)
	assert.Check(t, len(b)+2 <= MaxUpstreamEventBytes, "the definition event takes %d bytes", len(b)+2)
}

type errString string

func (e errString) Error() string { return string(e) }
