package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/mitrity/mitrity/govern/mcpserver"
)

const boundsToken = "tok-bounds-0123456789abcdef"

var boundsTokens = mcpserver.NewTokens(map[string]string{boundsToken: "ci"})

// post sends one JSON-RPC message to url (on session, when set) and
// returns the response, its body read.
func post(t testing.TB, ctx context.Context, hc *http.Client, url, session, msg string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(msg))
	assert.NilError(t, err)
	setHeaders(req, session)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

func setHeaders(req *http.Request, session string) {
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+boundsToken)
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
}

// openSession initializes a session and returns its id.
func openSession(t testing.TB, hc *http.Client, url string) string {
	t.Helper()
	resp, body := post(t, context.Background(), hc, url, "", initLine)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("initialize: %d %s", resp.StatusCode, body)
	}
	id := resp.Header.Get("Mcp-Session-Id")
	resp, body = post(t, context.Background(), hc, url, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", resp.StatusCode, body)
	}
	return id
}

// TestHTTPDisconnectCancelsCall: a client whose connection goes away in
// the middle of a call (no notifications/cancelled) cancels it at once.
func TestHTTPDisconnectCancelsCall(t *testing.T) {
	fc := newFakeCaller()
	url := serveHTTP(t, mcpserver.New(mcpserver.Options{Service: fc, Enabled: true}), boundsTokens)
	hc := &http.Client{Transport: &http.Transport{}}
	session := openSession(t, hc, url)
	ctx, vanish := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(callLine("2", "block")))
		setHeaders(req, session)
		if resp, err := hc.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	select {
	case <-fc.began:
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not start")
	}
	vanish()
	<-done
	for deadline := time.Now().Add(5 * time.Second); len(fc.endedCalls()) == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
	}
	ended := fc.endedCalls()
	assert.Equal(t, len(ended), 1, "the vanished client's call was not cancelled")
	// The session itself goes on.
	resp, body := post(t, context.Background(), hc, url, session, `{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	assert.Equal(t, resp.StatusCode, http.StatusOK, body)
}

// TestHTTPLongCallOutlivesBounds: bounds far shorter than a call do not
// cut it: a call answered after every timeout has passed, with progress
// notifications on its stream, still gets its result, and the session's
// standalone SSE stream stays open.
func TestHTTPLongCallOutlivesBounds(t *testing.T) {
	short := 300 * time.Millisecond
	srv := mcpserver.New(mcpserver.Options{Service: newService(t, true), Enabled: true, ProgressInterval: 100 * time.Millisecond,
		HTTP: mcpserver.HTTPLimits{HeaderTimeout: short, BodyTimeout: short, WriteTimeout: short, IdleTimeout: short}})
	url := serveHTTP(t, srv, boundsTokens)
	hc := &http.Client{Transport: &http.Transport{}}
	session := openSession(t, hc, url)
	// The standalone stream: open for the whole call.
	sctx, scancel := context.WithCancel(context.Background())
	defer scancel()
	req, _ := http.NewRequestWithContext(sctx, http.MethodGet, url, nil)
	setHeaders(req, session)
	sse, err := hc.Do(req)
	assert.NilError(t, err)
	defer sse.Body.Close()
	assert.Equal(t, sse.StatusCode, http.StatusOK)
	sseEnded := make(chan struct{})
	go func() {
		io.Copy(io.Discard, sse.Body)
		close(sseEnded)
	}()
	start := time.Now()
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": map[string]any{
		"name": mcpserver.ToolName, "arguments": map[string]any{"command": "sleep 1.5; echo done"}, "_meta": map[string]any{"progressToken": "p"}}})
	resp, body := post(t, context.Background(), hc, url, session, string(b))
	assert.Equal(t, resp.StatusCode, http.StatusOK)
	assert.Assert(t, time.Since(start) > time.Second)
	assert.Assert(t, strings.Contains(body, "notifications/progress"), body)
	assert.Assert(t, strings.Contains(body, `done\n`), body)
	select {
	case <-sseEnded:
		t.Fatal("the standalone SSE stream was closed during the call")
	default:
	}
}

// TestHTTPSessionLimit: past MaxSessions an initialize gets 503 with a
// JSON-RPC error naming the limit; ending a session makes room.
func TestHTTPSessionLimit(t *testing.T) {
	srv := mcpserver.New(mcpserver.Options{Service: newFakeCaller(), Enabled: true, HTTP: mcpserver.HTTPLimits{MaxSessions: 2}})
	url := serveHTTP(t, srv, boundsTokens)
	hc := &http.Client{Transport: &http.Transport{}}
	first := openSession(t, hc, url)
	openSession(t, hc, url)
	resp, body := post(t, context.Background(), hc, url, "", initLine)
	assert.Equal(t, resp.StatusCode, http.StatusServiceUnavailable)
	var e struct {
		ID    string `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	assert.NilError(t, json.Unmarshal([]byte(body), &e), body)
	assert.Equal(t, e.ID, "init")
	assert.Equal(t, e.Error.Code, mcpserver.CodeSessionLimit)
	assert.Assert(t, strings.Contains(e.Error.Message, "2 MCP sessions"), e.Error.Message)
	assert.Equal(t, srv.Sessions(), 2)
	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	setHeaders(req, first)
	del, err := hc.Do(req)
	assert.NilError(t, err)
	del.Body.Close()
	assert.Equal(t, del.StatusCode, http.StatusNoContent)
	openSession(t, hc, url)
}

