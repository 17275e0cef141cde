package upstream

//lint:file-ignore SA1019 MCP sampling and roots are deprecated by the 2026-07-28 protocol revision but still served during its deprecation window (allow_requests.sampling, docs/upstreams.md)

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/mitrity/mitrity/govern/audit"
)

// Dialer opens one session's transport to an upstream: for a stdio server
// it starts the server (in the sandbox) and returns its stdio; for an HTTP
// server it returns the Streamable HTTP client transport. ctx bounds the
// server's life: cancelling it stops the server.
type Dialer func(ctx context.Context) (mcp.Transport, error)

// Hooks are what a connection tells its owner.
type Hooks struct {
	// Tools is called with the server's listing after every connect and
	// every notifications/tools/list_changed; nil on a disconnect.
	Tools func(server string, tools []*mcp.Tool)
	// Request judges a request the upstream sends the client
	// (sampling/createMessage, elicitation/create, roots/list), as a
	// request or inside a result (multi round-trip): nil lets it through
	// to answer (the gateway has no model: it is still answered with an
	// error), an error refuses it. The owner audits it either way.
	Request func(ctx context.Context, server, method string) error
	// Down is called when a session ends (crash, EOF, protocol error).
	Down func(server string, err error)
	// Resources and Prompts are called with the server's resources,
	// resource templates and prompts after every connect and every
	// list_changed of theirs (nil on a disconnect, or when the server has
	// none).
	Resources func(server string, resources []*mcp.Resource, templates []*mcp.ResourceTemplate)
	Prompts   func(server string, prompts []*mcp.Prompt)
	// Sample and Elicit answer an allowed request (Request returned nil)
	// by passing it on to the agent whose call asked for it; nil, or an
	// error, refuses it.
	Sample func(ctx context.Context, server string, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error)
	Elicit func(ctx context.Context, server string, p *mcp.ElicitParams) (*mcp.ElicitResult, error)
	// Progress receives the upstream's notifications/progress, with the
	// session that sent it (the owner accepts one only from the session
	// its call was forwarded on).
	Progress func(server string, sess *mcp.ClientSession, token any, progress, total float64, message string)
}

// Backoff bounds the restarts of an upstream that keeps failing.
const (
	MinBackoff = 250 * time.Millisecond
	MaxBackoff = 30 * time.Second
	// HealthyAfter is how long a session must last for the backoff to
	// start again from MinBackoff.
	HealthyAfter = 30 * time.Second
	// ConnectTimeout bounds one connect and initialize.
	ConnectTimeout = 30 * time.Second
	// RelistInterval is the least time between the starts of two listings
	// of one kind (tools, resources, prompts) of one upstream. A server's
	// list_changed notifications are coalesced: at most one listing of a
	// kind runs at a time and at most one more waits for it, however many
	// notifications arrive, so a server that floods list_changed is
	// listed at most once a second per kind.
	RelistInterval = time.Second
)

// The bounds of one listing of one kind (tools, resources, resource
// templates, prompts), whose paging is the server's: without them a
// cursor that comes back, or pages that never end, would be read until
// ConnectTimeout with every page kept, up to a 16 MiB message each. A
// listing past one, or that repeats a cursor, is refused whole.
const (
	// MaxListed bounds the items of one listing.
	MaxListed = 4096
	// MaxListedBytes bounds their JSON, in total.
	MaxListedBytes = 32 << 20
	// MaxListPages bounds its pages (an empty page counts too).
	MaxListPages = 1024
)

// listBounds are the bounds of one listing.
type listBounds struct{ items, bytes, pages int }

// ErrUnavailable wraps every error of a call that never reached an
// upstream, or whose upstream went away mid-call.
var ErrUnavailable = errors.New("upstream unavailable")

