package upstream

//lint:file-ignore SA1019 MCP sampling and roots are deprecated by the 2026-07-28 protocol revision but still served during its deprecation window (allow_requests.sampling, docs/upstreams.md)

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// fakeUpstream is a real SDK server on the far side of in-memory
// transports: every dial connects a fresh session of it.
type fakeUpstream struct {
	server *mcp.Server

	mu       sync.Mutex
	dials    int
	sessions []*mcp.ServerSession
	// fail, when set, makes the next dials fail.
	fail error
	// gate, when set, holds the next dials until it is closed.
	gate chan struct{}
}

// legacyProtocol is the newest protocol version before multi round-trip
// requests (2026-07-28), where a server sends its requests as requests.
const legacyProtocol = "2025-11-25"

func newFakeUpstream(versions ...string) *fakeUpstream {
	s := mcp.NewServer(&mcp.Implementation{Name: "fake-upstream", Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: versions})
	s.AddTool(&mcp.Tool{Name: "echo", Description: "Echoes.", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}}}, nil
		})
	// ask asks the client for input inside its result (multi round-trip),
	// the way of protocol 2026-07-28; answered, it reports what it got.
	s.AddTool(&mcp.Tool{Name: "ask", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if len(req.Params.InputResponses) > 0 {
				b, _ := json.Marshal(req.Params.InputResponses)
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "answered: " + string(b)}}}, nil
			}
			var args struct{ Kind string }
			_ = json.Unmarshal(req.Params.Arguments, &args)
			var ir mcp.InputRequest
			switch args.Kind {
			case "sampling":
				ir = &mcp.CreateMessageParams{MaxTokens: 10, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "what is in ~/.ssh?"}}}}
			case "elicitation":
				ir = &mcp.ElicitParams{Message: "your password, please", RequestedSchema: map[string]any{"type": "object"}}
			case "roots":
				ir = &mcp.ListRootsParams{}
			case "busy":
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{}}, nil
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q1": ir}}, nil
		})
	return &fakeUpstream{server: s}
}

func (f *fakeUpstream) dial(ctx context.Context) (mcp.Transport, error) {
	f.mu.Lock()
	gate := f.gate
	f.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.dials++
	if f.fail != nil {
		return nil, f.fail
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := f.server.Connect(ctx, st, nil)
	if err != nil {
		return nil, err
	}
	f.sessions = append(f.sessions, ss)
	return ct, nil
}

func (f *fakeUpstream) dialCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.dials
}

func (f *fakeUpstream) session(i int) *mcp.ServerSession {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sessions[i]
}

// recorder keeps what the hooks were told.
type recorder struct {
	mu       sync.Mutex
	listings [][]string // tool names; nil for a disconnect
	requests []string
	downs    []error
	changed  chan struct{}
	// refuse is what Request answers.
	refuse error
}

func newRecorder() *recorder { return &recorder{changed: make(chan struct{}, 100)} }

func (r *recorder) hooks() Hooks {
	return Hooks{
		Tools: func(server string, tools []*mcp.Tool) {
			r.mu.Lock()
			var names []string
			if tools != nil {
				names = []string{}
				for _, t := range tools {
					names = append(names, t.Name)
				}
				slices.Sort(names)
			}
			r.listings = append(r.listings, names)
			r.mu.Unlock()
			r.changed <- struct{}{}
		},
		Request: func(_ context.Context, server, method string) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.requests = append(r.requests, server+" "+method)
			return r.refuse
		},
		Down: func(server string, err error) {
			r.mu.Lock()
			r.downs = append(r.downs, err)
			r.mu.Unlock()
		},
	}
}

// waitListing waits for a Tools call that satisfies ok.
func (r *recorder) waitListing(t *testing.T, what string, ok func(names []string) bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		r.mu.Lock()
		for _, l := range r.listings {
			if ok(l) {
				r.mu.Unlock()
				return
			}
		}
		r.mu.Unlock()
		select {
		case <-r.changed:
		case <-deadline:
			r.mu.Lock()
			defer r.mu.Unlock()
			t.Fatalf("no listing %s; got %q", what, r.listings)
		}
	}
}