// TestHTTPRefusedCloses: a request without a valid token gets 401 and
// its connection closed, its body not waited for.
func TestHTTPRefusedCloses(t *testing.T) {
	url := serveHTTP(t, mcpserver.New(mcpserver.Options{Service: newFakeCaller(), Enabled: true}), boundsTokens)
	c, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	assert.NilError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{")
	assert.NilError(t, err)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	r := bufio.NewReader(c)
	resp, err := http.ReadResponse(r, nil)
	assert.NilError(t, err)
	assert.Equal(t, resp.StatusCode, http.StatusUnauthorized)
	io.Copy(io.Discard, resp.Body)
	start := time.Now()
	_, err = r.ReadByte()
	assert.Assert(t, err != nil, "the connection stayed open after a 401")
	assert.Assert(t, time.Since(start) < 3*time.Second, "the connection closed only after %v", time.Since(start))
}

// FuzzHTTPEndpoint sends an arbitrary body to the Streamable HTTP handler,
// on a new session or an initialized one (mode bit 0), by POST, GET or
// DELETE (bits 1-2): it never panics or hangs, answers no 5xx but the
// session limit's 503, what it answers as JSON or SSE is JSON-RPC, and it
// goes on serving. Seeds: testdata/fuzz/FuzzHTTPEndpoint.
func FuzzHTTPEndpoint(f *testing.F) {
	f.Fuzz(func(t *testing.T, body []byte, mode uint8) {
		srv := mcpserver.New(mcpserver.Options{Service: newFakeCaller(), Enabled: true, HTTP: mcpserver.HTTPLimits{MaxSessions: 4, MaxBodyBytes: 64 << 10}})
		h := srv.Handler(boundsTokens)
		defer func() {
			for ss := range srv.MCP().Sessions() {
				ss.Close()
			}
		}()
		serve := func(req *http.Request) *httptest.ResponseRecorder {
			rec := httptest.NewRecorder()
			done := make(chan struct{})
			go func() {
				defer close(done)
				h.ServeHTTP(rec, req)
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("%s %q: no answer within 10s", req.Method, body)
			}
			return rec
		}
		newReq := func(method, session string, b []byte) *http.Request {
			req := httptest.NewRequest(method, "/", strings.NewReader(string(b)))
			setHeaders(req, session)
			return req
		}
		session := ""
		if mode&1 != 0 {
			rec := serve(newReq(http.MethodPost, "", []byte(initLine)))
			session = rec.Header().Get("Mcp-Session-Id")
			assert.Equal(t, rec.Code, http.StatusOK, rec.Body.String())
			rec = serve(newReq(http.MethodPost, session, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)))
			assert.Equal(t, rec.Code, http.StatusAccepted)
		}
		method := []string{http.MethodPost, http.MethodGet, http.MethodDelete, http.MethodPost}[(mode>>1)&3]
		var rec *httptest.ResponseRecorder
		if method == http.MethodGet {
			// A standalone stream stays open: end it once answered.
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			rec = serve(newReq(method, session, body).WithContext(ctx))
			cancel()
		} else {
			rec = serve(newReq(method, session, body))
		}
		if rec.Code >= 500 && rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("%s %q: %d %s", method, body, rec.Code, rec.Body)
		}
		checkJSONRPCBody(t, rec)
		// It still serves.
		if next := serve(newReq(http.MethodPost, "", []byte(initLine))); next.Code != http.StatusOK && next.Code != http.StatusServiceUnavailable {
			t.Fatalf("after %s %q: initialize: %d %s", method, body, next.Code, next.Body)
		}
	})
}

