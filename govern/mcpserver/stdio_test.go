package mcpserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/mitrity/mitrity/govern/mcpserver"
)

// stdioSession serves a Server over a StdioGuard on pipes: lines written
// to in reach the guard; every line the guard and the SDK write comes out
// of out.
type stdioSession struct {
	in    *io.PipeWriter
	out   chan string
	done  chan error    // ServeStdio's return
	ended chan struct{} // closed when ServeStdio has returned
	stop  context.CancelFunc
}

func startStdio(t testing.TB, caller mcpserver.Caller, maxLine int) *stdioSession {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	srv := mcpserver.New(mcpserver.Options{Service: caller, Enabled: true, Agent: "local"})
	ctx, cancel := context.WithCancel(context.Background())
	s := &stdioSession{in: inW, out: make(chan string, 1000), done: make(chan error, 1), ended: make(chan struct{}), stop: cancel}
	go func() {
		s.done <- srv.ServeStdio(ctx, &mcpserver.StdioGuard{In: inR, Out: outW, MaxLineBytes: maxLine}, 100*time.Millisecond)
		close(s.ended)
		outW.Close()
	}()
	go func() {
		r := bufio.NewReaderSize(outR, 1<<20)
		for {
			l, err := r.ReadString('\n')
			if l != "" {
				s.out <- l
			}
			if err != nil {
				close(s.out)
				return
			}
		}
	}()
	t.Cleanup(func() {
		// The client going away ends the session at once (a shutdown
		// would wait for results to settle).
		inW.Close()
		select {
		case <-s.ended:
		case <-time.After(5 * time.Second):
			t.Error("the session did not end when its input closed")
			cancel()
			<-s.ended
		}
		cancel()
	})
	return s
}

func (s *stdioSession) send(t testing.TB, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if _, err := io.WriteString(s.in, l+"\n"); err != nil {
			t.Fatalf("write: %v", err)
		}
	}
}

// answer is one message written back; batch holds a batch's elements.
type answer struct {
	raw   string
	ID    json.RawMessage `json:"id"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Result json.RawMessage `json:"result"`
	Method string          `json:"method"`
}

// next is the next message written back; every line must be JSON-RPC.
func (s *stdioSession) next(t testing.TB) []answer {
	t.Helper()
	select {
	case l, ok := <-s.out:
		if !ok {
			t.Fatalf("the session ended: %v", <-s.done)
		}
		return parseAnswers(t, l)
	case <-time.After(10 * time.Second):
		t.Fatal("no answer within 10s")
	}
	return nil
}

func parseAnswers(t testing.TB, l string) []answer {
	t.Helper()
	var raws []json.RawMessage
	if strings.HasPrefix(l, "[") {
		if err := json.Unmarshal([]byte(l), &raws); err != nil || len(raws) == 0 {
			t.Fatalf("a batch that is not JSON-RPC: %q", l)
		}
	} else {
		raws = []json.RawMessage{json.RawMessage(l)}
	}
	var out []answer
	for _, r := range raws {
		var a answer
		var envelope struct {
			JSONRPC string `json:"jsonrpc"`
		}
		if err := json.Unmarshal(r, &a); err != nil || json.Unmarshal(r, &envelope) != nil || envelope.JSONRPC != "2.0" {
			t.Fatalf("not a JSON-RPC message: %q", l)
		}
		if a.Method == "" && (a.Error == nil) == (a.Result == nil) {
			t.Fatalf("a response without exactly one of result and error: %q", l)
		}
		if a.Method == "" && len(a.ID) == 0 {
			t.Fatalf("a response without an id: %q", l)
		}
		a.raw = string(r)
		out = append(out, a)
	}
	return out
}

// until reads answers until one with id comes, and returns it.
func (s *stdioSession) until(t testing.TB, id string) answer {
	t.Helper()
	for {
		for _, a := range s.next(t) {
			if string(a.ID) == id {
				return a
			}
		}
	}
}

const initLine = `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

func initialize(t testing.TB, s *stdioSession) {
	t.Helper()
	s.send(t, initLine)
	if a := s.until(t, `"init"`); a.Error != nil {
		t.Fatalf("initialize: %s", a.raw)
	}
	s.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

func callLine(id, command string) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": "tools/call",
		"params": map[string]any{"name": mcpserver.ToolName, "arguments": map[string]any{"command": command}}})
	return string(b)
}