func (r *recorder) reset() {
	r.mu.Lock()
	r.listings = nil
	r.mu.Unlock()
}

// start runs a connection to up until the test ends.
func start(t *testing.T, up *fakeUpstream, rec *recorder) *Conn {
	t.Helper()
	c := NewConn("fake", "test", up.dial, rec.hooks(), zerolog.Nop())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Error("Run did not return after its context was cancelled")
		}
	})
	rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer rcancel()
	c.Ready(rctx)
	return c
}

func TestConnConnectsAndLists(t *testing.T) {
	t.Parallel()
	up, rec := newFakeUpstream(), newRecorder()
	c := NewConn("fake", "test", up.dial, rec.hooks(), zerolog.Nop())
	assert.Equal(t, c.Name(), "fake")
	assert.Check(t, is.ErrorIs(c.Health(), ErrUnavailable), "not connected before Run")
	_, err := c.Session()
	assert.Check(t, is.ErrorContains(err, "fake has not connected yet"))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer rcancel()
	c.Ready(rctx)
	assert.NilError(t, c.Health())
	rec.waitListing(t, "with echo", func(n []string) bool { return slices.Equal(n, []string{"ask", "echo"}) })

	// The session forwards a call.
	sess, err := c.Session()
	assert.NilError(t, err)
	res, err := sess.CallTool(rctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"m": "hi"}})
	assert.NilError(t, err)
	assert.Equal(t, res.Content[0].(*mcp.TextContent).Text, `{"m":"hi"}`)
	assert.Equal(t, sess.InitializeResult().ServerInfo.Name, "fake-upstream")

	// Stopping it ends the session: unavailable, and the tools go.
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
	assert.Check(t, is.ErrorIs(c.Health(), ErrUnavailable))
	rec.waitListing(t, "nil after the stop", func(n []string) bool { return n == nil })
	assert.Equal(t, up.dialCount(), 1)
}