// Conn keeps one upstream session up. Build it with NewConn and Run it.
type Conn struct {
	name   string
	dial   Dialer
	hooks  Hooks
	log    zerolog.Logger
	client *mcp.Client

	mu   sync.Mutex
	sess *mcp.ClientSession
	// life ends with the live session.
	life context.Context
	// why is the reason the server is down (nil when up).
	why error
	// tools, resources and prompts coalesce and space out the listings
	// the server's list_changed notifications ask for.
	tools, resources, prompts *relister
	// relistEvery is RelistInterval (shorter in tests).
	relistEvery time.Duration
	// bounds are the listing bounds (smaller in tests).
	bounds listBounds
	// up is closed when the first connect attempt has ended: connected
	// (and its tools listed) or failed.
	up     chan struct{}
	upOnce sync.Once
}

// errNoModel is the answer to an allowed request the owner does not pass
// on: the gateway itself has no model and no person to ask.
var errNoModel = errors.New("the MITRITY gateway has no model")

// NewConn returns the connection to upstream name.
func NewConn(name, version string, dial Dialer, hooks Hooks, log zerolog.Logger) *Conn {
	c := &Conn{name: name, dial: dial, hooks: hooks, log: log, up: make(chan struct{}), relistEvery: RelistInterval,
		bounds: listBounds{items: MaxListed, bytes: MaxListedBytes, pages: MaxListPages},
		why:    fmt.Errorf("%w: %s has not connected yet", ErrUnavailable, name)}
	c.tools, c.resources, c.prompts = &relister{c: c, list: c.relist}, &relister{c: c, list: c.relistResources}, &relister{c: c, list: c.relistPrompts}
	refuse := func(method string) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			if hooks.Request != nil {
				if err := hooks.Request(ctx, name, method); err != nil {
					return err
				}
			}
			if method == "roots/list" {
				return errors.New("the MITRITY gateway gives an upstream no roots; roots/list is refused")
			}
			return fmt.Errorf("%w to answer %s; nothing was sent to one", errNoModel, method)
		}
	}
	sampling, elicit := refuse("sampling/createMessage"), refuse("elicitation/create")
	c.client = mcp.NewClient(&mcp.Implementation{Name: "mitrity-gateway", Version: version}, &mcp.ClientOptions{
		// The gateway has no roots to give an upstream, so it advertises
		// none (the SDK's default would advertise roots and answer
		// roots/list itself, unaudited); sampling and elicitation are
		// still advertised, from their handlers, so that they are seen,
		// audited and refused.
		Capabilities: &mcp.ClientCapabilities{},
		// The SDK's multi round-trip loop (protocol 2026-07-28: the
		// upstream asks for input inside a call's result) answers
		// roots/list by itself, out of sight of Hooks.Request; the
		// gateway judges those requests itself (inputRequests below).
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		CreateMessageHandler: func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			err := sampling(ctx) // judged and audited once
			if errors.Is(err, errNoModel) && hooks.Sample != nil {
				return hooks.Sample(ctx, name, req.Params)
			}
			return nil, err
		},
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			err := elicit(ctx)
			if errors.Is(err, errNoModel) && hooks.Elicit != nil {
				return hooks.Elicit(ctx, name, req.Params)
			}
			return nil, err
		},
		ToolListChangedHandler: func(ctx context.Context, req *mcp.ToolListChangedRequest) {
			c.tools.notify(req.Session)
		},
		ResourceListChangedHandler: func(ctx context.Context, req *mcp.ResourceListChangedRequest) {
			c.resources.notify(req.Session)
		},
		PromptListChangedHandler: func(ctx context.Context, req *mcp.PromptListChangedRequest) {
			c.prompts.notify(req.Session)
		},
		ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
			if hooks.Progress != nil && req.Params != nil {
				hooks.Progress(name, req.Session, req.Params.ProgressToken, req.Params.Progress, req.Params.Total, req.Params.Message)
			}
		},
	})
	// roots/list sent as a request (protocol versions before
	// 2026-07-28): refused and put to Hooks.Request like the others,
	// where the SDK would answer it with the client's (empty) roots.
	roots := refuse("roots/list")
	c.client.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "roots/list" {
				return nil, roots(ctx)
			}
			return next(ctx, method, req)
		}
	})
	c.client.AddSendingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if err != nil {
				return res, err
			}
			return inputRequests(ctx, name, method, res, refuse)
		}
	})
	return c
}

