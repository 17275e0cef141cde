package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/upstream"
)

// Upstreams is what serves the proxied tools of upstream MCP servers;
// *service.Service is the one implementation.
type Upstreams interface {
	// CallTool runs one call of a served upstream tool; progress, when
	// set, receives the upstream's progress reports.
	CallTool(ctx context.Context, call govern.Call, progress func(progress, total float64, msg string)) *mcp.CallToolResult
	// UpstreamTools are the tools served now.
	UpstreamTools() []upstream.Tool
	// Permits reports whether an agent may see a tool of actionType.
	Permits(agent, actionType string) bool
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
	for _, t := range s.ups.UpstreamTools() {
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
}

// addUpstreamTool serves one tool. The SDK panics on a definition it
// cannot serve; the catalog refuses those first, and this is the fence
// for anything it missed.
func (s *Server) addUpstreamTool(t upstream.Tool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the SDK refused the definition: %v", r)
		}
	}()
	served := t.Served
	s.mcp.AddTool(t.Def, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return s.handleUpstream(ctx, req, served)
	})
	return nil
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
		return toolError(govern.ReasonInvalidArgument, fmt.Sprintf("invalid arguments: %d bytes; at most %d; nothing was sent", len(raw), MaxArgumentsBytes)), nil
	case json.Unmarshal(raw, &obj) != nil:
		return toolError(govern.ReasonInvalidArgument, "invalid arguments: not a JSON object; nothing was sent"), nil
	}
	if !s.begin() {
		return toolError(govern.ReasonShuttingDown, "the gateway is shutting down and takes no new call; nothing was sent. Retry once it is back."), nil
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
	return s.ups.CallTool(ctx, call, progress), nil
}

// filterTools is a middleware on tools/list: an agent sees only the
// tools its tool_permissions let it call, so that the list and a call
// never disagree.
func (s *Server) filterTools(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method != "tools/list" || err != nil || s.ups == nil {
			return res, err
		}
		lr, ok := res.(*mcp.ListToolsResult)
		if !ok {
			return res, err
		}
		agent := s.agent
		if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil && ex.TokenInfo.UserID != "" {
			agent = ex.TokenInfo.UserID
		}
		kept := lr.Tools[:0:0]
		for _, t := range lr.Tools {
			action := govern.ActionShellExecute
			if t.Name != ToolName {
				action = upstream.ActionType(t.Name)
			}
			if agent != "" && s.ups.Permits(agent, action) {
				kept = append(kept, t)
			}
		}
		out := *lr
		out.Tools = kept
		return &out, nil
	}
}