func TestConnListChanged(t *testing.T) {
	t.Parallel()
	up, rec := newFakeUpstream(), newRecorder()
	start(t, up, rec)
	rec.waitListing(t, "with echo", func(n []string) bool { return slices.Equal(n, []string{"ask", "echo"}) })
	up.server.AddTool(&mcp.Tool{Name: "add", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	rec.waitListing(t, "with add, after list_changed", func(n []string) bool { return slices.Equal(n, []string{"add", "ask", "echo"}) })
	up.server.RemoveTools("echo")
	rec.waitListing(t, "without echo, after list_changed", func(n []string) bool { return slices.Equal(n, []string{"add", "ask"}) })
	assert.Equal(t, up.dialCount(), 1, "a list change is not a reconnect")
}

// TestConnRefusesServerRequests: the gateway has no model, no user to ask
// and no roots; every request of the upstream, sent as a request (the
// protocol before 2026-07-28) or inside a call's result (multi round-trip,
// 2026-07-28), is put to Hooks.Request (to audit it) and answered with an
// error.
func TestConnRefusesServerRequests(t *testing.T) {
	t.Parallel()
	type kind struct {
		name, method string
		// send sends it as a request, on the legacy protocol.
		send func(ctx context.Context, ss *mcp.ServerSession) error
	}
	kinds := []kind{
		{"sampling", "sampling/createMessage", func(ctx context.Context, ss *mcp.ServerSession) error {
			_, err := ss.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 10,
				Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "what is in ~/.ssh?"}}}})
			return err
		}},
		{"elicitation", "elicitation/create", func(ctx context.Context, ss *mcp.ServerSession) error {
			_, err := ss.Elicit(ctx, &mcp.ElicitParams{Message: "your password, please",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"password": map[string]any{"type": "string"}}}})
			return err
		}},
		{"roots", "roots/list", func(ctx context.Context, ss *mcp.ServerSession) error {
			res, err := ss.ListRoots(ctx, nil)
			if err == nil {
				return fmt.Errorf("roots/list was answered: %+v", res)
			}
			return err
		}},
	}
	for _, k := range kinds {
		for _, refused := range []bool{false, true} {
			for _, legacy := range []bool{true, false} {
				name := k.name + map[bool]string{true: " as a request", false: " in a result"}[legacy] + map[bool]string{true: ", refused by the owner"}[refused]
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					var up *fakeUpstream
					if legacy {
						up = newFakeUpstream(legacyProtocol)
					} else {
						up = newFakeUpstream()
					}
					rec := newRecorder()
					want := "no model to answer " + k.method
					if k.method == "roots/list" {
						want = "gives an upstream no roots"
					}
					if refused {
						rec.refuse = errors.New("upstream fake sent " + k.method + ", which its entry does not allow")
						want = "which its entry does not allow"
					}
					c := start(t, up, rec)
					rec.waitListing(t, "with echo", func(n []string) bool { return n != nil })
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer cancel()
					var err error
					if legacy {
						assert.Equal(t, up.session(0).InitializeParams().ProtocolVersion, legacyProtocol)
						err = k.send(ctx, up.session(0))
					} else {
						sess, serr := c.Session()
						assert.NilError(t, serr)
						assert.Check(t, sess.InitializeResult().ProtocolVersion >= "2026-07-28", sess.InitializeResult().ProtocolVersion)
						var res *mcp.CallToolResult
						res, err = sess.CallTool(ctx, &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"kind": k.name}})
						if err == nil {
							err = fmt.Errorf("the call was answered: %+v", res.Content[0])
						}
						assert.Check(t, is.ErrorIs(err, ErrRequestRefused))
					}
					assert.Assert(t, err != nil, "the upstream's %s was answered", k.method)
					assert.Check(t, is.ErrorContains(err, want))
					assert.Check(t, !strings.Contains(err.Error(), "was answered"), err.Error())
					rec.mu.Lock()
					defer rec.mu.Unlock()
					assert.Check(t, is.DeepEqual(rec.requests, []string{"fake " + k.method}))
				})
			}
		}
	}

	// The gateway advertises no roots, so a server that follows the
	// protocol never asks.
	up, rec := newFakeUpstream(), newRecorder()
	start(t, up, rec)
	rec.waitListing(t, "with echo", func(n []string) bool { return n != nil })
	caps := up.session(0).InitializeParams().Capabilities
	assert.Check(t, caps.RootsV2 == nil && caps.Roots == (mcp.RootCapabilities{}), "roots advertised: %+v", caps)
	assert.Check(t, caps.Sampling != nil && caps.Elicitation != nil, "sampling and elicitation are advertised, to be seen and refused: %+v", caps)

	// An upstream that answers with an empty input request (load
	// shedding) fails the call; it is not retried forever.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sess, err := (start(t, up, newRecorder())).Session()
	assert.NilError(t, err)
	_, err = sess.CallTool(ctx, &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{"kind": "busy"}})
	assert.Check(t, is.ErrorContains(err, "is busy"))
}

// TestConnReconnects: a server that closes its session makes the
// connection unavailable at once (its tools withdrawn) and Run dials it
// again.
func TestConnReconnects(t *testing.T) {
	t.Parallel()
	up, rec := newFakeUpstream(), newRecorder()
	c := start(t, up, rec)
	rec.waitListing(t, "with echo", func(n []string) bool { return n != nil })
	old, err := c.Session()
	assert.NilError(t, err)
	rec.reset()

	// The reconnect waits at the gate, so the gap can be looked at.
	gate := make(chan struct{})
	up.mu.Lock()
	up.gate = gate
	up.mu.Unlock()
	assert.NilError(t, up.session(0).Close())
	rec.waitListing(t, "nil after the close", func(n []string) bool { return n == nil })
	// Between the close and the reconnect: a call finds no session.
	_, err = c.Session()
	assert.Check(t, is.ErrorIs(err, ErrUnavailable))
	assert.Check(t, is.ErrorContains(err, "fake"))
	assert.Check(t, is.ErrorIs(c.Health(), ErrUnavailable))
	close(gate)
	rec.waitListing(t, "with echo after the reconnect", func(n []string) bool { return n != nil })
	assert.Equal(t, up.dialCount(), 2)
	sess, err := c.Session()
	assert.NilError(t, err)
	assert.Check(t, sess != old, "a new session")
	assert.NilError(t, c.Health())
	rec.mu.Lock()
	assert.Check(t, len(rec.downs) >= 1)
	assert.Check(t, is.ErrorIs(rec.downs[0], ErrUnavailable))
	rec.mu.Unlock()

	// The old session is gone for good: a call on it fails rather than
	// hanging.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = old.CallTool(ctx, &mcp.CallToolParams{Name: "echo"})
	assert.Check(t, err != nil)
	assert.Check(t, ctx.Err() == nil, "the call on a closed session hung")
}

