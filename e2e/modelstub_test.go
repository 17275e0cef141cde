package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
)

// modelStub is a scripted stand-in for the model APIs the agent frameworks
// call, on 127.0.0.1 only: Anthropic Messages (Claude Code), OpenAI
// Responses (Codex CLI), Gemini generateContent (Gemini CLI) and OpenAI
// Chat Completions (OpenCode), streamed as each framework asks.
//
// The script is a list of tool calls. A request that offers the tool a
// step needs, and carries n tool results, is answered with step n's call;
// once every step has its result, or for a request that offers no tools
// (titles, summaries), the answer is plain text. The tool results a
// framework sends back are recorded: that is exactly what its model saw.
// Steps are matched to results by order, which every API keeps.
type modelStub struct {
	srv   *httptest.Server
	steps []stubStep

	mu     sync.Mutex
	seen   map[int]stubSeen  // step -> the tool result the framework sent
	issued map[int]int       // step -> how many times it was asked for
	log    []string          // one line per request, for failure messages
	first  map[string]string // API -> the head of its first request body
	last   map[string]string // API -> the tail of its latest request body
}

// stubStep is one tool call the model makes.
type stubStep struct {
	MCP     bool   // call the MCP tool named *shell__execute, not the framework's shell tool
	Command string // the command it asks to run
}

// stubSeen is one tool result as the framework sent it to the model.
type stubSeen struct {
	Raw  string // the JSON of the result item, as sent
	Text string // every string in it (JSON inside strings unfolded), one per line
}

// shellTools are the frameworks' own shell tools and the argument that
// carries the command: Claude Code, Codex CLI, Gemini CLI, OpenCode.
var shellTools = []struct{ name, arg string }{
	{"Bash", "command"}, {"exec_command", "cmd"}, {"run_shell_command", "command"}, {"bash", "command"}, {"shell", "command"},
}

// stubText is the model's closing answer.
const stubText = "stub model: done"

func newModelStub(steps ...stubStep) *modelStub {
	m := unstartedModelStub(steps...)
	m.srv = httptest.NewServer(http.HandlerFunc(m.serve))
	return m
}

// unstartedModelStub is the stub without its server, for a test that
// serves m.serve elsewhere (a network namespace's address).
func unstartedModelStub(steps ...stubStep) *modelStub {
	return &modelStub{steps: steps, seen: map[int]stubSeen{}, issued: map[int]int{}, first: map[string]string{}, last: map[string]string{}}
}

// URL is the stub's base URL, http://127.0.0.1:PORT.
func (m *modelStub) URL() string { return m.srv.URL }

func (m *modelStub) Close() { m.srv.Close() }

// Seen is the tool result of step i, and whether the framework sent one.
func (m *modelStub) Seen(i int) (stubSeen, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.seen[i]
	return s, ok
}

// Issued is how many times the model asked for step i.
func (m *modelStub) Issued(i int) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.issued[i]
}

// Dump is the request log, for a failure message.
func (m *modelStub) Dump() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	for _, l := range m.log {
		b.WriteString("  " + l + "\n")
	}
	kinds := make([]string, 0, len(m.first))
	for k := range m.first {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		b.WriteString("  first " + k + " request: " + m.first[k] + "\n")
		b.WriteString("  latest " + k + " request: " + m.last[k] + "\n")
	}
	return b.String()
}

func (m *modelStub) logf(format string, args ...any) {
	m.mu.Lock()
	m.log = append(m.log, fmt.Sprintf(format, args...))
	m.mu.Unlock()
}

// toolCall is the call the stub answers with: a tool name (and for
// Codex's MCP tools the namespace it sits in) and its JSON arguments.
type toolCall struct {
	step            int
	namespace, name string
	args            string
}

// offered is a tool a request offers the model.
type offered struct{ namespace, name string }

// next decides a request's answer from the tools it offers and the tool
// results it carries, and records those results. nil: answer with text.
func (m *modelStub) next(tools []offered, results []json.RawMessage) *toolCall {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, r := range results {
		if i < len(m.steps) {
			m.seen[i] = stubSeen{Raw: string(r), Text: flatten(r)}
		}
	}
	n := len(results)
	if n >= len(m.steps) {
		return nil
	}
	step := m.steps[n]
	for _, t := range tools {
		if step.MCP {
			if strings.HasSuffix(t.name, "shell__execute") {
				m.issued[n]++
				args, _ := json.Marshal(map[string]any{"command": step.Command})
				return &toolCall{step: n, namespace: t.namespace, name: t.name, args: string(args)}
			}
			continue
		}
		for _, s := range shellTools {
			if t.namespace == "" && t.name == s.name {
				m.issued[n]++
				a := map[string]any{s.arg: step.Command}
				if s.name != "exec_command" {
					a["description"] = "Run the scripted command"
				}
				args, _ := json.Marshal(a)
				return &toolCall{step: n, name: t.name, args: string(args)}
			}
		}
	}
	return nil
}

