package service

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/audit"
	"github.com/mitrity/mitrity/govern/config"
	"github.com/mitrity/mitrity/govern/dlp"
	"github.com/mitrity/mitrity/govern/executor"
	"github.com/mitrity/mitrity/govern/hold"
	"github.com/mitrity/mitrity/govern/metrics"
	"github.com/mitrity/mitrity/govern/notify"
	"github.com/mitrity/mitrity/govern/pipeline"
	"github.com/mitrity/mitrity/govern/plan"
	"github.com/mitrity/mitrity/govern/policy"
	"github.com/mitrity/mitrity/govern/upstream"
)

// Server runs a long-lived program plan: the executor's Serve. A stdio
// upstream is launched through it, in the same sandbox as a command.
type Server interface {
	Serve(ctx context.Context, p *plan.Plan, mode govern.SandboxMode, creds map[string]string, in io.Reader, stdout, stderr io.Writer) executor.Result
}

// serveForever is a server plan's timeout: it lives as long as the gateway.
const serveForever = 100 * 365 * 24 * time.Hour

// upstreams are the proxied MCP servers of a running gateway: one
// connection each, and the catalog of what they serve.
type upstreams struct {
	conns   map[string]*upstream.Conn
	catalog *upstream.Catalog
	offers  *upstream.Offers
	// listed is each server's last listing, judged again when an
	// operator approves a changed definition.
	mu     sync.Mutex
	listed map[string][]*mcp.Tool
	// asked are the changed definitions waiting in the approvals queue
	// (served name -> hash), so a listing seen again does not ask twice.
	asked map[string]string
	// changed is told when what is served changed (the MCP server
	// updates tools/list and notifies its clients).
	changed func()
	// taken reports names the gateway serves itself.
	taken func(string) bool
	// calls are the agents' sides of the calls in flight, by upstream.
	calls inflight
	// progress routes an upstream's progress notifications (by the token
	// the gateway sent, from the session it sent it on) to the agent's
	// call.
	progress map[string]progressWatch
	// dropLog logs dropped progress notifications, at most a few lines
	// every few seconds (each is counted).
	dropLog zerolog.Logger
	// audited are, per server and kind of listing, the withheld and
	// refused judgements of its last listing that are in the audit log:
	// the same judgement at the next listing is not audited again.
	audited map[string]map[upstream.Judgement]bool
	stop    context.CancelFunc
	wg      sync.WaitGroup
}

