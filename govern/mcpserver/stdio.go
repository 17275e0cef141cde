package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/mitrity/mitrity/govern/pollfd"
)

// StdioTransport is the process's own stdin and stdout, behind a
// StdioGuard: newline-delimited JSON-RPC (logs must go to stderr). Pipes
// and sockets are read and written through the runtime's poller
// (pollfd.Stdin): a read of an idle stdin blocked in read(2) can hold up
// a garbage collection's stop-the-world, and the whole gateway with it,
// until the agent's next message.
func StdioTransport(log zerolog.Logger) mcp.Transport {
	return &StdioGuard{In: pollfd.Stdin(), Out: pollfd.Stdout(), Log: log}
}

// DefaultMaxLineBytes bounds one stdio message, as the SDK's own stdio
// transport does.
const DefaultMaxLineBytes = mcp.DefaultMaxLineLength

// StdioGuard is a transport in front of the SDK's newline-delimited
// JSON-RPC stream that keeps one bad message from ending the session (the
// SDK closes the connection on the first line it cannot decode). It reads
// In a line at a time and checks each message:
//   - a line that is not JSON: -32700 parse error, id null;
//   - JSON that is not a request, a notification or a response (a batch,
//     a scalar, "jsonrpc" other than "2.0", an id that is not a string or
//     an integer, a non-string method, a repeated member, anything the
//     SDK's decoder refuses): -32600 invalid request, with the request's
//     id when it has a usable one, else null;
//   - a request reusing the id of one still in flight: -32600 with that
//     id (the SDK would drop it without an answer);
//   - a line longer than MaxLineBytes: -32600, id null.
//
// The guard answers these itself on Out and goes on reading. What is
// valid goes to the SDK as the message jsonrpc.DecodeMessage would make
// of it (FuzzCheckMessage holds the two equal), decoded once. A
// malformed response (a message without a method) is dropped with a log
// line, never answered: answering it could start an endless exchange of
// errors with the client.
type StdioGuard struct {
	In  io.Reader
	Out io.Writer
	Log zerolog.Logger
	// MaxLineBytes bounds one message; zero means DefaultMaxLineBytes.
	MaxLineBytes int
}

// Connect implements mcp.Transport. The connection hands the SDK the
// messages the guard has already decoded: the SDK's own IOTransport would
// decode each line twice more (once as a batch, once as a message) behind
// a copy through a pipe, which was a fifth of the gateway's time per call.
func (g *StdioGuard) Connect(ctx context.Context) (mcp.Connection, error) {
	max := g.MaxLineBytes
	if max <= 0 {
		max = DefaultMaxLineBytes
	}
	c := &guardConn{
		guardWriter: guardWriter{out: g.Out, inflight: map[string]bool{}},
		incoming:    make(chan incoming),
		closed:      make(chan struct{}),
	}
	go g.pump(c, max)
	return c, nil
}

// incoming is one message for the SDK, or the end of the stream.
type incoming struct {
	msg jsonrpc.Message
	err error
}

// pump reads In line by line until it ends or the connection is closed.
// Reading stdin cannot be interrupted, so a pump blocked on it outlives a
// closed connection until the next line or the end of input.
func (g *StdioGuard) pump(c *guardConn, max int) {
	r := bufio.NewReaderSize(g.In, 64<<10)
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		tooLong := false
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			if len(line)+len(chunk) > max {
				tooLong = true
			} else {
				line = append(line, chunk...)
				continue
			}
		case len(line)+len(chunk) > max+1: // the newline is not the message's
			tooLong = true
		default:
			line = append(line, chunk...)
		}
		if tooLong {
			line = line[:0]
			// Skip the rest of the line.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.ReadSlice('\n')
			}
			c.reply(errorResponse(nullID, jsonrpc.CodeInvalidRequest, fmt.Sprintf("Invalid Request: a message is at most %d bytes", max)))
			g.Log.Warn().Int("max_bytes", max).Msg("stdio: an over-long message was refused")
		} else if len(line) > 0 {
			if !g.handle(line, c) {
				return
			}
			line = line[:0]
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			if !errors.Is(err, io.EOF) {
				g.Log.Warn().Err(err).Msg("stdio: reading stdin")
			}
			c.deliver(incoming{err: io.EOF})
			return
		}
	}
}