// checkJSONRPCBody checks that a JSON or SSE answer holds JSON-RPC.
func checkJSONRPCBody(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	var msgs []string
	switch ct := rec.Header().Get("Content-Type"); {
	case strings.HasPrefix(ct, "application/json"):
		msgs = []string{rec.Body.String()}
	case strings.HasPrefix(ct, "text/event-stream"):
		for _, l := range strings.Split(rec.Body.String(), "\n") {
			if d, ok := strings.CutPrefix(l, "data: "); ok {
				msgs = append(msgs, d)
			}
		}
	}
	for _, m := range msgs {
		parseAnswers(t, m)
	}
}

// TestHTTPMessageChecks: over HTTP a message is checked as on stdio: an id
// that is not a string or an integer, a member given twice, a batch, a body
// that is not JSON get 400 and their JSON-RPC error (before, the SDK
// answered a fractional id as an integer, an overflowing one as another
// number, ran a batch, and answered non-JSON in text/plain); the session
// goes on serving.
func TestHTTPMessageChecks(t *testing.T) {
	url := serveHTTP(t, mcpserver.New(mcpserver.Options{Service: newFakeCaller(), Enabled: true}), boundsTokens)
	hc := &http.Client{Timeout: 10 * time.Second}
	session := openSession(t, hc, url)
	for _, c := range []struct {
		name, msg string
		code      int
	}{
		{"fractional id", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, -32600},
		{"overflowing id", `{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}`, -32600},
		{"id twice", `{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`, -32600},
		{"batch", `[{"jsonrpc":"2.0","id":3,"method":"ping"},{"jsonrpc":"2.0","id":4,"method":"ping"}]`, -32600},
		{"not JSON", `{"jsonrpc":"2.0",`, -32700},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, body := post(t, context.Background(), hc, url, session, c.msg)
			var got struct {
				Error struct{ Code int } `json:"error"`
			}
			first := []byte(body)
			var batch []json.RawMessage
			if json.Unmarshal(first, &batch) == nil && len(batch) > 0 {
				first = batch[0]
			}
			if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Type") != "application/json" ||
				json.Unmarshal(first, &got) != nil || got.Error.Code != c.code {
				t.Errorf("%d %s %q, want 400 with JSON-RPC error %d", resp.StatusCode, resp.Header.Get("Content-Type"), body, c.code)
			}
		})
	}
	resp, body := post(t, context.Background(), hc, url, session, `{"jsonrpc":"2.0","id":9,"method":"ping"}`)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"id":9`) {
		t.Fatalf("the session after the refusals: %d %s", resp.StatusCode, body)
	}
}