// StartUpstreams connects to every upstream of the configuration (a stdio
// server is launched, in the sandbox unless its entry says sandbox: none)
// and keeps each connected until Close. changed is called whenever the set
// of served tools changes; taken names the tools the caller serves itself
// (shell__execute), which no upstream tool may take. It waits up to wait
// for the first connect of each.
func (s *Service) StartUpstreams(changed func(), taken func(string) bool, wait time.Duration) {
	g := s.gen.Load()
	if len(g.cfg.Upstreams) == 0 {
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	u := &upstreams{conns: map[string]*upstream.Conn{}, catalog: upstream.NewCatalog(g.pipe.Policy().ToolPins), offers: upstream.NewOffers(),
		listed: map[string][]*mcp.Tool{}, asked: map[string]string{}, changed: changed, taken: taken, stop: stop,
		audited: map[string]map[upstream.Judgement]bool{},
		dropLog: s.log.Sample(&zerolog.BurstSampler{Burst: 5, Period: 10 * time.Second})}
	s.ups = u
	// First-seen hashes outlive this process: the next gateway (a stdio
	// client starts one per session) withholds a definition that changed.
	if err := u.catalog.SetStore(upstream.SeenFileIn(g.cfg.Audit.Path)); err != nil {
		s.log.Error().Err(err).Msg("the upstream definitions file cannot be read: every tool definition not seen before is withheld until it can")
	}
	for _, name := range sortedKeys(g.cfg.Upstreams) {
		cfg := g.cfg.Upstreams[name]
		dial := s.httpDialer(cfg)
		if cfg.Stdio() {
			dial = s.stdioDialer(cfg)
		}
		c := upstream.NewConn(name, s.version, dial, upstream.Hooks{
			Tools: s.upstreamTools,
			Resources: func(server string, rs []*mcp.Resource, ts []*mcp.ResourceTemplate) {
				s.judged(server, listingResources, u.offers.JudgeResources(server, rs, ts))
			},
			Prompts: func(server string, ps []*mcp.Prompt) {
				s.judged(server, listingPrompts, u.offers.JudgePrompts(server, ps))
			},
			Request:  s.upstreamRequest,
			Progress: s.onProgress,
			Sample:   s.sample,
			Elicit:   s.elicit,
			Down: func(server string, err error) {
				s.log.Warn().Err(err).Str("upstream", server).Msg("upstream is down: its tools are withdrawn until it is back")
			},
		}, s.log)
		u.conns[name] = c
		u.wg.Add(1)
		go func() {
			defer u.wg.Done()
			c.Run(ctx)
		}()
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for _, c := range u.conns {
		c.Ready(wctx)
	}
}

// closeUpstreams stops every upstream (and every server the gateway
// launched).
func (s *Service) closeUpstreams() {
	if s.ups == nil {
		return
	}
	s.ups.stop()
	s.ups.wg.Wait()
}

// UpstreamTools are the upstream tools served now, by served name.
func (s *Service) UpstreamTools() []upstream.Tool {
	if s.ups == nil {
		return nil
	}
	return shownAll(s, s.ups.catalog.Tools(), func(t *upstream.Tool) **mcp.Tool { return &t.Def })
}

// shown is one of an upstream's definitions (a tool, resource, template
// or prompt), or a request it sends the agent (sampling, elicitation), as
// the agent is shown it: every string, key and value, with each credential
// value the gateway holds, in every form, redacted, as in what a call
// returns; a server holding one could put it in a description or a
// message. def itself is left as it is (a definition's hash is of what the
// server listed). nil when the redactor cannot be built.
func shown[T any](s *Service, def *T) *T {
	red, err := s.known.redactor()
	if err != nil {
		return nil
	}
	c := *def
	seen, err := upstream.Clean(&c, func(v string) (string, int) {
		if r := red.Scrub(v); r != v {
			return r, 1
		}
		return v, 0
	})
	switch {
	case err != nil:
		return nil
	case seen.Redactions == 0:
		return def
	}
	return &c
}

// shownAll is list with the definition at def of each entry shown (shown);
// an entry whose definition cannot be shown is left out.
func shownAll[E, T any](s *Service, list []E, def func(*E) **T) []E {
	out := list[:0:0]
	for _, e := range list {
		d := def(&e)
		if *d == nil {
			out = append(out, e)
			continue
		}
		if *d = shown(s, *d); *d != nil {
			out = append(out, e)
		}
	}
	return out
}

// UpstreamWithheld are the upstream tools listed and withheld now: absent
// from tools/list, a call of one refused with why.
func (s *Service) UpstreamWithheld() []upstream.Tool {
	if s.ups == nil {
		return nil
	}
	var out []upstream.Tool
	for _, w := range s.ups.catalog.Withheld() {
		out = append(out, w.Tool)
	}
	return out
}

func (u *upstreams) withheld(served string) (upstream.Withheld, bool) {
	if u == nil {
		return upstream.Withheld{}, false
	}
	return u.catalog.WithheldTool(served)
}

// judged audits the judgements of a listing of resources or prompts and
// tells the server what it serves changed.
func (s *Service) judged(server, kind string, js []upstream.Judgement) {
	s.auditListing(server, kind, js)
	s.ups.changed()
}

// The kinds of listing whose repeated judgements are told apart.
const (
	listingTools     = "tools"
	listingResources = "resources"
	listingPrompts   = "prompts"
)

// auditListing audits the judgements of one listing of server: every
// first_seen, pinned and approved one, and each withheld or refused one
// that differs from every withheld or refused judgement of the listing of
// the same kind before (another definition, hash, state or reason), or
// that could not be recorded then. A withheld or refused definition
// listed again unchanged is not audited again (a server that sends
// list_changed in a loop would fill the audit log); it is logged at debug.
// What is remembered is forgotten when the server goes down, so every
// session's first listing is audited whole.
func (s *Service) auditListing(server, kind string, js []upstream.Judgement) {
	u := s.ups
	key := server + "\x00" + kind
	u.mu.Lock()
	before := u.audited[key]
	u.mu.Unlock()
	now := map[upstream.Judgement]bool{}
	for _, j := range js {
		repeatable := j.State == audit.DefinitionWithheld || j.State == audit.DefinitionRefused
		k := j
		k.Message = "" // may carry an error's words; the rest says what was judged
		if repeatable && before[k] {
			now[k] = true
			s.log.Debug().Str("upstream", j.Server).Str("tool", j.Tool).Str("served", j.Served).Str("state", j.State).
				Str("sha256", j.SHA256).Str("reason", string(j.Reason)).Msg("upstream tool definition judged as at the listing before: not audited again")
			continue
		}
		if err := s.definitionEvent(j); err == nil && repeatable {
			now[k] = true
		}
	}
	u.mu.Lock()
	u.audited[key] = now
	u.mu.Unlock()
}

// repin applies a reloaded policy's tool_pins: every server's last
// listing is judged again under them.
func (s *Service) repin() {
	u := s.ups
	if u == nil {
		return
	}
	u.catalog.SetPins(s.gen.Load().pipe.Policy().ToolPins)
	u.mu.Lock()
	listed := make(map[string][]*mcp.Tool, len(u.listed))
	for k, v := range u.listed {
		listed[k] = v
	}
	u.mu.Unlock()
	for server, tools := range listed {
		s.upstreamTools(server, tools)
	}
}

// UpstreamResources are the upstream resources and templates served now.
func (s *Service) UpstreamResources() []upstream.Resource {
	if s.ups == nil {
		return nil
	}
	rs := shownAll(s, s.ups.offers.Resources(), func(r *upstream.Resource) **mcp.Resource { return &r.Def })
	return shownAll(s, rs, func(r *upstream.Resource) **mcp.ResourceTemplate { return &r.Template })
}

// UpstreamPrompts are the upstream prompts served now.
func (s *Service) UpstreamPrompts() []upstream.Prompt {
	if s.ups == nil {
		return nil
	}
	return shownAll(s, s.ups.offers.Prompts(), func(p *upstream.Prompt) **mcp.Prompt { return &p.Def })
}

// UpstreamHealth is each upstream's state: nil when connected.
func (s *Service) UpstreamHealth() map[string]error {
	out := map[string]error{}
	if s.ups == nil {
		return out
	}
	for name, c := range s.ups.conns {
		out[name] = c.Health()
	}
	return out
}

// Permits reports whether agent's profile lets it see a tool of
// actionType: a tool its tool_permissions deny is absent from its
// tools/list, as its call would be refused.
func (s *Service) Permits(agent, actionType string) bool {
	return s.gen.Load().pipe.Permits(agent, actionType)
}

// upstreamTools judges a server's listing (nil: it went down).
func (s *Service) upstreamTools(server string, tools []*mcp.Tool) {
	u := s.ups
	if u == nil {
		return
	}
	u.mu.Lock()
	if tools == nil {
		delete(u.listed, server)
		delete(u.audited, server+"\x00"+listingTools)
		u.catalog.Drop(server)
		u.mu.Unlock()
		u.changed()
		return
	}
	u.listed[server] = tools
	_, js := u.catalog.Judge(server, tools, u.taken)
	var ask []upstream.Judgement
	for _, j := range js {
		if j.Reason == govern.ReasonToolDefinitionChanged && j.Previous != "" && u.asked[j.Served] != j.SHA256 {
			if _, pinned := s.gen.Load().pipe.Policy().ToolPins[j.Served]; !pinned {
				u.asked[j.Served] = j.SHA256
				ask = append(ask, j)
			}
		}
	}
	u.mu.Unlock()
	s.auditListing(server, listingTools, js)
	for _, j := range ask {
		go s.askApproval(j)
	}
	u.changed()
}

// definitionEvent audits a judged definition, and logs it; an error is
// that the event could not be recorded.
func (s *Service) definitionEvent(j upstream.Judgement) error {
	lv := s.log.Info()
	if j.State == audit.DefinitionWithheld || j.State == audit.DefinitionRefused {
		lv = s.log.Warn()
	}
	// The upstream chose the name: the log line bounds it as the event does.
	lv.Str("upstream", j.Server).Str("tool", audit.Bound(j.Tool, audit.MaxTextBytes)).Str("served", j.Served).Str("state", j.State).
		Str("sha256", j.SHA256).Str("previous_sha256", j.Previous).Str("reason", string(j.Reason)).Msg("upstream tool definition: " + j.Message)
	d := govern.Decision{Outcome: govern.Allow}
	if j.Reason != "" {
		d = govern.Decision{Outcome: govern.Deny, Reason: j.Reason, Stage: "tool_definition", Message: j.Message}
	}
	call := govern.Call{Agent: "mitrity-gateway", Surface: govern.SurfaceMCP, Tool: j.Served, ActionType: upstream.ActionType(j.Served),
		Server: j.Server, UpstreamTool: j.Tool}
	if j.Served == "" {
		call.Tool, call.ActionType = j.Server+upstream.Separator+j.Tool, govern.ActionMCPPrefix+j.Server
	}
	// A loss is logged and counted by recordUpstream; the judgement stands.
	_, err := s.recordUpstream(audit.Record{Call: call, Decision: d}, nil, &audit.ToolDefinition{
		Server: j.Server, Tool: j.Tool, Served: j.Served, SHA256: j.SHA256, Previous: j.Previous, State: j.State, Reason: j.Reason}, nil)
	return err
}

// approvalWait is how long a changed definition waits for an operator.
const approvalWait = 7 * 24 * time.Hour

// askApproval puts a changed definition in the approvals queue; approved,
// it becomes the accepted definition and the server's listing is judged
// again.
func (s *Service) askApproval(j upstream.Judgement) {
	g := s.gen.Load()
	v := g.pipe.Holds().Wait(context.Background(), holdPending(j), approvalWait)
	u := s.ups
	u.mu.Lock()
	delete(u.asked, j.Served)
	u.mu.Unlock()
	if v.Outcome != govern.Allow {
		s.log.Warn().Str("served", j.Served).Str("by", v.By).Msg("a changed upstream tool definition was not approved: it stays withheld")
		return
	}
	if err := u.catalog.Approve(j.Served, j.SHA256); err != nil {
		s.log.Error().Err(err).Str("served", j.Served).Msg("an approved tool definition could not be recorded: it stays withheld; approve it again once the file is writable")
		return
	}
	s.definitionEvent(upstream.Judgement{Server: j.Server, Tool: j.Tool, Served: j.Served, SHA256: j.SHA256, Previous: j.Previous,
		State: audit.DefinitionApproved, Message: "approved by " + v.By})
	u.mu.Lock()
	tools := u.listed[j.Server]
	u.mu.Unlock()
	if tools != nil {
		s.upstreamTools(j.Server, tools)
	}
}

func holdPending(j upstream.Judgement) hold.Pending {
	return hold.Pending{Agent: "upstream:" + j.Server, Command: "approve tool definition " + j.Served + " sha256:" + j.SHA256 + " (was " + j.Previous + ")",
		Reason: string(j.Reason), Message: j.Message}
}

// upstreamRequest judges a request an upstream sends the client: refused
// unless its entry allows that kind; audited either way.
func (s *Service) upstreamRequest(ctx context.Context, server, method string) error {
	g := s.gen.Load()
	u := g.cfg.Upstreams[server]
	allowed := method == "sampling/createMessage" && u.AllowSampling || method == "elicitation/create" && u.AllowElicitation
	d := govern.Decision{Outcome: govern.Allow}
	var err error
	if !allowed {
		msg := fmt.Sprintf("upstream %s sent %s, which its entry does not allow (upstreams.%s.allow_requests); the gateway refused it", server, method, server)
		d = govern.Decision{Outcome: govern.Deny, Reason: govern.ReasonUpstreamRequestRefused, Stage: "upstream_request", Message: msg}
		err = errors.New(msg)
	}
	status := govern.StatusCompleted
	card := &audit.UpstreamCall{Server: server, Method: method, Status: status}
	if !allowed {
		card.Status, card.Reason = govern.StatusNeverRan, govern.ReasonUpstreamRequestRefused
	}
	call := govern.Call{Agent: "upstream:" + server, Surface: govern.SurfaceMCP, Tool: method, ActionType: govern.ActionMCPPrefix + server, Server: server}
	s.recordUpstream(audit.Record{Call: call, Decision: d}, card, nil, nil)
	return err
}

// CallTool runs one call of an upstream tool (call.Tool is its served
// name): the pipeline decides it, the decision's audit is reserved, the
// call is forwarded, and what comes back is redacted, scanned and capped
// before the agent sees it; one audit event records it.
func (s *Service) CallTool(ctx context.Context, call govern.Call, progress func(float64, float64, string)) *mcp.CallToolResult {
	b := s.bind()
	call.Surface = govern.SurfaceMCP
	call.ActionType = upstream.ActionType(call.Tool)
	var tool upstream.Tool
	var ok bool
	if s.ups != nil {
		tool, ok = s.ups.catalog.Lookup(call.Tool)
	}
	if !ok && s.ups == nil {
		return b.upstreamDenied(call, nil, govern.Decision{Outcome: govern.Deny, Reason: govern.ReasonUpstreamUnavailable, Stage: "upstream",
			Message: fmt.Sprintf("%s is not served on this gateway; nothing was sent", call.Tool)})
	}
	if !ok {
		if w, held := s.ups.withheld(call.Tool); held {
			call.Server, call.UpstreamTool = w.Tool.Server, w.Tool.Name
			return b.upstreamDenied(call, nil, govern.Decision{Outcome: govern.Deny, Reason: w.Judgement.Reason, Stage: "tool_definition", Message: w.Judgement.Message + "; nothing was sent"})
		}
		return b.upstreamDenied(call, nil, govern.Decision{Outcome: govern.Deny, Reason: govern.ReasonUpstreamUnavailable, Stage: "upstream",
			Message: fmt.Sprintf("%s is not served now (its upstream is down); nothing was sent", call.Tool)})
	}
	call.Server, call.UpstreamTool = tool.Server, tool.Name
	if len(call.Arguments) == 0 {
		call.Arguments = []byte("{}")
	}
	st, d := b.pipe.Decide(ctx, call, b.host())
	if d.Outcome == govern.Deny {
		return b.upstreamDenied(call, st, d)
	}
	return b.forward(ctx, st, d, tool, progress)
}

// upstreamDenied audits and answers a refused upstream call.
func (s bound) upstreamDenied(call govern.Call, st *pipeline.State, d govern.Decision) *mcp.CallToolResult {
	rec := audit.Record{Call: call, Decision: d}
	if red, err := s.known.redactor(); err == nil {
		rec.Call = s.recordedCall(call, red)
	}
	if st != nil {
		rec.WouldDeny = len(st.WouldDeny) > 0
	}
	id, err := s.record(rec)
	text := fmt.Sprintf("denied (%s): %s", d.Reason, d.Message)
	if err != nil {
		text += unrecordedNote("refusal", err)
	}
	return toolRefusal(s.scrub.Scrub(text), d.Reason, id)
}

// RejectTool audits and answers an upstream tool call refused before the
// pipeline: malformed arguments (invalid_argument, stage arguments), or
// arriving while the gateway stops (shutting_down, stage server).
func (s *Service) RejectTool(_ context.Context, call govern.Call, reason govern.Reason, msg string) *mcp.CallToolResult {
	b := s.bind()
	call.Surface, call.ActionType = govern.SurfaceMCP, upstream.ActionType(call.Tool)
	if t, ok := s.lookupTool(call.Tool); ok {
		call.Server, call.UpstreamTool = t.Server, t.Name
	}
	stage := "arguments"
	if reason == govern.ReasonShuttingDown {
		stage = "server"
	}
	return b.upstreamDenied(call, nil, govern.Decision{Outcome: govern.Deny, Reason: reason, Stage: stage, Message: msg})
}

func (s *Service) lookupTool(served string) (upstream.Tool, bool) {
	if s.ups == nil {
		return upstream.Tool{}, false
	}
	return s.ups.catalog.Lookup(served)
}

// UpstreamStructured is the structuredContent of a refusal by the gateway
// (an upstream's own result keeps its own).
type UpstreamStructured struct {
	Reason  string `json:"reason"`
	EventID string `json:"event_id,omitempty"`
}

func toolRefusal(text string, reason govern.Reason, id string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}},
		StructuredContent: UpstreamStructured{Reason: string(reason), EventID: id}}
}

