package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/service"
	"github.com/mitrity/mitrity/govern/upstream"
)

// Upstreams is what serves the proxied tools of upstream MCP servers;
// *service.Service is the one implementation.
type Upstreams interface {
	// CallTool runs one call of a served upstream tool; progress, when
	// set, receives the upstream's progress reports.
	CallTool(ctx context.Context, call govern.Call, progress func(progress, total float64, msg string)) *mcp.CallToolResult
	// UpstreamTools are the tools served now; UpstreamWithheld those
	// listed and withheld (registered so that a call of one is refused
	// with its reason and audited, but never in tools/list).
	UpstreamTools() []upstream.Tool
	UpstreamWithheld() []upstream.Tool
	// RejectTool audits and answers a call refused before the pipeline.
	RejectTool(ctx context.Context, call govern.Call, reason govern.Reason, msg string) *mcp.CallToolResult
	// Permits reports whether an agent may see a tool of actionType.
	Permits(agent, actionType string) bool
	// UpstreamResources and UpstreamPrompts are the resources (and
	// templates) and prompts served now; ReadResource and GetPrompt
	// forward one request each.
	UpstreamResources() []upstream.Resource
	UpstreamPrompts() []upstream.Prompt
	ReadResource(ctx context.Context, agent, server, uri string) (*mcp.ReadResourceResult, error)
	GetPrompt(ctx context.Context, agent, served string, arguments map[string]string) (*mcp.GetPromptResult, error)
}

// MaxArgumentsBytes bounds an upstream tool call's arguments (1 MiB).
const MaxArgumentsBytes = 1 << 20

// SyncUpstreamTools makes the served tools the upstreams' current ones:
// new and changed definitions are added, withdrawn ones removed (the SDK
// tells every client through notifications/tools/list_changed).
func (s *Server) SyncUpstreamTools() {
	if s.ups == nil {
		return
	}
	s.upMu.Lock()
	defer s.upMu.Unlock()
	now := map[string]string{}
	withheld := map[string]bool{}
	for _, t := range s.ups.UpstreamWithheld() {
		withheld[t.Served] = true
	}
	s.withheld = withheld
	for _, t := range append(s.ups.UpstreamTools(), s.ups.UpstreamWithheld()...) {
		now[t.Served] = t.SHA256
		if s.served[t.Served] == t.SHA256 {
			continue
		}
		if err := s.addUpstreamTool(t); err != nil {
			s.log.Error().Err(err).Str("tool", t.Served).Msg("an upstream tool could not be served")
			delete(now, t.Served)
		}
	}
	var gone []string
	for name := range s.served {
		if _, ok := now[name]; !ok {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		slices.Sort(gone)
		s.mcp.RemoveTools(gone...)
	}
	s.served = now
	s.syncResources()
	s.syncPrompts()
}

// syncResources serves the upstreams' resources and templates now.
func (s *Server) syncResources() {
	now := map[string]upstream.Resource{}
	for _, r := range s.ups.UpstreamResources() {
		key := r.Key()
		now[key] = r
		if old, ok := s.resources[key]; ok && old.Server == r.Server && hashJSON(old) == hashJSON(r) {
			continue
		}
		server := r.Server
		handler := func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return s.readUpstream(ctx, req, server)
		}
		err := guard(func() {
			if r.Template != nil {
				s.mcp.AddResourceTemplate(r.Template, handler)
			} else {
				s.mcp.AddResource(r.Def, handler)
			}
		})
		if err != nil {
			s.log.Error().Err(err).Str("resource", key).Msg("an upstream resource could not be served")
			delete(now, key)
		}
	}
	var gone, goneT []string
	for key, r := range s.resources {
		if _, ok := now[key]; !ok {
			if r.Template != nil {
				goneT = append(goneT, key)
			} else {
				gone = append(gone, key)
			}
		}
	}
	if len(gone) > 0 {
		s.mcp.RemoveResources(gone...)
	}
	if len(goneT) > 0 {
		s.mcp.RemoveResourceTemplates(goneT...)
	}
	s.resources = now
}

