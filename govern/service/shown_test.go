package service

//lint:file-ignore SA1019 MCP sampling is deprecated by the 2026-07-28 protocol revision but still passed on during its deprecation window (allow_requests.sampling)

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mitrity/mitrity/govern/dlp"
)

const shownSecret = "ghp_shownTestValue0123456789abcdefABCD"

// shownForms is the secret in the forms an upstream would hide it in.
func shownForms() string {
	return shownSecret + " " + base64.StdEncoding.EncodeToString([]byte(shownSecret)) + " " + hex.EncodeToString([]byte(shownSecret))
}

func shownService() *Service {
	s := &Service{ups: &upstreams{}}
	s.known.add(dlp.Secret{ID: "tok", Value: shownSecret})
	return s
}

// checkShown fails when b holds the secret in any form, or fewer than n
// redaction markers.
func checkShown(t *testing.T, what string, v any, n int) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range strings.Fields(shownForms()) {
		if strings.Contains(string(b), f) {
			t.Errorf("%s holds %q: %s", what, f, b)
		}
	}
	if got := strings.Count(string(b), "[REDACTED:credential:tok]"); got < n {
		t.Errorf("%s has %d redactions, want %d: %s", what, got, n, b)
	}
}

func TestShownDefinitions(t *testing.T) {
	s := shownService()
	tool := &mcp.Tool{Name: "t", Description: "uses " + shownForms(),
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string", "default": shownSecret}}}}
	got := shown(s, tool)
	if got == nil || got == tool {
		t.Fatalf("shown(tool) = %v", got)
	}
	checkShown(t, "the tool shown", got, 4)
	if !strings.Contains(tool.Description, shownSecret) {
		t.Error("the catalog's definition was changed")
	}
	clean := &mcp.Prompt{Name: "p", Description: "nothing secret"}
	if got := shown(s, clean); got != clean {
		t.Errorf("a definition with nothing to redact is copied: %v", got)
	}
	res := shownAll(s, []struct{ Def *mcp.Resource }{{&mcp.Resource{URI: "x://r", Name: "r", Description: shownSecret}}, {nil}},
		func(e *struct{ Def *mcp.Resource }) **mcp.Resource { return &e.Def })
	if len(res) != 2 || res[1].Def != nil {
		t.Fatalf("shownAll: %v", res)
	}
	checkShown(t, "the resource shown", res[0].Def, 1)
}

// peerRecorder is the agent's side of a call: it records what reaches it.
type peerRecorder struct{ got []any }

func (p *peerRecorder) CreateMessage(_ context.Context, q *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	p.got = append(p.got, q)
	return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "ok"}}, nil
}

func (p *peerRecorder) Elicit(_ context.Context, q *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	p.got = append(p.got, q)
	return &mcp.ElicitResult{Action: "decline"}, nil
}

// TestSampleAndElicitRedacted: an allowed sampling or elicitation request
// reaches the agent with every credential value the gateway holds
// redacted, in the messages, the system prompt and the requested schema.
func TestSampleAndElicitRedacted(t *testing.T) {
	s := shownService()
	peer := &peerRecorder{}
	ctx := WithPeer(context.Background(), peer)
	defer s.ups.calls.hold(ctx, "srv")()
	if _, err := s.sample(ctx, "srv", &mcp.CreateMessageParams{MaxTokens: 5, SystemPrompt: "key " + shownSecret,
		Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "send " + shownForms()}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.elicit(ctx, "srv", &mcp.ElicitParams{Message: "confirm " + shownSecret,
		RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"k": map[string]any{"type": "string", "description": shownSecret}}}}); err != nil {
		t.Fatal(err)
	}
	if len(peer.got) != 2 {
		t.Fatalf("the agent got %d requests", len(peer.got))
	}
	checkShown(t, "the sampling request", peer.got[0], 4)
	checkShown(t, "the elicitation request", peer.got[1], 2)
}