// resultRedactor is the chain an upstream's answer goes through: every
// credential value the gateway knows (in all its forms), then the
// profile's DLP detectors. counts reports what each replaced.
func (s bound) resultRedactor(prof policy.Profile) (upstream.Redact, func() map[string]int, error) {
	red, err := s.known.redactor()
	if err != nil {
		return nil, nil, err
	}
	bind := s.pipe.Bindings(prof.Name)
	var mu sync.Mutex
	tally := map[string]int{}
	f := func(v string) (string, int) {
		b, byCred := red.Redactor.Redact([]byte(v))
		out, hits := bind.Redact(string(b))
		mu.Lock()
		n := len(hits)
		for id, c := range byCred {
			tally["credential:"+id] += c
			n += c
		}
		for _, h := range hits {
			tally[h.Detector]++
		}
		mu.Unlock()
		return out, n
	}
	// A copy: a progress notification can still be redacted while the
	// call's end counts them.
	return f, func() map[string]int { mu.Lock(); defer mu.Unlock(); return maps.Clone(tally) }, nil
}

// countRedactions adds an answer's redactions to the metrics.
func (s bound) countRedactions(counts map[string]int) {
	for k, n := range counts {
		if strings.HasPrefix(k, "credential:") {
			s.metrics.Redactions(metrics.KindCredential, n)
			continue
		}
		s.metrics.Redactions(metrics.DLPKind(k), n)
	}
}

