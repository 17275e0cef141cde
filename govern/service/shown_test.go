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

// peerRecorder is the agent's side of a call: it records what reaches it,
// and answers with answer ("ok" when empty).
type peerRecorder struct {
	got    []any
	answer string
}

func (p *peerRecorder) say() string {
	if p.answer == "" {
		return "ok"
	}
	return p.answer
}

func (p *peerRecorder) CreateMessage(_ context.Context, q *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	p.got = append(p.got, q)
	return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: p.say()}}, nil
}

func (p *peerRecorder) Elicit(_ context.Context, q *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	p.got = append(p.got, q)
	if p.answer != "" {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"k": p.answer}}, nil
	}
	return &mcp.ElicitResult{Action: "decline"}, nil
}

// shownRedact is the call's redactor of TestSampleAndElicitAnswers: the
// gateway's credential values, as the forward builds it (with the
// profile's DLP detectors too).
func shownRedact(s *Service) func(string) (string, int) {
	return func(v string) (string, int) {
		red, _ := s.known.redactor()
		if r := red.Scrub(v); r != v {
			return r, 1
		}
		return v, 0
	}
}

// TestSampleAndElicitAnswers: what the agent answers a server's request
// goes back to the server, the way a tool call's arguments do: held to
// the profile's DLP on arguments. A secret in it is refused under
// dlp.arguments: deny (the server gets an error, not the answer) and
// replaced by its marker under redact; an answer without one passes.
func TestSampleAndElicitAnswers(t *testing.T) {
	for _, tt := range []struct {
		name   string
		deny   bool
		answer string
		// refused: the server gets an error; else the answer, which
		// must not hold the secret.
		refused bool
	}{
		{name: "a secret, deny", deny: true, answer: "here: " + shownSecret, refused: true},
		{name: "a secret, redact", answer: "here: " + shownSecret},
		{name: "nothing secret, deny", deny: true, answer: "just words"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := shownService()
			peer := &peerRecorder{answer: tt.answer}
			ctx := WithPeer(context.Background(), peer)
			defer s.ups.calls.hold(ctx, "srv", answerRules{redact: shownRedact(s), deny: tt.deny})()
			res, err := s.sample(ctx, "srv", &mcp.CreateMessageParams{MaxTokens: 5,
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "what is the key?"}}}})
			eres, eerr := s.elicit(ctx, "srv", &mcp.ElicitParams{Message: "the key?", RequestedSchema: map[string]any{"type": "object"}})
			if tt.refused {
				if err == nil || !strings.Contains(err.Error(), "dlp.arguments: deny") {
					t.Errorf("sampling: want a refusal, got %v, %v", res, err)
				}
				if eerr == nil || !strings.Contains(eerr.Error(), "dlp.arguments: deny") {
					t.Errorf("elicitation: want a refusal, got %v, %v", eres, eerr)
				}
				return
			}
			if err != nil || eerr != nil {
				t.Fatalf("sample: %v; elicit: %v", err, eerr)
			}
			for what, v := range map[string]any{"the sampling answer": res, "the elicitation answer": eres} {
				b, _ := json.Marshal(v)
				if strings.Contains(string(b), shownSecret) {
					t.Errorf("%s holds the secret: %s", what, b)
				}
				if !strings.Contains(string(b), strings.Fields(tt.answer)[0]) {
					t.Errorf("%s lost the rest of the answer: %s", what, b)
				}
			}
		})
	}
}

// TestSampleAndElicitRedacted: an allowed sampling or elicitation request
// reaches the agent with every credential value the gateway holds
// redacted, in the messages, the system prompt and the requested schema.
func TestSampleAndElicitRedacted(t *testing.T) {
	s := shownService()
	peer := &peerRecorder{}
	ctx := WithPeer(context.Background(), peer)
	defer s.ups.calls.hold(ctx, "srv", answerRules{redact: shownRedact(s)})()
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