// handle checks one line and passes it on or answers it; false when the
// connection is closed.
func (g *StdioGuard) handle(line []byte, c *guardConn) bool {
	v := checkMessage(line)
	switch {
	case v.reply != nil:
		c.reply(v.reply)
		g.Log.Warn().Str("error", v.why).Msg("stdio: a malformed message was answered with an error")
		return true
	case v.drop:
		g.Log.Warn().Str("error", v.why).Msg("stdio: a malformed response from the client was dropped")
		return true
	case v.msg == nil:
		return true // blank
	}
	if v.call != "" && !c.begin(v.call) {
		c.reply(errorResponse(v.id, jsonrpc.CodeInvalidRequest,
			fmt.Sprintf("Invalid Request: id %s is already in use by a request in flight; use a new id for each request", v.id)))
		return true
	}
	return c.deliver(incoming{msg: v.msg})
}

// verdict is what checkMessage decides about one line.
type verdict struct {
	msg   jsonrpc.Message // the message to pass on, decoded; nil: nothing to pass
	call  string          // msg is a request with this id key: track it in flight
	id    json.RawMessage // the request's id, for an answer
	reply []byte          // the error response to write instead
	drop  bool            // a malformed response: nothing is answered
	why   string          // for the log
}

var nullID = json.RawMessage("null")

// checkMessage classifies one line (see StdioGuard).
func checkMessage(line []byte) verdict {
	msg := bytes.Trim(line, " \t\r\n")
	if len(msg) == 0 {
		return verdict{}
	}
	invalid := func(id json.RawMessage, format string, args ...any) verdict {
		why := fmt.Sprintf(format, args...)
		return verdict{reply: errorResponse(id, jsonrpc.CodeInvalidRequest, "Invalid Request: "+why), why: why}
	}
	if !json.Valid(msg) {
		why := "not JSON"
		var raw json.RawMessage
		if err := json.Unmarshal(msg, &raw); err != nil {
			why = err.Error()
		}
		return verdict{reply: errorResponse(nullID, jsonrpc.CodeParseError, "Parse error: "+why), why: why}
	}
	switch msg[0] {
	case '[':
		return checkBatch(msg)
	case '{':
	default:
		return invalid(nullID, "a JSON-RPC message is an object, not %s", clip(string(msg)))
	}
	members, dup := objectMembers(msg)
	id, hasID := members["id"]
	idOK := hasID && validID(id)
	answerID := nullID
	if idOK && dup == "" {
		answerID = id
	}
	_, isRequest := members["method"]
	if !isRequest {
		_, hasResult := members["result"]
		_, hasError := members["error"]
		if hasResult || hasError {
			// A response from the client.
			if why := checkResponse(members, dup); why != "" {
				return verdict{drop: true, why: why}
			}
			m, err := decode(msg)
			if err != nil {
				return verdict{drop: true, why: err.Error()}
			}
			return verdict{msg: m}
		}
	}
	switch {
	case dup != "":
		return invalid(nullID, "the member %q appears twice", dup)
	case string(members["jsonrpc"]) != `"2.0"`:
		if v, ok := members["jsonrpc"]; ok {
			return invalid(answerID, `"jsonrpc" must be "2.0", not %s`, clip(string(v)))
		}
		return invalid(answerID, `the member "jsonrpc": "2.0" is missing`)
	case !isRequest:
		return invalid(answerID, `a request needs a "method" (a response, a "result" or an "error")`)
	case hasID && !idOK:
		return invalid(nullID, "the id must be a string or an integer, not %s", clip(string(id)))
	}
	if _, ok := members["result"]; ok {
		return invalid(answerID, `a request has no "result" (a response has no "method")`)
	}
	if _, ok := members["error"]; ok {
		return invalid(answerID, `a request has no "error" (a response has no "method")`)
	}
	var method string
	if err := json.Unmarshal(members["method"], &method); err != nil {
		return invalid(answerID, "the method must be a string, not %s", clip(string(members["method"])))
	}
	if p, ok := members["params"]; ok && p[0] != '{' && p[0] != '[' && string(p) != "null" {
		return invalid(answerID, "params must be an object, not %s", clip(string(p)))
	}
	// Whatever else the SDK's decoder refuses (it nests at most 1000
	// deep) would end its session: a line that could nest that deep is
	// decoded by it here, and refused if it refuses it.
	if bytes.Count(msg, []byte{'{'})+bytes.Count(msg, []byte{'['}) > maxDepth {
		if _, err := decode(msg); err != nil {
			return invalid(answerID, "%v", err)
		}
	}
	// The request is built from what was checked above rather than
	// decoded again by jsonrpc.DecodeMessage, which decodes it twice more
	// (the message, then its method), each time with a fresh 32 KiB
	// buffer: a fifth of what the gateway allocated per call.
	req := &jsonrpc.Request{Method: method, Params: members["params"]}
	v := verdict{msg: req}
	if hasID {
		req.ID = requestID(id)
		v.call, v.id = idKey(id), id
	}
	return v
}