// substitute replaces every ${credential:<id>} in the string values of a
// JSON arguments object with its value (the model wrote the reference,
// the upstream gets the value).
func substitute(args []byte, values map[string]string) ([]byte, error) {
	v, err := pipeline.DecodeArguments(args)
	if err != nil {
		return nil, fmt.Errorf("the arguments are not JSON: %w", err)
	}
	var missing error
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			if len(config.Template(x).IDs()) == 0 {
				return x
			}
			out, err := config.Template(x).Expand(values)
			if err != nil && missing == nil {
				missing = err
			}
			return out
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
		case map[string]any:
			for k, e := range x {
				x[k] = walk(e)
			}
		}
		return v
	}
	v = walk(v)
	if missing != nil {
		return nil, missing
	}
	return json.Marshal(v)
}

// fetchIDs fetches the values of credential ids, and makes them known
// (redacted from everything from now on).
func (s bound) fetchIDs(ctx context.Context, ids []string) ([]dlp.Secret, error) {
	var out []dlp.Secret
	for _, id := range ids {
		src, ok := s.cfg.Credentials[id]
		if !ok {
			return nil, fmt.Errorf("credential %s is not configured", id)
		}
		v, err := src.Fetch(ctx)
		if err != nil {
			return nil, fmt.Errorf("credential %s: %w", id, err)
		}
		out = append(out, dlp.Secret{ID: id, Value: v})
	}
	s.known.add(out...)
	return out, nil
}