// TestConnDialFails: a server that cannot be started is unavailable with
// the reason, Ready still returns, and Run keeps trying.
func TestConnDialFails(t *testing.T) {
	t.Parallel()
	up, rec := newFakeUpstream(), newRecorder()
	up.fail = errors.New("exec: npx: not found")
	c := start(t, up, rec)
	err := c.Health()
	assert.Check(t, is.ErrorIs(err, ErrUnavailable))
	assert.Check(t, is.ErrorContains(err, "fake: exec: npx: not found"))
	rec.waitListing(t, "nil for the failed dial", func(n []string) bool { return n == nil })

	// It comes up once the server can be started.
	up.mu.Lock()
	up.fail = nil
	up.mu.Unlock()
	rec.waitListing(t, "with echo once it starts", func(n []string) bool { return n != nil })
	assert.NilError(t, c.Health())
	assert.Check(t, up.dialCount() >= 2)
}

// TestConnCoalescesListChanged: however many list_changed notifications a
// server sends, at most one listing of a kind runs at a time, at most one
// more waits for it, and each starts at least relistEvery after the one
// before; a single notification after a quiet spell is listed as soon as
// the interval allows. A notification of a session that is no longer the
// live one lists nothing.
func TestConnCoalescesListChanged(t *testing.T) {
	t.Parallel()
	const every = 100 * time.Millisecond
	for _, c := range []struct {
		name string
		// burst notifications, spread over spread.
		burst  int
		spread time.Duration
	}{
		{"one", 1, 0},
		{"burst", 1000, 0},
		{"sustained", 20000, 5 * every},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			up, rec := newFakeUpstream(), newRecorder()
			conn := NewConn("fake", "test", up.dial, rec.hooks(), zerolog.Nop())
			conn.relistEvery = every
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { conn.Run(ctx); close(done) }()
			defer func() { cancel(); <-done }()
			rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer rcancel()
			conn.Ready(rctx)
			sess, err := conn.Session()
			assert.NilError(t, err)
			time.Sleep(every) // the listing at connect is an interval ago
			rec.reset()
			began := time.Now()
			for i := range c.burst {
				conn.tools.notify(sess)
				if c.spread > 0 && i%(c.burst/10) == 0 {
					time.Sleep(c.spread / 10)
				}
			}
			rec.waitListing(t, "after the notifications", func(n []string) bool { return n != nil })
			first := time.Since(began)
			if c.spread == 0 {
				// Not held back for an interval (the slack is a loaded
				// machine's listing itself).
				assert.Check(t, first < every+time.Second, "a notification after a quiet interval waited %s", first)
			}
			// Let every pending listing run.
			time.Sleep(3 * every)
			elapsed := time.Since(began)
			rec.mu.Lock()
			n := len(rec.listings)
			rec.mu.Unlock()
			most := 1 + int(elapsed/every)
			if c.spread > 0 {
				assert.Check(t, n >= 2, "a notification after a listing started is not lost: %d listings", n)
			}
			assert.Check(t, n <= most, "%d notifications over %s: %d listings, want at most %d", c.burst, elapsed, n, most)
			conn.tools.mu.Lock()
			assert.Check(t, !conn.tools.running && conn.tools.pending == nil, "the relister is idle afterwards")
			conn.tools.mu.Unlock()
		})
	}
	t.Run("stale-session", func(t *testing.T) {
		t.Parallel()
		up, rec := newFakeUpstream(), newRecorder()
		conn := start(t, up, rec)
		rec.reset()
		conn.tools.notify(&mcp.ClientSession{})
		time.Sleep(RelistInterval + 200*time.Millisecond)
		rec.mu.Lock()
		defer rec.mu.Unlock()
		assert.Equal(t, len(rec.listings), 0, "a session that is not the live one is not listed")
	})
}