func (m *modelStub) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	p := r.URL.Path
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(p, "/messages/count_tokens"):
		m.logf("%s %s", r.Method, p)
		writeJSON(w, map[string]any{"input_tokens": 100})
	case r.Method == http.MethodPost && strings.HasSuffix(p, "/messages"):
		m.anthropic(w, body)
	case r.Method == http.MethodPost && strings.HasSuffix(p, "/responses"):
		m.responses(w, body)
	case r.Method == http.MethodPost && strings.HasSuffix(p, "/chat/completions"):
		m.chat(w, body)
	case r.Method == http.MethodPost && strings.HasSuffix(p, ":countTokens"):
		m.logf("%s %s", r.Method, p)
		writeJSON(w, map[string]any{"totalTokens": 100})
	case r.Method == http.MethodPost && (strings.HasSuffix(p, ":streamGenerateContent") || strings.HasSuffix(p, ":generateContent")):
		m.gemini(w, body, strings.HasSuffix(p, ":streamGenerateContent"))
	case r.Method == http.MethodGet && strings.HasSuffix(p, "/models"):
		m.logf("%s %s", r.Method, p)
		writeJSON(w, map[string]any{"object": "list", "data": []any{map[string]any{"id": "stub-model", "object": "model", "owned_by": "stub"}}, "models": []any{}})
	default:
		m.logf("%s %s: not served (404)", r.Method, r.URL)
		http.NotFound(w, r)
	}
}

// keepBody keeps the head of the first request body of each kind and the
// tail of the latest (which holds the whole conversation), for failure
// messages.
func (m *modelStub) keepBody(kind string, body []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := string(body)
	if _, ok := m.first[kind]; !ok {
		m.first[kind] = head(s, 3000)
	}
	if len(s) > 6000 {
		s = "…" + s[len(s)-6000:]
	}
	m.last[kind] = s
}