// httpDialer connects to a Streamable HTTP upstream, with its headers
// (credentials expanded) on every request.
func (s *Service) httpDialer(u config.Upstream) upstream.Dialer {
	return func(ctx context.Context) (mcp.Transport, error) {
		b := s.bind()
		secrets, err := b.fetchIDs(ctx, u.CredentialIDs())
		if err != nil {
			return nil, err
		}
		values := secretMap(secrets)
		headers := map[string]string{}
		for k, t := range u.Headers {
			if headers[k], err = t.Expand(values); err != nil {
				return nil, err
			}
		}
		client, err := upstream.HTTPClient(u.TLS.CAFile, u.TLS.ServerName, headers)
		if err != nil {
			return nil, err
		}
		return &mcp.StreamableClientTransport{Endpoint: u.URL, HTTPClient: client, MaxRetries: -1}, nil
	}
}

// stdioDialer launches a stdio upstream through the executor: the same
// sandbox as a command (read-only host, the deny set, only its writable
// roots, only its egress allowlist through the proxy, limits, nothing
// outliving it), its stdio the session's transport.
func (s *Service) stdioDialer(u config.Upstream) upstream.Dialer {
	return func(ctx context.Context) (mcp.Transport, error) {
		b := s.bind()
		srv, ok := b.exec.(Server)
		if !ok {
			return nil, errors.New("this gateway's executor cannot run servers")
		}
		mode := govern.SandboxNone
		if u.Sandbox != config.UpstreamUnsandboxed {
			if !b.backend.available {
				return nil, fmt.Errorf("sandbox_unavailable: no sandbox backend is available (%s) and upstream %s runs sandboxed (set sandbox: none to run it without isolation)", b.backend.reason, u.Name)
			}
			mode = govern.SandboxBubblewrap
		}
		prog := u.Command[0]
		if !filepath.IsAbs(prog) {
			p, err := exec.LookPath(prog)
			if err != nil {
				return nil, fmt.Errorf("upstream %s: %w", u.Name, err)
			}
			if prog, err = filepath.Abs(p); err != nil {
				return nil, err
			}
		}
		argv := append([]string{prog}, u.Command[1:]...)
		roots := slices.Clone(u.WritableRoots)
		cwd := u.Cwd
		if len(roots) == 0 {
			// A server with no writable root still needs a directory of
			// its own to start in: an empty one, private to this start.
			dir, err := os.MkdirTemp("", "mitrity-upstream-"+u.Name+"-")
			if err != nil {
				return nil, err
			}
			if b.runAs != nil {
				os.Chown(dir, int(b.runAs.UID), int(b.runAs.GID))
			}
			context.AfterFunc(ctx, func() { os.RemoveAll(dir) })
			roots = []string{dir}
		}
		if cwd == "" {
			cwd = roots[0]
		}
		env := map[string]string{"PATH": pipeline.DefaultPath, "HOME": b.home, "LANG": "C.UTF-8"}
		credEnv := map[string]string{}
		for k, t := range u.Env {
			if id := config.CredentialRef(t).ID(); id != "" {
				credEnv[k] = id
				continue
			}
			env[k] = string(t)
		}
		secrets, err := b.fetchIDs(ctx, u.CredentialIDs())
		if err != nil {
			return nil, err
		}
		p, err := plan.New(plan.Spec{Argv: argv, Cwd: cwd, WorkspaceRoots: roots, Timeout: serveForever, Env: env,
			CredentialEnv: credEnv, Egress: u.Egress, SandboxRequired: mode != govern.SandboxNone,
			OutputMaxBytes: 1 << 62, RunAs: b.runAs})
		if err != nil {
			return nil, err
		}
		if err := b.launched(ctx, u.Name, mode); err != nil {
			// No audit, no run: a server whose start cannot be recorded
			// does not start.
			return nil, err
		}
		// OS pipes, handed to the server as its stdin and stdout: no copy
		// in this process between the SDK and the server. Once the server
		// has ended, closing this process's ends gives the SDK EOF on
		// reads and EPIPE on writes.
		inR, inW, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		outR, outW, err := os.Pipe()
		if err != nil {
			inR.Close()
			inW.Close()
			return nil, err
		}
		logw := &lineLog{s: s, server: u.Name}
		go func() {
			res := srv.Serve(ctx, p, mode, secretMap(secrets), inR, outW, logw)
			logw.flush()
			outW.Close()
			inR.Close()
			// A process the server left behind (possible without the
			// kernel sandbox: one that called setsid escapes the kill)
			// may still hold the pipes, and then the SDK would never
			// read EOF: once the last answers have had a second to be
			// read, this process's own ends close too.
			time.AfterFunc(time.Second, func() {
				outR.Close()
				inW.Close()
			})
			ev := s.log.Info()
			if ctx.Err() == nil {
				ev = s.log.Warn()
			}
			ev.Str("upstream", u.Name).Str("status", res.Status.String()).Str("reason", string(res.Reason)).
				Str("sandbox_mode", res.SandboxMode.String()).Str("detail", s.ScrubText(res.Message)).
				Strs("last_stderr", logw.last()).Msg("upstream server ended")
		}()
		return &mcp.IOTransport{Reader: outR, Writer: inW}, nil
	}
}