// lockedBuffer is a log sink safe for the connection's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestConnListingBounds: a server decides how its listings are paged. A
// cursor that comes back, or pages that never end, would be listed until
// ConnectTimeout with every page kept (a 16 MiB page at a time); the
// listing stops at the first repeated cursor or past its bounds, and is
// refused whole (nothing served from it), said in the log. An ordinary
// paged listing is read to its end.
func TestConnListingBounds(t *testing.T) {
	t.Parallel()
	tool := func(name string) *mcp.Tool {
		return &mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}
	}
	for _, tt := range []struct {
		name string
		// page answers tools/list at cursor; nil: the server's own.
		page func(cursor string) *mcp.ListToolsResult
		// big makes the server's own listing span pages.
		big  bool
		want string // in the log; "" means the listing is served
	}{
		{name: "a cursor that comes back", want: "gave the cursor",
			page: func(string) *mcp.ListToolsResult {
				return &mcp.ListToolsResult{Tools: []*mcp.Tool{tool("echo")}, NextCursor: "again"}
			}},
		{name: "a cursor that comes back later", want: "gave the cursor",
			page: func(c string) *mcp.ListToolsResult {
				next := map[string]string{"": "a", "a": "b", "b": "a"}[c]
				return &mcp.ListToolsResult{Tools: []*mcp.Tool{tool("t" + c)}, NextCursor: next}
			}},
		{name: "tools without end", want: fmt.Sprintf("more than %d", MaxListed),
			page: func(c string) *mcp.ListToolsResult {
				var ts []*mcp.Tool
				for i := range 100 {
					ts = append(ts, tool(fmt.Sprintf("t%d_%d", len(c), i)))
				}
				return &mcp.ListToolsResult{Tools: ts, NextCursor: c + "x"}
			}},
		{name: "empty pages without end", want: fmt.Sprintf("past %d pages", MaxListPages),
			page: func(c string) *mcp.ListToolsResult {
				return &mcp.ListToolsResult{Tools: []*mcp.Tool{}, NextCursor: fmt.Sprintf("p%d", len(c)) + c}
			}},
		// (bounds.bytes is 1 MiB here: 32 MiB of JSON is slow under -race.)
		{name: "descriptions without end", want: fmt.Sprintf("more than %d bytes", 1<<20),
			page: func(c string) *mcp.ListToolsResult {
				x := tool(fmt.Sprintf("t%d", len(c)))
				x.Description = strings.Repeat("d", 64<<10)
				return &mcp.ListToolsResult{Tools: []*mcp.Tool{x}, NextCursor: c + "x"}
			}},
		{name: "an ordinary paged listing", big: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			up := newFakeUpstream()
			if tt.big {
				s := mcp.NewServer(&mcp.Implementation{Name: "paged", Version: "1"}, &mcp.ServerOptions{PageSize: 2})
				for i := range 5 {
					s.AddTool(tool(fmt.Sprintf("p%d", i)), func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, nil })
				}
				up.server = s
			}
			if tt.page != nil {
				up.server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
					return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
						if method == "tools/list" {
							return tt.page(req.(*mcp.ListToolsRequest).Params.Cursor), nil
						}
						return next(ctx, method, req)
					}
				})
			}
			rec, logs := newRecorder(), &lockedBuffer{}
			c := NewConn("fake", "test", up.dial, rec.hooks(), zerolog.New(logs))
			c.bounds.bytes = 1 << 20
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { c.Run(ctx); close(done) }()
			defer func() { cancel(); <-done }()
			rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer rcancel()
			began := time.Now()
			c.Ready(rctx) // the first listing has ended
			if took := time.Since(began); took > 8*time.Second {
				t.Fatalf("the first listing took %v", took)
			}
			rec.mu.Lock()
			listings := slices.Clone(rec.listings)
			rec.mu.Unlock()
			if tt.want == "" {
				assert.DeepEqual(t, listings, [][]string{{"p0", "p1", "p2", "p3", "p4"}})
				return
			}
			assert.Check(t, is.Len(listings, 0), "nothing is served from a refused listing")
			assert.Check(t, is.Contains(logs.String(), tt.want))
		})
	}
}