// inputRequests judges the requests an upstream makes inside a result
// (protocol 2026-07-28, multi round-trip: a tools/call, prompts/get or
// resources/read answered with input_required): each is put to
// Hooks.Request, and none can be answered (the gateway has no model, no
// user to ask and no roots), so the call fails with why. A result that
// asks for nothing is passed on.
func inputRequests(ctx context.Context, server, method string, res mcp.Result, refuse func(string) func(context.Context) error) (mcp.Result, error) {
	var asks mcp.InputRequestMap
	switch r := res.(type) {
	case *mcp.CallToolResult:
		if r == nil || !r.NeedsInput() {
			return res, nil
		}
		asks = r.InputRequests
	case *mcp.GetPromptResult:
		if r == nil || !r.NeedsInput() {
			return res, nil
		}
		asks = r.InputRequests
	case *mcp.ReadResourceResult:
		if r == nil || !r.NeedsInput() {
			return res, nil
		}
		asks = r.InputRequests
	default:
		return res, nil
	}
	if len(asks) == 0 {
		return nil, fmt.Errorf("upstream %s is busy (it answered %s with an empty input request); retry later", server, method)
	}
	var errs []error
	for _, id := range slices.Sorted(maps.Keys(asks)) {
		m := fmt.Sprintf("%T", asks[id])
		switch asks[id].(type) {
		case *mcp.CreateMessageParams, *mcp.CreateMessageWithToolsParams:
			m = "sampling/createMessage"
		case *mcp.ElicitParams:
			m = "elicitation/create"
		case *mcp.ListRootsParams:
			m = "roots/list"
		}
		errs = append(errs, refuse(m)(ctx))
	}
	return nil, fmt.Errorf("%w: upstream %s asked for input to answer %s, which the gateway does not give: %w", ErrRequestRefused, server, method, errors.Join(errs...))
}

// Name is the upstream's name.
func (c *Conn) Name() string { return c.name }

// Run keeps the session up until ctx is done: connect, list the tools,
// wait for the session to end, back off, again. A server that keeps
// failing is retried no faster than MaxBackoff.
func (c *Conn) Run(ctx context.Context) {
	backoff := MinBackoff
	for ctx.Err() == nil {
		began := time.Now()
		err := c.session(ctx)
		c.upOnce.Do(func() { close(c.up) })
		if ctx.Err() != nil {
			return
		}
		if time.Since(began) > HealthyAfter {
			backoff = MinBackoff
		}
		c.log.Warn().Err(err).Str("upstream", c.name).Dur("retry_in", backoff).Msg("upstream session ended")
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, MaxBackoff)
	}
}

// Ready waits until the first connect attempt has ended (or ctx is done).
func (c *Conn) Ready(ctx context.Context) {
	select {
	case <-c.up:
	case <-ctx.Done():
	}
}

// session runs one session to its end and returns why it ended.
func (c *Conn) session(ctx context.Context) error {
	life, stop := context.WithCancel(ctx)
	defer stop() // stops a stdio server with its session
	t, err := c.dial(life)
	if err != nil {
		return c.setDown(fmt.Errorf("%w: %s: %v", ErrUnavailable, c.name, err))
	}
	cctx, cancel := context.WithTimeout(life, ConnectTimeout)
	sess, err := c.client.Connect(cctx, t, nil)
	cancel()
	if err != nil {
		return c.setDown(fmt.Errorf("%w: %s: connecting: %v", ErrUnavailable, c.name, err))
	}
	c.mu.Lock()
	c.sess, c.life, c.why = sess, life, nil
	c.mu.Unlock()
	c.tools.now(sess)
	c.resources.now(sess)
	c.prompts.now(sess)
	c.upOnce.Do(func() { close(c.up) })
	done := make(chan error, 1)
	go func() { done <- sess.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		sess.Close()
		err = <-done
	}
	if err == nil {
		err = errors.New("the server closed the session")
	}
	return c.setDown(fmt.Errorf("%w: %s: %v", ErrUnavailable, c.name, err))
}