func head(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// anthropicRequest is what a stand-in reads of an Anthropic Messages
// request.
type anthropicRequest struct {
	Model   string
	Stream  bool
	Tools   []string          // the names of the tools it offers
	Results []json.RawMessage // its tool_result blocks, in order
}

func decodeAnthropic(body []byte) (anthropicRequest, error) {
	var req struct {
		Model    string `json:"model"`
		Stream   bool   `json:"stream"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return anthropicRequest{}, err
	}
	out := anthropicRequest{Model: req.Model, Stream: req.Stream}
	for _, t := range req.Tools {
		out.Tools = append(out.Tools, t.Name)
	}
	for _, msg := range req.Messages {
		var blocks []json.RawMessage
		if json.Unmarshal(msg.Content, &blocks) != nil {
			continue // a plain string
		}
		for _, b := range blocks {
			var h struct{ Type string }
			if json.Unmarshal(b, &h) == nil && h.Type == "tool_result" {
				out.Results = append(out.Results, b)
			}
		}
	}
	return out, nil
}

// anthropic answers POST /v1/messages.
func (m *modelStub) anthropic(w http.ResponseWriter, body []byte) {
	req, err := decodeAnthropic(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	m.keepBody("anthropic", body)
	var tools []offered
	for _, name := range req.Tools {
		tools = append(tools, offered{name: name})
	}
	call := m.next(tools, req.Results)
	m.logf("POST messages model=%s tools=%d results=%d stream=%v -> %s", req.Model, len(tools), len(req.Results), req.Stream, describe(call))
	writeAnthropic(w, req, "stub", call)
}

// writeAnthropic answers req with call (nil: the closing text), as one
// message or, for a streaming request, as its events; tag names the
// stand-in in the message and tool_use ids.
func writeAnthropic(w http.ResponseWriter, req anthropicRequest, tag string, call *toolCall) {
	var block map[string]any
	stop := "end_turn"
	if call != nil {
		stop = "tool_use"
		var input any
		json.Unmarshal([]byte(call.args), &input)
		block = map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%s%02d", tag, call.step), "name": call.name, "input": input}
	} else {
		block = map[string]any{"type": "text", "text": stubText}
	}
	usage := map[string]any{"input_tokens": 100, "output_tokens": 10, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
	msgID := fmt.Sprintf("msg_%s%d", tag, len(req.Results))
	if !req.Stream {
		writeJSON(w, map[string]any{"id": msgID, "type": "message", "role": "assistant", "model": req.Model,
			"content": []any{block}, "stop_reason": stop, "stop_sequence": nil, "usage": usage})
		return
	}
	sse := newSSE(w)
	sse.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{"id": msgID, "type": "message",
		"role": "assistant", "model": req.Model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": usage}})
	if call != nil {
		sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "tool_use", "id": block["id"], "name": call.name, "input": map[string]any{}}})
		sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": call.args}})
	} else {
		sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}})
		sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": stubText}})
	}
	sse.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	sse.event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 10}})
	sse.event("message_stop", map[string]any{"type": "message_stop"})
}

// responses answers POST /v1/responses (Codex CLI).
func (m *modelStub) responses(w http.ResponseWriter, body []byte) {
	var req struct {
		Model  string            `json:"model"`
		Stream bool              `json:"stream"`
		Input  []json.RawMessage `json:"input"`
		Tools  []struct {
			Type  string `json:"type"`
			Name  string `json:"name"`
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	m.keepBody("responses", body)
	var tools []offered
	for _, t := range req.Tools {
		if t.Type == "namespace" {
			for _, sub := range t.Tools {
				tools = append(tools, offered{namespace: t.Name, name: sub.Name})
			}
			continue
		}
		tools = append(tools, offered{name: t.Name})
	}
	var results []json.RawMessage
	for _, it := range req.Input {
		var h struct {
			Type   string `json:"type"`
			CallID string `json:"call_id"`
		}
		if json.Unmarshal(it, &h) == nil && strings.HasSuffix(h.Type, "_output") && h.CallID != "" {
			results = append(results, it)
		}
	}
	call := m.next(tools, results)
	m.logf("POST responses model=%s tools=%d results=%d -> %s", req.Model, len(tools), len(results), describe(call))
	var item map[string]any
	if call != nil {
		item = map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_stub%02d", call.step), "call_id": fmt.Sprintf("call_stub%02d", call.step),
			"name": call.name, "arguments": call.args, "status": "completed"}
		if call.namespace != "" {
			item["namespace"] = call.namespace
		}
	} else {
		item = map[string]any{"type": "message", "id": fmt.Sprintf("msg_stub%d", len(results)), "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": stubText, "annotations": []any{}}}}
	}
	respID := fmt.Sprintf("resp_stub%d", len(results))
	usage := map[string]any{"input_tokens": 100, "input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens": 10,
		"output_tokens_details": map[string]any{"reasoning_tokens": 0}, "total_tokens": 110}
	sse := newSSE(w)
	sse.event("response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": respID}})
	sse.event("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": 0, "item": item})
	sse.event("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	sse.event("response.completed", map[string]any{"type": "response.completed", "response": map[string]any{"id": respID, "usage": usage,
		"output": []any{item}, "status": "completed"}})
}

// chat answers POST /v1/chat/completions (OpenCode's openai-compatible
// provider).
func (m *modelStub) chat(w http.ResponseWriter, body []byte) {
	var req struct {
		Model    string            `json:"model"`
		Stream   bool              `json:"stream"`
		Messages []json.RawMessage `json:"messages"`
		Tools    []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	m.keepBody("chat", body)
	var tools []offered
	for _, t := range req.Tools {
		tools = append(tools, offered{name: t.Function.Name})
	}
	var results []json.RawMessage
	for _, msg := range req.Messages {
		var h struct{ Role string }
		if json.Unmarshal(msg, &h) == nil && h.Role == "tool" {
			results = append(results, msg)
		}
	}
	call := m.next(tools, results)
	m.logf("POST chat/completions model=%s tools=%d results=%d stream=%v -> %s", req.Model, len(tools), len(results), req.Stream, describe(call))
	id := fmt.Sprintf("chatcmpl-stub%d", len(results))
	finish := "stop"
	delta := map[string]any{"role": "assistant", "content": stubText}
	if call != nil {
		finish = "tool_calls"
		delta = map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"index": 0,
			"id": fmt.Sprintf("call_stub%02d", call.step), "type": "function", "function": map[string]any{"name": call.name, "arguments": call.args}}}}
	}
	usage := map[string]any{"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
	if !req.Stream {
		msg := delta
		delete(msg, "index")
		writeJSON(w, map[string]any{"id": id, "object": "chat.completion", "created": 1, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}, "usage": usage})
		return
	}
	sse := newSSE(w)
	sse.data(map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1, "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": nil}}})
	sse.data(map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1, "model": req.Model,
		"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish}}, "usage": usage})
	sse.raw("[DONE]")
}

// gemini answers POST /v1beta/models/M:streamGenerateContent and
// :generateContent (Gemini CLI).
func (m *modelStub) gemini(w http.ResponseWriter, body []byte, stream bool) {
	var req struct {
		Contents []struct {
			Role  string            `json:"role"`
			Parts []json.RawMessage `json:"parts"`
		} `json:"contents"`
		Tools []struct {
			FunctionDeclarations []struct {
				Name string `json:"name"`
			} `json:"functionDeclarations"`
		} `json:"tools"`
		GenerationConfig struct {
			ResponseMimeType string `json:"responseMimeType"`
		} `json:"generationConfig"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	m.keepBody("gemini", body)
	var tools []offered
	for _, t := range req.Tools {
		for _, f := range t.FunctionDeclarations {
			tools = append(tools, offered{name: f.Name})
		}
	}
	var results []json.RawMessage
	for _, c := range req.Contents {
		for _, p := range c.Parts {
			var h struct {
				FunctionResponse json.RawMessage `json:"functionResponse"`
			}
			if json.Unmarshal(p, &h) == nil && h.FunctionResponse != nil {
				results = append(results, p)
			}
		}
	}
	call := m.next(tools, results)
	m.logf("POST gemini stream=%v tools=%d results=%d mime=%s -> %s", stream, len(tools), len(results), req.GenerationConfig.ResponseMimeType, describe(call))
	var part map[string]any
	switch {
	case call != nil:
		var args any
		json.Unmarshal([]byte(call.args), &args)
		part = map[string]any{"functionCall": map[string]any{"name": call.name, "args": args, "id": fmt.Sprintf("call_stub%02d", call.step)}}
	case req.GenerationConfig.ResponseMimeType == "application/json":
		// Gemini CLI's side questions (who speaks next, which model)
		// want JSON; this answers them so that the turn ends.
		part = map[string]any{"text": `{"reasoning":"stub","next_speaker":"user","model_choice":"flash","complexity_reasoning":"stub","complexity_score":10}`}
	default:
		part = map[string]any{"text": stubText}
	}
	resp := map[string]any{"candidates": []any{map[string]any{"index": 0, "finishReason": "STOP",
		"content": map[string]any{"role": "model", "parts": []any{part}}}},
		"usageMetadata": map[string]any{"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110},
		"modelVersion":  "stub-model"}
	if !stream {
		writeJSON(w, resp)
		return
	}
	newSSE(w).data(resp)
}

func describe(c *toolCall) string {
	if c == nil {
		return "text"
	}
	n := c.name
	if c.namespace != "" {
		n = c.namespace + "." + n
	}
	return fmt.Sprintf("step %d: %s %s", c.step, n, c.args)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// sse writes one server-sent-events response.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

func (s *sse) event(name string, v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", name, b)
	s.flush()
}

func (s *sse) data(v any) {
	b, _ := json.Marshal(v)
	s.raw(string(b))
}

func (s *sse) raw(line string) {
	fmt.Fprintf(s.w, "data: %s\n\n", line)
	s.flush()
}

func (s *sse) flush() {
	if s.f != nil {
		s.f.Flush()
	}
}

// flatten is every string and scalar in a JSON value, one per line, with
// JSON held inside a string unfolded too: a framework may send the tool's
// result as text, as structured JSON, or as JSON in a string, and the
// assertions are on what the model can read, not on the layout.
func flatten(raw json.RawMessage) string {
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return string(raw)
	}
	var b strings.Builder
	flattenInto(&b, "", v, 0)
	return b.String()
}

func flattenInto(b *strings.Builder, key string, v any, depth int) {
	if depth > 8 {
		return
	}
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			flattenInto(b, k, x[k], depth+1)
		}
	case []any:
		for _, e := range x {
			flattenInto(b, key, e, depth+1)
		}
	case string:
		b.WriteString(labelled(key, x))
		if t := strings.TrimSpace(x); strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[") {
			var inner any
			d := json.NewDecoder(strings.NewReader(t))
			d.UseNumber()
			if d.Decode(&inner) == nil {
				flattenInto(b, key, inner, depth+1)
			}
		}
	case nil:
	default:
		b.WriteString(labelled(key, fmt.Sprint(x)))
	}
}

func labelled(key, s string) string {
	if key == "" {
		return s + "\n"
	}
	return key + ": " + s + "\n"
}