// notifyUnsandboxed stamps and notifies an upstream that runs without the
// kernel sandbox (sandbox: none), like a degraded shell.
// launched records the start of a stdio upstream (an upstream_call event,
// method launch, with the isolation it runs under) and, for one that runs
// without the kernel sandbox (sandbox: none), notifies it like a degraded
// shell.
func (s bound) launched(ctx context.Context, server string, mode govern.SandboxMode) error {
	call := govern.Call{Agent: "upstream:" + server, Surface: govern.SurfaceMCP, Tool: "launch", ActionType: govern.ActionMCPPrefix + server, Server: server}
	ev, err := s.recordUpstream(audit.Record{Call: call, Decision: govern.Decision{Outcome: govern.Allow}},
		&audit.UpstreamCall{Server: server, Method: "launch", Status: govern.StatusCompleted, ServerSandbox: mode.String()}, nil, nil)
	if err != nil {
		return fmt.Errorf("upstream %s was not started: its start could not be recorded in the audit log: %w", server, err)
	}
	if mode != govern.SandboxNone {
		return nil
	}
	s.log.Warn().Str("upstream", server).Str("sandbox_mode", govern.SandboxNone.String()).Msg("upstream server runs without the kernel sandbox (sandbox: none)")
	if _, err := s.notifier.SandboxDegraded(ctx, notify.Degradation{Agent: "upstream:" + server, EventID: ev.ID, Mode: govern.SandboxNone,
		Requested: string(config.UpstreamUnsandboxed), Seccomp: string(s.cfg.Exec.Sandbox.Seccomp),
		HostReason: "upstreams." + server + ".sandbox: none", Status: govern.StatusCompleted}); err != nil {
		s.log.Warn().Err(err).Msg("sandbox_degraded notification")
	}
	return nil
}