func (c *Conn) setDown(err error) error {
	c.mu.Lock()
	c.sess, c.life, c.why = nil, nil, err
	c.mu.Unlock()
	if c.hooks.Down != nil {
		c.hooks.Down(c.name, err)
	}
	if c.hooks.Tools != nil {
		c.hooks.Tools(c.name, nil)
	}
	if c.hooks.Resources != nil {
		c.hooks.Resources(c.name, nil, nil)
	}
	if c.hooks.Prompts != nil {
		c.hooks.Prompts(c.name, nil)
	}
	return err
}

// current reports whether sess is still the live session.
func (c *Conn) current(sess *mcp.ClientSession) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sess == sess
}

// lifeOf is the context that ends with sess, when it is the live session
// (else one already done).
func (c *Conn) lifeOf(sess *mcp.ClientSession) context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess == sess && c.life != nil {
		return c.life
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// relister runs the listings of one kind the server asks for with
// list_changed: one at a time, at most one more pending (however many
// notifications arrive meanwhile), each started at least the connection's
// relistEvery after the one before (the listing at connect included).
type relister struct {
	c    *Conn
	list func(*mcp.ClientSession)

	mu sync.Mutex
	// running: a goroutine runs (or waits to run) the listings.
	running bool
	// pending is the session a notification asked to be listed again
	// (nil: none).
	pending *mcp.ClientSession
	// last is when the last listing started.
	last time.Time
	// runs counts the listings started (tests).
	runs int
}

// now lists sess at once (at connect).
func (r *relister) now(sess *mcp.ClientSession) {
	r.mu.Lock()
	r.last = time.Now()
	r.runs++
	r.mu.Unlock()
	r.list(sess)
}

// notify asks for a listing of sess: coalesced with any already pending,
// and started once the interval since the last one has passed.
func (r *relister) notify(sess *mcp.ClientSession) {
	if sess == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending = sess
	if r.running {
		return
	}
	r.running = true
	go r.run()
}

func (r *relister) run() {
	for {
		r.mu.Lock()
		sess := r.pending
		if sess == nil {
			r.running = false
			r.mu.Unlock()
			return
		}
		wait := time.Until(r.last.Add(r.c.relistEvery))
		r.mu.Unlock()
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-r.c.lifeOf(sess).Done():
			}
			t.Stop()
		}
		r.mu.Lock()
		sess, r.pending = r.pending, nil
		start := sess != nil && r.c.current(sess)
		if start {
			r.last = time.Now()
			r.runs++
		}
		r.mu.Unlock()
		if start {
			r.list(sess)
		}
	}
}

// caps are the capabilities the server declared at initialize.
func caps(sess *mcp.ClientSession) *mcp.ServerCapabilities {
	if r := sess.InitializeResult(); r != nil && r.Capabilities != nil {
		return r.Capabilities
	}
	return &mcp.ServerCapabilities{}
}