// syncPrompts serves the upstreams' prompts now.
func (s *Server) syncPrompts() {
	now := map[string]upstream.Prompt{}
	for _, p := range s.ups.UpstreamPrompts() {
		now[p.Served] = p
		if old, ok := s.prompts[p.Served]; ok && hashJSON(old.Def) == hashJSON(p.Def) {
			continue
		}
		served := p.Served
		err := guard(func() {
			s.mcp.AddPrompt(p.Def, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				agent := agentOf(req.Extra, s.agent)
				var args map[string]string
				if req.Params != nil {
					args = req.Params.Arguments
				}
				res, err := s.ups.GetPrompt(ctx, agent, served, args)
				return res, refusal(err)
			})
		})
		if err != nil {
			s.log.Error().Err(err).Str("prompt", served).Msg("an upstream prompt could not be served")
			delete(now, served)
		}
	}
	var gone []string
	for name := range s.prompts {
		if _, ok := now[name]; !ok {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		s.mcp.RemovePrompts(gone...)
	}
	s.prompts = now
}

func (s *Server) readUpstream(ctx context.Context, req *mcp.ReadResourceRequest, server string) (*mcp.ReadResourceResult, error) {
	if req.Params == nil || req.Params.URI == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "resources/read needs a uri"}
	}
	res, err := s.ups.ReadResource(ctx, agentOf(req.Extra, s.agent), server, req.Params.URI)
	return res, refusal(err)
}

// CodeRefused is the JSON-RPC error code of a resources/read or
// prompts/get the gateway refused (the reason and sentence are the
// message) or could not forward (implementation-defined range).
const CodeRefused = -32001

// refusal gives an error without a JSON-RPC code CodeRefused (the SDK
// would send it as code 0).
func refusal(err error) error {
	var je *jsonrpc.Error
	if err == nil || errors.As(err, &je) {
		return err
	}
	return &jsonrpc.Error{Code: CodeRefused, Message: err.Error()}
}

// agentOf is the agent of a request: its bearer token's, else def.
func agentOf(ex *mcp.RequestExtra, def string) string {
	if ex != nil && ex.TokenInfo != nil && ex.TokenInfo.UserID != "" {
		return ex.TokenInfo.UserID
	}
	return def
}

// guard runs add, turning the SDK's panic on a definition it cannot serve
// into an error.
func guard(add func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the SDK refused the definition: %v", r)
		}
	}()
	add()
	return nil
}

func hashJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// addUpstreamTool serves one tool. The SDK panics on a definition it
// cannot serve; the catalog refuses those first, and this is the fence
// for anything it missed.
func (s *Server) addUpstreamTool(t upstream.Tool) error {
	served := t.Served
	return guard(func() {
		s.mcp.AddTool(t.Def, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return s.handleUpstream(ctx, req, served)
		})
	})
}

func (s *Server) handleUpstream(ctx context.Context, req *mcp.CallToolRequest, served string) (*mcp.CallToolResult, error) {
	agent := s.AgentOf(req)
	if agent == "" {
		return toolError("", "no agent identity on this connection; nothing was sent"), nil
	}
	var raw json.RawMessage
	if req != nil && req.Params != nil {
		raw = req.Params.Arguments
	}
	if t := strings.TrimSpace(string(raw)); t == "" || t == "null" {
		raw = json.RawMessage("{}")
	}
	call := govern.Call{Agent: agent, Surface: govern.SurfaceMCP, Tool: served, Arguments: raw}
	var obj map[string]json.RawMessage
	switch {
	case len(raw) > MaxArgumentsBytes:
		call.Arguments = nil // not recorded, not hashed whole
		return s.ups.RejectTool(ctx, call, govern.ReasonInvalidArgument, fmt.Sprintf("invalid arguments: %d bytes; at most %d; nothing was sent", len(raw), MaxArgumentsBytes)), nil
	case json.Unmarshal(raw, &obj) != nil:
		return s.ups.RejectTool(ctx, call, govern.ReasonInvalidArgument, "invalid arguments: not a JSON object; nothing was sent"), nil
	}
	if !s.begin() {
		return s.ups.RejectTool(ctx, call, govern.ReasonShuttingDown, "the gateway is shutting down and takes no new call; nothing was sent. Retry once it is back."), nil
	}
	defer s.running.Done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.stop, cancel)()
	if hctx := httpRequestContext(req); hctx != nil {
		defer context.AfterFunc(hctx, cancel)()
	}
	var progress func(float64, float64, string)
	if tok := req.Params.GetProgressToken(); tok != nil && req.Session != nil {
		progress = func(p, total float64, msg string) {
			req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: p, Total: total, Message: msg})
		}
	}
	if req.Session != nil {
		// A request the upstream sends during the call, when its entry
		// allows it, goes to this agent's client.
		ctx = service.WithPeer(ctx, req.Session)
	}
	return s.ups.CallTool(ctx, call, progress), nil
}