// TestStdioGuard: bad lines get their JSON-RPC errors, a request reusing
// an id in flight gets one too, and a call running all along completes.
func TestStdioGuard(t *testing.T) {
	fc := newFakeCaller()
	s := startStdio(t, fc, 1<<10)
	initialize(t, s)
	s.send(t, callLine("7", "block"))
	<-fc.began
	for _, c := range []struct {
		line, id string
		code     int
	}{
		{`{"jsonrpc":"2.0","id":1,"method":`, "null", -32700},
		{"\x00", "null", -32700},
		{`[{"jsonrpc":"2.0","id":2,"method":"ping"}]`, "2", -32600},
		{`{"jsonrpc":"1.0","id":3,"method":"ping"}`, "3", -32600},
		{`{"jsonrpc":"2.0","id":[3],"method":"ping"}`, "null", -32600},
		{`{"jsonrpc":"2.0","id":7,"method":"ping"}`, "7", -32600},
		{`{"jsonrpc":"2.0","id":"x","method":"ping","params":"p"}`, `"x"`, -32600},
		{`{"jsonrpc":"2.0","id":4,"method":"ping","params":{"pad":"` + strings.Repeat("x", 2000) + `"}}`, "null", -32600},
		{`{"jsonrpc":"2.0","id":5,"method":"nope"}`, "5", -32601},
	} {
		s.send(t, c.line)
		a := s.next(t)
		assert.Equal(t, len(a), 1, "%s", c.line)
		assert.Equal(t, string(a[0].ID), c.id, "%s", c.line)
		assert.Assert(t, a[0].Error != nil && a[0].Error.Code == c.code && a[0].Error.Message != "", "%s: %s", c.line, a[0].raw)
	}
	// A malformed response from the client is not answered, and the
	// session goes on: the next thing written back is the ping's answer.
	s.send(t, `{"jsonrpc":"2.0","id":9,"result":{},"error":{"code":1,"message":"x"}}`, `{"jsonrpc":"2.0","id":10,"method":"ping"}`)
	a := s.next(t)
	assert.Equal(t, string(a[0].ID), "10")
	assert.Assert(t, a[0].Error == nil)
	// The blocked call is still in flight; the shutdown cancels it and its
	// result comes back.
	s.stop()
	a = s.next(t)
	assert.Equal(t, string(a[0].ID), "7")
	assert.Assert(t, strings.Contains(string(a[0].Result), "killed"), a[0].raw)
	assert.Equal(t, len(fc.endedCalls()), 1)
	// The shutdown ends the session with the client's input still open:
	// the guard's read waiting on it does not hold it up.
	select {
	case <-s.ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the shutdown did not end the session while its input was open")
	}
}

// TestStdioGuardPassesValidBytes: what is valid reaches the SDK as it was
// sent (whitespace around it aside), and an id is free again once
// answered.
func TestStdioGuardPassesValidBytes(t *testing.T) {
	s := startStdio(t, newFakeCaller(), 0)
	initialize(t, s)
	s.send(t, "  "+callLine(`"a"`, "echo hi")+" \r")
	a := s.until(t, `"a"`)
	assert.Assert(t, strings.Contains(string(a.Result), "ran echo hi"), a.raw)
	s.send(t, callLine(`"a"`, "echo again"))
	a = s.until(t, `"a"`)
	assert.Assert(t, strings.Contains(string(a.Result), "ran echo again"), a.raw)
	// 1 and "1" are two ids; 1e0 is 1.
	s.send(t, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, `{"jsonrpc":"2.0","id":"1","method":"ping"}`)
	got := map[string]bool{}
	for len(got) < 2 {
		for _, a := range s.next(t) {
			assert.Assert(t, a.Error == nil, a.raw)
			got[string(a.ID)] = true
		}
	}
}

// FuzzStdioFraming writes arbitrary bytes to serve --stdio's framing,
// then a ping: the session never ends, every line written back is a
// JSON-RPC message, and the ping is answered. The seeds
// (testdata/fuzz/FuzzStdioFraming) hold the lines that used to end the
// session: invalid JSON, a batch, "jsonrpc":"1.0", an object id, deep
// nesting, a NUL byte; and an id reused while in flight.
func FuzzStdioFraming(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		s := startStdio(t, newFakeCaller(), 64<<10)
		initialize(t, s)
		if _, err := s.in.Write(append(bytes.Clone(data), '\n')); err != nil {
			t.Fatalf("write: %v", err)
		}
		s.send(t, `{"jsonrpc":"2.0","id":987654321012,"method":"ping"}`)
		s.until(t, "987654321012")
	})
}