// maxDepth is how deep the SDK's decoder lets JSON nest.
const maxDepth = 1000

// requestID is the SDK's ID of a valid id: a string as itself, a number
// as an int64 (as jsonrpc.MakeID makes it of the float64 it decodes).
func requestID(raw json.RawMessage) jsonrpc.ID {
	var v any
	if raw[0] == '"' {
		var s string
		_ = json.Unmarshal(raw, &s)
		v = s
	} else {
		n, _ := intID(raw)
		v = float64(n)
	}
	id, _ := jsonrpc.MakeID(v)
	return id
}

// decode is the SDK's decoding of one message, from a copy: msg is part
// of the line buffer the pump reuses, and a decoded message may keep
// pieces of what it was decoded from (its params).
func decode(msg []byte) (jsonrpc.Message, error) {
	return jsonrpc.DecodeMessage(bytes.Clone(msg))
}

// checkBatch refuses a batch: MCP removed JSON-RPC batching (2025-06-18),
// and the SDK ends the session on one. Each request with a usable id gets
// its error, so that no client waits for an answer; otherwise one error
// with id null says what happened.
func checkBatch(msg []byte) verdict {
	var elems []json.RawMessage
	_ = json.Unmarshal(msg, &elems)
	const why = "JSON-RPC batches are not supported (MCP removed them in 2025-06-18): send each message on its own (a line of its own on stdio, a request of its own over HTTP)"
	if len(elems) == 0 {
		return verdict{reply: errorResponse(nullID, jsonrpc.CodeInvalidRequest, "Invalid Request: an empty batch"), why: "an empty batch"}
	}
	var out []json.RawMessage
	for _, e := range elems {
		if len(e) == 0 || e[0] != '{' {
			continue
		}
		m, _ := objectMembers(e)
		if _, ok := m["method"]; !ok {
			continue
		}
		if id, ok := m["id"]; ok && validID(id) {
			out = append(out, errorResponse(id, jsonrpc.CodeInvalidRequest, "Invalid Request: "+why))
		}
	}
	if len(out) == 0 {
		return verdict{reply: errorResponse(nullID, jsonrpc.CodeInvalidRequest, "Invalid Request: "+why), why: why}
	}
	b, _ := json.Marshal(out)
	return verdict{reply: b, why: why}
}

// checkResponse says what is wrong with a client's response, or "".
func checkResponse(m map[string]json.RawMessage, dup string) string {
	_, hasResult := m["result"]
	_, hasError := m["error"]
	switch {
	case dup != "":
		return fmt.Sprintf("the member %q appears twice", dup)
	case string(m["jsonrpc"]) != `"2.0"`:
		return `"jsonrpc" is not "2.0"`
	case !validID(m["id"]):
		return "the id is not a string or an integer"
	case hasResult == hasError:
		return `a response has exactly one of "result" and "error"`
	}
	return ""
}

