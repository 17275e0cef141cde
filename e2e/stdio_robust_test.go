package e2e

import (
	"bufio"
	"encoding/json"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// stdioPeer drives `serve --stdio` with raw lines.
type stdioPeer struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	lines  chan string
	exited chan error
	stderr *syncBuffer
}

func (w *world) rawStdio(t *testing.T) *stdioPeer {
	t.Helper()
	cmd := exec.Command(w.bin, "--log-level", "error", "serve", "--stdio", "--config", w.cfg, "--admin-dir", w.admin, "--agent", "ci")
	cmd.Dir = w.ws
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + w.dir}
	p := &stdioPeer{cmd: cmd, lines: make(chan string, 100), exited: make(chan error, 1), stderr: &syncBuffer{}}
	cmd.Stderr = p.stderr
	var err error
	p.in, err = cmd.StdinPipe()
	must(t, err)
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	go func() {
		r := bufio.NewReader(out)
		for {
			l, err := r.ReadString('\n')
			if l != "" {
				p.lines <- l
			}
			if err != nil {
				close(p.lines)
				p.exited <- cmd.Wait()
				return
			}
		}
	}()
	t.Cleanup(func() {
		p.in.Close()
		cmd.Process.Kill()
	})
	return p
}

func (p *stdioPeer) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		t.Fatalf("writing to the gateway: %v\n%s", err, p.stderr.String())
	}
}

// rpcMsg is an answer on stdout.
type rpcMsg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// next reads the next answer; every line on stdout must be one JSON-RPC
// message (or a batch of them).
func (p *stdioPeer) next(t *testing.T, timeout time.Duration) []rpcMsg {
	t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			t.Fatalf("the gateway exited: %v\n%s", <-p.exited, p.stderr.String())
		}
		var batch []rpcMsg
		if strings.HasPrefix(l, "[") {
			if err := json.Unmarshal([]byte(l), &batch); err != nil {
				t.Fatalf("not JSON-RPC: %q: %v", l, err)
			}
		} else {
			var m rpcMsg
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("not JSON-RPC: %q: %v", l, err)
			}
			batch = []rpcMsg{m}
		}
		for _, m := range batch {
			if m.JSONRPC != "2.0" || (m.Error == nil) == (m.Result == nil) {
				t.Fatalf("not a JSON-RPC response: %q", l)
			}
		}
		return batch
	case <-time.After(timeout):
		t.Fatalf("no answer within %v\n%s", timeout, p.stderr.String())
	}
	return nil
}

// TestServeStdioMalformed: no message, however malformed, stops `serve
// --stdio`. Each bad line gets the JSON-RPC error the spec defines (-32700
// with id null for what does not parse, -32600 for what is not a valid
// request, the request's id when it has a usable one), a request reusing
// an id in flight gets an error instead of silence, a command that was
// running goes on to complete, and the session keeps serving.
func TestServeStdioMalformed(t *testing.T) {
	t.Parallel()
	w := newWorld(t, false, e2ePolicy)
	p := w.rawStdio(t)
	p.send(t, initializeMsg)
	if m := p.next(t, 20*time.Second); string(m[0].ID) != "1" || m[0].Error != nil {
		t.Fatalf("initialize: %+v", m)
	}
	p.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	p.send(t, toolCallMsg(2, "sleep 2; echo survived"))
	time.Sleep(300 * time.Millisecond) // the call is in flight

	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	cases := []struct {
		name, line string
		id         string // the id the error must carry ("null" when none is usable)
		code       int
	}{
		{"invalid JSON", `{"jsonrpc":"2.0","id":3,"method":`, "null", -32700},
		{"not JSON at all", `hello`, "null", -32700},
		{"a NUL byte", "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\x00\"}", "null", -32700},
		{"a NUL byte outside strings", "\x00", "null", -32700},
		{"nesting beyond the parser's depth", `{"jsonrpc":"2.0","id":5,"method":"ping","params":{"a":` + deep(20000) + `}}`, "null", -32700},
		{"deep nesting", `{"jsonrpc":"2.0","id":6,"method":"ping","params":{"a":` + deep(2000) + `}}`, "6", -32600},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":7,"method":"ping"}`, "7", -32600},
		{"no jsonrpc member", `{"id":8,"method":"ping"}`, "8", -32600},
		{"an object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, "null", -32600},
		{"a null id", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, "null", -32600},
		{"a fractional id", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, "null", -32600},
		{"a boolean method", `{"jsonrpc":"2.0","id":9,"method":true}`, "9", -32600},
		{"a scalar message", `42`, "null", -32600},
		{"an empty batch", `[]`, "null", -32600},
		{"a batch", `[{"jsonrpc":"2.0","id":10,"method":"ping"},{"jsonrpc":"2.0","id":11,"method":"ping"}]`, "10,11", -32600},
		{"an id in flight", `{"jsonrpc":"2.0","id":2,"method":"ping"}`, "2", -32600},
		{"an unknown method", `{"jsonrpc":"2.0","id":12,"method":"no/such/method"}`, "12", -32601},
		{"a duplicate member", `{"jsonrpc":"2.0","id":13,"method":"ping","id":14}`, "null", -32600},
	}
	for _, c := range cases {
		p.send(t, c.line)
		got := p.next(t, 10*time.Second)
		var ids []string
		for _, m := range got {
			ids = append(ids, string(m.ID))
			if m.Error == nil || m.Error.Code != c.code || m.Error.Message == "" {
				t.Errorf("%s: %+v, want error %d", c.name, m, c.code)
			}
		}
		if strings.Join(ids, ",") != c.id {
			t.Errorf("%s: ids %v, want %s", c.name, ids, c.id)
		}
	}
	// A blank line is not a message; an over-long one is refused.
	p.send(t, "")
	p.send(t, `{"jsonrpc":"2.0","id":15,"method":"ping","params":{"pad":"`+strings.Repeat("x", 17<<20)+`"}}`)
	if m := p.next(t, 20*time.Second); string(m[0].ID) != "null" || m[0].Error == nil || m[0].Error.Code != -32600 {
		t.Errorf("an over-long line: %+v", m)
	}
	p.send(t, `{"jsonrpc":"2.0","id":16,"method":"ping"}`)
	if m := p.next(t, 10*time.Second); string(m[0].ID) != "16" || m[0].Error != nil {
		t.Fatalf("ping after the bad lines: %+v", m)
	}
	// The call that was running when the bad lines came completes.
	m := p.next(t, 20*time.Second)
	if string(m[0].ID) != "2" || m[0].Error != nil || !strings.Contains(string(m[0].Result), `survived`) {
		t.Fatalf("the running call: %+v %s", m, m[0].Result)
	}
	// The id is free again once answered.
	p.send(t, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if m := p.next(t, 10*time.Second); string(m[0].ID) != "2" || m[0].Error != nil {
		t.Fatalf("a reused id after its answer: %+v", m)
	}
	p.in.Close()
	select {
	case err := <-p.exited:
		if err != nil {
			t.Errorf("serve --stdio exited with %v after stdin closed\n%s", err, p.stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Error("serve --stdio did not exit after stdin closed")
	}
	var statuses []string
	for _, ev := range w.calls(t) {
		s, _ := field(ev, "data", "execution", "status").(string)
		statuses = append(statuses, s)
	}
	if !slices.Equal(statuses, []string{"completed"}) {
		t.Errorf("audit statuses %v, want one completed call", statuses)
	}
}