// relistResources reads the server's resources and templates, when it
// has any, and hands them to the owner.
func (c *Conn) relistResources(sess *mcp.ClientSession) {
	if sess == nil || c.hooks.Resources == nil || caps(sess).Resources == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), ConnectTimeout)
	defer cancel()
	rs, err := listAll(ctx, c.bounds, "resources", func(ctx context.Context, cursor string) ([]*mcp.Resource, string, error) {
		r, err := sess.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return r.Resources, r.NextCursor, nil
	})
	if err != nil {
		c.log.Warn().Err(err).Str("upstream", c.name).Msg("listing the upstream's resources")
		return
	}
	ts, err := listAll(ctx, c.bounds, "resource templates", func(ctx context.Context, cursor string) ([]*mcp.ResourceTemplate, string, error) {
		r, err := sess.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return r.ResourceTemplates, r.NextCursor, nil
	})
	if err != nil {
		ts = nil // templates are optional
	}
	if c.current(sess) {
		c.hooks.Resources(c.name, rs, ts)
	}
}

// relistPrompts reads the server's prompts, when it has any.
func (c *Conn) relistPrompts(sess *mcp.ClientSession) {
	if sess == nil || c.hooks.Prompts == nil || caps(sess).Prompts == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), ConnectTimeout)
	defer cancel()
	ps, err := listAll(ctx, c.bounds, "prompts", func(ctx context.Context, cursor string) ([]*mcp.Prompt, string, error) {
		r, err := sess.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return r.Prompts, r.NextCursor, nil
	})
	if err != nil {
		c.log.Warn().Err(err).Str("upstream", c.name).Msg("listing the upstream's prompts")
		return
	}
	if c.current(sess) {
		c.hooks.Prompts(c.name, ps)
	}
}

// relist reads the server's tools and hands them to the owner.
func (c *Conn) relist(sess *mcp.ClientSession) {
	if sess == nil || c.hooks.Tools == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), ConnectTimeout)
	defer cancel()
	tools, err := listAll(ctx, c.bounds, "tools", func(ctx context.Context, cursor string) ([]*mcp.Tool, string, error) {
		r, err := sess.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return r.Tools, r.NextCursor, nil
	})
	if err != nil {
		c.log.Warn().Err(err).Str("upstream", c.name).Msg("listing the upstream's tools")
		return
	}
	if c.current(sess) {
		c.hooks.Tools(c.name, tools)
	}
}

// listAll reads every page of one listing (page answers one cursor with
// its items and the next cursor, "" at the end) within the listing bounds
// (MaxListed, MaxListedBytes, MaxListPages); a listing past one, or that
// gives a cursor it gave before, is an error, and none of it is kept.
func listAll[T any](ctx context.Context, bound listBounds, kind string, page func(context.Context, string) ([]*T, string, error)) ([]*T, error) {
	var out []*T
	size := 0
	// Cursors are the server's and as long as it likes: their hashes are
	// kept.
	seen := map[string]bool{}
	cursor := ""
	for pages := 1; ; pages++ {
		items, next, err := page(ctx, cursor)
		if err != nil {
			return nil, err
		}
		for _, x := range items {
			if len(out) == bound.items {
				return nil, fmt.Errorf("the server lists more than %d %s; none of them is taken", bound.items, kind)
			}
			b, _ := json.Marshal(x)
			if size += len(b); size > bound.bytes {
				return nil, fmt.Errorf("the server's %s take more than %d bytes; none of them is taken", kind, bound.bytes)
			}
			out = append(out, x)
		}
		if next == "" {
			return out, nil
		}
		h := audit.HashOf([]byte(next))
		switch {
		case seen[h]:
			return nil, fmt.Errorf("the server's %s listing loops: it gave the cursor %q twice; none of them is taken", kind, cut(next, 64))
		case pages == bound.pages:
			return nil, fmt.Errorf("the server's %s listing goes on past %d pages; none of them is taken", kind, bound.pages)
		}
		seen[h], cursor = true, next
	}
}

// Session is the live session, or why there is none.
func (c *Conn) Session() (*mcp.ClientSession, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess == nil {
		return nil, c.why
	}
	return c.sess, nil
}

// Health is nil when the upstream is connected, else why not.
func (c *Conn) Health() error {
	_, err := c.Session()
	return err
}