// objectMembers splits a valid JSON object into its members, and names a
// member that appears more than once (decoders differ on which one wins).
func objectMembers(obj []byte) (map[string]json.RawMessage, string) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	members := map[string]json.RawMessage{}
	dup := ""
	if _, err := dec.Token(); err != nil { // {
		return members, ""
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			break
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			break
		}
		if _, seen := members[key]; seen && dup == "" {
			dup = key
		}
		members[key] = v
	}
	return members, dup
}

// maxSafeInteger is the largest integer every JSON parser holds exactly.
const maxSafeInteger = 1<<53 - 1

// validID reports whether raw is an id the SDK answers under the same
// value: a string, or an integer (no fraction, within ±2^53).
func validID(raw json.RawMessage) bool {
	if len(raw) == 0 {
		return false
	}
	if raw[0] == '"' {
		var s string
		return json.Unmarshal(raw, &s) == nil
	}
	_, ok := intID(raw)
	return ok
}

func intID(raw json.RawMessage) (int64, bool) {
	if raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
		return 0, false
	}
	if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return n, n >= -maxSafeInteger && n <= maxSafeInteger
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > maxSafeInteger {
		return 0, false
	}
	return int64(f), true
}

// idKey is the in-flight key of a valid id: the SDK keeps a numeric id as
// an int64 and a string as itself, so 1 and "1" are two ids.
func idKey(raw json.RawMessage) string {
	if raw[0] == '"' {
		var s string
		_ = json.Unmarshal(raw, &s)
		return "s:" + s
	}
	n, _ := intID(raw)
	return "n:" + strconv.FormatInt(n, 10)
}

// errorResponse is a JSON-RPC error response.
func errorResponse(id json.RawMessage, code int, msg string) []byte {
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{code, msg}})
	return b
}

// guardWriter is the guard's stdout: whole lines, written under one lock
// with the guard's own answers, and the requests in flight, which a
// response ends.
type guardWriter struct {
	mu       sync.Mutex
	out      io.Writer
	inflight map[string]bool
}

// begin registers a request in flight; false when its id already is.
func (w *guardWriter) begin(key string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.inflight[key] {
		return false
	}
	w.inflight[key] = true
	return true
}

// reply writes one of the guard's own answers.
func (w *guardWriter) reply(msg []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, _ = w.out.Write(append(msg, '\n'))
}

// guardConn is the SDK's side of the guard: the messages the pump decoded,
// and the SDK's messages written to Out one line each.
type guardConn struct {
	guardWriter
	incoming  chan incoming
	closed    chan struct{}
	closeOnce sync.Once
}

// deliver hands one message (or the end) to Read; false once closed.
func (c *guardConn) deliver(in incoming) bool {
	select {
	case c.incoming <- in:
		return true
	case <-c.closed:
		return false
	}
}

// Read implements mcp.Connection.
func (c *guardConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case in := <-c.incoming:
		return in.msg, in.err
	case <-c.closed:
		return nil, io.EOF
	}
}

// Write implements mcp.Connection: one message, newline included, in one
// write. A response ends its request before it is written: the client
// may reuse the id as soon as it has read it.
func (c *guardConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("marshaling message: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if resp, ok := msg.(*jsonrpc.Response); ok {
		if key, ok := responseKey(resp.ID); ok {
			delete(c.inflight, key)
		}
	}
	_, err = c.out.Write(append(data, '\n'))
	return err
}

// Close implements mcp.Connection. It leaves stdin and stdout open: they
// are the process's, not the session's.
func (c *guardConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

// SessionID implements mcp.Connection: stdio has no session id.
func (c *guardConn) SessionID() string { return "" }

// responseKey is the in-flight key (idKey's) of a response's id.
func responseKey(id jsonrpc.ID) (string, bool) {
	switch v := id.Raw().(type) {
	case string:
		return "s:" + v, true
	case int64:
		return "n:" + strconv.FormatInt(v, 10), true
	}
	return "", false
}