// ScrubText takes every known credential value out of a text the gateway
// logs.
func (s *Service) ScrubText(v string) string { return s.known.scrub(v) }

// lineLog logs an upstream server's stderr line by line (credential
// values scrubbed, long lines cut).
type lineLog struct {
	s      *Service
	server string
	mu     sync.Mutex
	buf    []byte
	// tail are the last lines, for the log line that says it ended.
	tail []string
}

// tailLines is how many stderr lines the end of a server repeats.
const tailLines = 5

func (l *lineLog) last() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.tail)
}

const maxLogLine = 4096

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := strings.IndexByte(string(l.buf), '\n')
		if i < 0 {
			if len(l.buf) > maxLogLine {
				l.emit(l.buf[:maxLogLine])
				l.buf = l.buf[:0]
			}
			return len(p), nil
		}
		l.emit(l.buf[:i])
		l.buf = l.buf[i+1:]
	}
}

func (l *lineLog) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.emit(l.buf)
		l.buf = nil
	}
}

func (l *lineLog) emit(line []byte) {
	if len(line) > maxLogLine {
		line = line[:maxLogLine]
	}
	text := l.s.ScrubText(string(line))
	l.tail = append(l.tail, text)
	if len(l.tail) > tailLines {
		l.tail = l.tail[1:]
	}
	l.s.log.Debug().Str("upstream", l.server).Str("stderr", text).Msg("upstream server")
}