// filterTools is a middleware on tools/list: an agent sees only the
// tools its tool_permissions let it call, so that the list and a call
// never disagree.
func (s *Server) filterTools(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil {
			return res, err
		}
		agent := agentOf(req.GetExtra(), s.agent)
		if s.ups == nil {
			if lr, ok := res.(*mcp.ListToolsResult); ok {
				out := *lr
				out.Tools = slices.DeleteFunc(slices.Clone(lr.Tools), func(t *mcp.Tool) bool {
					return t.Name == ToolName && (agent == "" || !s.permits(agent, govern.ActionShellExecute))
				})
				return &out, nil
			}
			return res, err
		}
		switch r := res.(type) {
		case *mcp.ListResourcesResult:
			out := *r
			out.Resources = nil
			for _, x := range r.Resources {
				if owner, ok := s.resourceOwner(x.URI); ok && agent != "" && s.ups.Permits(agent, upstream.ResourceAction(owner, x.URI)) {
					out.Resources = append(out.Resources, x)
				}
			}
			return &out, nil
		case *mcp.ListResourceTemplatesResult:
			out := *r
			out.ResourceTemplates = nil
			for _, x := range r.ResourceTemplates {
				if owner, ok := s.resourceOwner(x.URITemplate); ok && agent != "" && s.ups.Permits(agent, upstream.ResourceAction(owner, x.URITemplate)) {
					out.ResourceTemplates = append(out.ResourceTemplates, x)
				}
			}
			return &out, nil
		case *mcp.ListPromptsResult:
			out := *r
			out.Prompts = nil
			for _, x := range r.Prompts {
				if p, ok := s.promptOf(x.Name); ok && agent != "" && s.ups.Permits(agent, upstream.PromptAction(p.Server, p.Name)) {
					out.Prompts = append(out.Prompts, x)
				}
			}
			return &out, nil
		}
		if method != "tools/list" {
			return res, err
		}
		lr, ok := res.(*mcp.ListToolsResult)
		if !ok {
			// A list the filter cannot read is not shown unfiltered.
			return nil, fmt.Errorf("tools/list: unexpected result %T", res)
		}
		kept := lr.Tools[:0:0]
		for _, t := range lr.Tools {
			action := govern.ActionShellExecute
			if t.Name != ToolName {
				action = upstream.ActionType(t.Name)
			}
			if agent != "" && !s.isWithheld(t.Name) && s.permits(agent, action) {
				kept = append(kept, t)
			}
		}
		out := *lr
		out.Tools = kept
		return &out, nil
	}
}

// resourceOwner is the upstream that serves a resource key.
func (s *Server) resourceOwner(key string) (string, bool) {
	s.upMu.Lock()
	defer s.upMu.Unlock()
	r, ok := s.resources[key]
	return r.Server, ok
}

// promptOf is the served prompt of that name.
func (s *Server) promptOf(served string) (upstream.Prompt, bool) {
	s.upMu.Lock()
	defer s.upMu.Unlock()
	p, ok := s.prompts[served]
	return p, ok
}

// isWithheld reports whether a registered tool is withheld (never listed).
func (s *Server) isWithheld(name string) bool {
	s.upMu.Lock()
	defer s.upMu.Unlock()
	return s.withheld[name]
}