// progressToken is a fresh progress token for one forwarded call: 128
// random bits, so that no server can guess the token of a call it was not
// sent.
func progressToken() string { return "mitrity-" + rand.Text() }

// progressWatch is where the progress notifications of one forwarded call
// go, and the one upstream session they are accepted from.
type progressWatch struct {
	server string
	sess   *mcp.ClientSession
	report func(progress, total float64, msg string)
}

// watchProgress routes the progress notifications that sess (a session of
// upstream server) sends for tok to report until the returned stop is
// called.
func (u *upstreams) watchProgress(tok, server string, sess *mcp.ClientSession, report func(progress, total float64, msg string)) (stop func()) {
	u.mu.Lock()
	if u.progress == nil {
		u.progress = map[string]progressWatch{}
	}
	u.progress[tok] = progressWatch{server: server, sess: sess, report: report}
	u.mu.Unlock()
	return func() {
		u.mu.Lock()
		delete(u.progress, tok)
		u.mu.Unlock()
	}
}

// onProgress passes an upstream's progress notification on to the call it
// belongs to: the call in flight that the gateway gave this token, and
// only when the notification came from the upstream session that call was
// forwarded on. Anything else (a token no call in flight holds, or one
// another server's call holds, or a call on an earlier session) is
// dropped, logged and counted.
func (s *Service) onProgress(server string, sess *mcp.ClientSession, tok any, progress, total float64, msg string) {
	u := s.ups
	if u == nil {
		return
	}
	t, _ := tok.(string)
	u.mu.Lock()
	w, ok := u.progress[t]
	u.mu.Unlock()
	if !ok || w.server != server || w.sess != sess || sess == nil {
		s.metrics.UpstreamProgressDropped()
		why := "no call in flight holds its token"
		if ok {
			why = "its token belongs to a call forwarded on another upstream session"
		}
		u.dropLog.Warn().Str("upstream", server).Str("why", why).
			Msg("an upstream's progress notification was dropped: it belongs to no call of this session (counted in " + metrics.NameUpstreamProgressDropped + ")")
		return
	}
	w.report(progress, total, msg) // redacted and scanned by the call's report (progressTo)
}
