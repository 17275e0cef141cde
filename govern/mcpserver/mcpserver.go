// Package mcpserver serves the governed shell as the MCP tool
// shell__execute, over stdio or Streamable HTTP, on the official MCP Go
// SDK. Every tools/call goes through the same service.Call as
// `mitrity-gateway exec`: one code path.
package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/metrics"
	"github.com/mitrity/mitrity/govern/service"
	"github.com/mitrity/mitrity/govern/upstream"
)

// ToolName is the served name of the governed shell.
const ToolName = govern.ToolShellExecute

// MaxCommandBytes bounds the command argument (64 KiB).
const MaxCommandBytes = 64 << 10

// DefaultShutdownGrace is how long running calls may go on after a
// shutdown begins before they are cancelled (and killed by the executor).
const DefaultShutdownGrace = 10 * time.Second

// Caller runs one call; *service.Service is the one implementation.
type Caller interface {
	Call(ctx context.Context, call govern.Call) service.Result
	// Reject audits a call refused before the pipeline: malformed, or
	// arriving while the gateway stops.
	Reject(ctx context.Context, call govern.Call, reason govern.Reason, msg string) service.Result
}

// permitter is the part of the service that answers tool permissions
// (*service.Service): what tools/list may show an agent.
type permitter interface {
	Permits(agent, actionType string) bool
}

// Options configure a Server.
type Options struct {
	// Service runs the calls.
	Service Caller
	// Enabled is exec.enabled: without it tools/list is empty.
	Enabled bool
	// Agent is the agent id of a call whose transport carries no
	// authenticated identity (stdio).
	Agent string
	// Version is the gateway's version, reported at initialize.
	Version string
	Logger  zerolog.Logger
	// ProgressInterval is how often a running call whose request carries a
	// progress token is reported (notifications/progress); zero means
	// DefaultProgressInterval.
	ProgressInterval time.Duration
	// HTTP bounds the Streamable HTTP server; zero fields take the
	// defaults.
	HTTP HTTPLimits
	// Metrics, when set, counts what the HTTP bounds refuse and reports
	// the open connections and sessions. Nil records nothing.
	Metrics *metrics.Metrics
	// Upstreams, when set, serves the tools of upstream MCP servers
	// beside shell__execute (call SyncUpstreamTools when they change).
	Upstreams Upstreams
}

// DefaultProgressInterval is how often a running call reports progress.
const DefaultProgressInterval = 5 * time.Second

// Server is the MCP server. Build it with New.
type Server struct {
	svc      Caller
	agent    string
	log      zerolog.Logger
	mcp      *mcp.Server
	progress time.Duration

	mu       sync.Mutex
	draining bool
	running  sync.WaitGroup
	// stop cancels every running call (the shutdown deadline).
	stop     context.Context
	stopCall context.CancelFunc

	limits  HTTPLimits
	metrics *metrics.Metrics
	// ups serves the upstream tools; served maps each served name to its
	// definition's hash, under upMu.
	ups       Upstreams
	permits   func(agent, actionType string) bool // nil: the Service cannot tell (tests' fakes)
	upMu      sync.Mutex
	served    map[string]string
	withheld  map[string]bool              // registered, never listed
	resources map[string]upstream.Resource // by URI or URI template
	prompts   map[string]upstream.Prompt   // by served name
	sessMu    sync.Mutex
	opening   int // sessions being opened (limitSessions)
}

// New returns a Server.
func New(o Options) *Server {
	s := &Server{svc: o.Service, agent: o.Agent, log: o.Logger, progress: o.ProgressInterval,
		limits: o.HTTP.withDefaults(), metrics: o.Metrics, ups: o.Upstreams,
		served: map[string]string{}, resources: map[string]upstream.Resource{}, prompts: map[string]upstream.Prompt{}}
	if s.progress <= 0 {
		s.progress = DefaultProgressInterval
	}
	s.stop, s.stopCall = context.WithCancel(context.Background())
	version := o.Version
	if version == "" {
		version = "dev"
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "mitrity-gateway", Title: "MITRITY governed shell", Version: version},
		&mcp.ServerOptions{
			// Tools is always advertised, so that a gateway with the shell
			// disabled answers tools/list with an empty list.
			// With upstreams, what is served changes: clients are told
			// (list_changed), and resources and prompts are offered too.
			Capabilities: capabilities(o.Upstreams != nil),
			Instructions: "shell__execute runs one shell command on this host through the MITRITY gateway: " +
				"the policy decides, the command runs in a sandbox, output comes back redacted.",
		})
	if o.Enabled {
		s.mcp.AddTool(Tool(), s.handle)
	}
	// tools/list shows an agent only what its tool permissions let it
	// call, shell__execute too, with or without upstreams.
	if p, ok := o.Service.(permitter); ok {
		s.permits = p.Permits
	} else if s.ups != nil {
		s.permits = s.ups.Permits
	}
	if s.permits != nil {
		s.mcp.AddReceivingMiddleware(s.filterTools)
	}
	if s.ups != nil {
		s.SyncUpstreamTools()
	}
	return s
}

// MCP is the SDK server (to run over any transport).
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Drain stops accepting calls (a new one gets a tool error), waits for the
// running ones until ctx is done, then cancels those still running — the
// executor kills them and each is audited as killed — and waits for them
// to return.
func (s *Server) Drain(ctx context.Context) {
	s.mu.Lock()
	s.draining = true
	s.mu.Unlock()
	done := make(chan struct{})
	go func() {
		s.running.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		s.log.Warn().Msg("shutdown deadline reached: cancelling running calls")
		s.stopCall()
		<-done
	}
}

// begin registers a call; false when the server is draining.
func (s *Server) begin() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining {
		return false
	}
	s.running.Add(1)
	return true
}

// Tool is the shell__execute tool as tools/list shows it.
func Tool() *mcp.Tool {
	yes := true
	return &mcp.Tool{
		Name:  ToolName,
		Title: "Governed shell",
		Description: "Run one shell command on this host through the MITRITY gateway. The gateway's policy decides " +
			"whether it may run; it then runs in a sandbox with a constructed environment, a timeout and output caps. " +
			"The result text is the redacted, truncated stdout, then stderr after a '--- stderr ---' line, then a " +
			"'--- exit code N ---' line (with 'timed out' or 'output truncated' when so); the structured result " +
			"carries the same: {stdout, stderr, exit_code, duration_ms, timeout_seconds, timed_out, truncated, " +
			"sandbox_mode, redaction_count}. A non-zero exit code is a result, not an error; isError is true only " +
			"when the call was denied or the command could not start, and then reason names why and message says " +
			"what to do. Credentials are referenced as ${credential:<id>} and reach commands through environment " +
			"variables, never argv.",
		InputSchema:  json.RawMessage(inputSchema),
		OutputSchema: json.RawMessage(outputSchema),
		Annotations: &mcp.ToolAnnotations{
			Title:           "Governed shell",
			DestructiveHint: &yes,
			OpenWorldHint:   &yes,
			ReadOnlyHint:    false,
			IdempotentHint:  false,
		},
	}
}

const inputSchema = `{
  "type": "object",
  "properties": {
    "command": {"type": "string", "maxLength": 65536, "description": "The shell command line (bash -c). At most 64 KiB, no NUL bytes."},
    "cwd": {"type": "string", "description": "Working directory: absolute, or relative to exec.default_cwd; must resolve inside a workspace root."},
    "timeout_seconds": {"type": "integer", "minimum": 1, "description": "Timeout in seconds; clamped down to the effective ceiling."},
    "stdin": {"type": "string", "description": "Bytes for the process's stdin, at most exec.limits.stdin_max_bytes."},
    "env": {"type": "object", "maxProperties": 32, "additionalProperties": {"type": "string"},
            "description": "Variables listed in exec.env.agent_settable; a value may be exactly one ${credential:<id>} reference."}
  },
  "required": ["command"],
  "additionalProperties": false
}`

// outputSchema describes service.Structured, what every shell__execute
// result carries as structuredContent (a denial too: clients may check it
// against this schema whatever isError says).
const outputSchema = `{
  "type": "object",
  "properties": {
    "stdout": {"type": "string", "description": "The command's standard output, redacted and truncated (empty when nothing ran)."},
    "stderr": {"type": "string", "description": "The command's standard error, redacted and truncated, with the gateway's notes (timeout, truncation, what the sandbox refused)."},
    "exit_code": {"type": ["integer", "null"], "description": "The command's exit code; null when it did not run or was killed by a signal."},
    "duration_ms": {"type": "integer"},
    "timeout_seconds": {"type": "integer", "description": "The timeout the run had."},
    "timed_out": {"type": "boolean"},
    "truncated": {"type": "boolean", "description": "Output beyond the cap was discarded."},
    "sandbox_mode": {"type": "string", "enum": ["bubblewrap", "bubblewrap_no_seccomp", "seatbelt", "none", "unavailable_denied"]},
    "redaction_count": {"type": "integer", "description": "How many secrets were replaced by [REDACTED:...] markers."},
    "status": {"type": "string", "description": "Present when the run did not complete: timed_out, killed, failed_to_start, never_ran."},
    "reason": {"type": "string", "description": "Why the call was denied or did not complete (a closed vocabulary)."},
    "message": {"type": "string", "description": "What happened and what to do about it."},
    "event_id": {"type": "string", "description": "The audit event of this call."},
    "protected_created": {"type": "array", "items": {"type": "string"}}
  },
  "required": ["stdout", "stderr", "exit_code", "timed_out", "truncated"]
}`

// Args are the tool's arguments.
type Args struct {
	Command        *string           `json:"command"`
	Cwd            string            `json:"cwd"`
	TimeoutSeconds json.RawMessage   `json:"timeout_seconds"`
	Stdin          string            `json:"stdin"`
	Env            map[string]string `json:"env"`
}

// ParseArgs decodes and checks raw tool arguments into a call for agent;
// the error is a sentence a model can act on.
func ParseArgs(raw json.RawMessage, agent string) (govern.Call, error) {
	call := govern.Call{Agent: agent, Surface: "mcp", Env: map[string]string{}}
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return call, errors.New("missing arguments: shell__execute needs at least {\"command\": \"...\"}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var a Args
	if err := dec.Decode(&a); err != nil {
		return call, fmt.Errorf("malformed arguments: %s; expected {command: string, cwd?: string, timeout_seconds?: integer >= 1, stdin?: string, env?: {NAME: string}}", describe(err))
	}
	if dec.More() {
		return call, errors.New("malformed arguments: trailing data after the arguments object")
	}
	switch {
	case a.Command == nil:
		return call, errors.New("missing argument: command (the shell command line to run)")
	case strings.TrimSpace(*a.Command) == "":
		return call, errors.New("invalid argument: command is empty")
	case len(*a.Command) > MaxCommandBytes:
		return call, fmt.Errorf("invalid argument: command is %d bytes; at most %d", len(*a.Command), MaxCommandBytes)
	case strings.IndexByte(*a.Command, 0) >= 0:
		return call, errors.New("invalid argument: command contains a NUL byte")
	}
	call.Command, call.Cwd = *a.Command, a.Cwd
	if t := bytes.TrimSpace(a.TimeoutSeconds); len(t) > 0 && string(t) != "null" {
		var n int64
		if err := json.Unmarshal(t, &n); err != nil || n < 1 {
			return call, fmt.Errorf("invalid argument: timeout_seconds must be an integer of at least 1, not %s", clip(string(t)))
		}
		if n > 1<<31-1 {
			n = 1<<31 - 1 // clamped to the ceiling by the service anyway
		}
		call.TimeoutSeconds = int(n)
	}
	if a.Stdin != "" {
		call.Stdin = []byte(a.Stdin)
	}
	for k, v := range a.Env {
		call.Env[k] = v
	}
	return call, nil
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// describe makes a JSON decoding error readable.
func describe(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field != "" {
			return fmt.Sprintf("%s must be %s, not a JSON %s", te.Field, expected(te.Field), te.Value)
		}
		return fmt.Sprintf("the arguments must be a JSON object, not %s", te.Value)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

func expected(field string) string {
	switch {
	case field == "timeout_seconds":
		return "an integer"
	case field == "env":
		return "an object of string values"
	case strings.HasPrefix(field, "env."):
		return "a string"
	}
	return "a string"
}

// AgentOf is the agent a request is made as: the bearer token's agent over
// HTTP, else the server's configured agent.
func (s *Server) AgentOf(req *mcp.CallToolRequest) string {
	if req != nil && req.Extra != nil && req.Extra.TokenInfo != nil && req.Extra.TokenInfo.UserID != "" {
		return req.Extra.TokenInfo.UserID
	}
	return s.agent
}

func (s *Server) handle(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	agent := s.AgentOf(req)
	if agent == "" {
		return toolError("", "no agent identity on this connection; nothing ran"), nil
	}
	var raw json.RawMessage
	if req != nil && req.Params != nil {
		raw = req.Params.Arguments
	}
	call, err := ParseArgs(raw, agent)
	if err != nil {
		// What could not be parsed is not recorded as the command.
		call = govern.Call{Agent: agent, Surface: "mcp"}
	}
	if !s.begin() {
		// Refused, and audited like every call: the agent learns why and
		// that it may retry, the operator sees what was turned away.
		return Result(s.svc.Reject(ctx, call, govern.ReasonShuttingDown,
			"the gateway is shutting down and takes no new call; nothing ran. Retry once it is back.")), nil
	}
	defer s.running.Done()
	if err != nil {
		// Refused, and audited like every call: a malformed request is a
		// signal an operator may want to see.
		return Result(s.svc.Reject(ctx, call, govern.ReasonInvalidArgument, err.Error())), nil
	}
	// The request's ctx is cancelled by notifications/cancelled, and over
	// stdio by a client that goes away; stop is cancelled at the shutdown
	// deadline. Over HTTP the SDK detaches a call from the POST that
	// carried it, so a client whose connection goes away cancels the call
	// through that request's context: the executor kills the run, it is
	// audited killed, and its max_concurrent slot is free at once.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.stop, cancel)()
	if hctx := httpRequestContext(req); hctx != nil {
		defer context.AfterFunc(hctx, cancel)()
	}
	if tok := req.Params.GetProgressToken(); tok != nil && req.Session != nil {
		pctx, pcancel := context.WithCancel(ctx)
		pdone := make(chan struct{})
		go func() {
			defer close(pdone)
			s.reportProgress(pctx, req.Session, tok)
		}()
		defer func() {
			pcancel()
			<-pdone
		}()
	}
	return Result(s.svc.Call(ctx, call)), nil
}

// reportProgress sends notifications/progress (elapsed seconds) every
// interval until ctx is done, that is until the call returns.
func (s *Server) reportProgress(ctx context.Context, ss *mcp.ServerSession, tok any) {
	start := time.Now()
	t := time.NewTicker(s.progress)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			el := time.Since(start).Round(time.Second)
			err := ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok,
				Progress: time.Since(start).Seconds(), Message: fmt.Sprintf("running for %s", el)})
			if err != nil {
				return
			}
		}
	}
}

// Result is the CallToolResult of a service result: the same shape
// `mitrity-gateway exec --json` prints.
func Result(r service.Result) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: r.Text}},
		IsError:           r.IsError,
		StructuredContent: r.Structured,
	}
}

// toolError is a call refused before it reached the service.
func toolError(reason govern.Reason, msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: msg}},
		IsError:           true,
		StructuredContent: service.Structured{Reason: string(reason), Message: msg},
	}
}

// capabilities are what the server advertises: tools always; with
// upstreams, resources and prompts too, each list_changed.
func capabilities(upstreams bool) *mcp.ServerCapabilities {
	c := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: upstreams}}
	if upstreams {
		c.Resources = &mcp.ResourceCapabilities{ListChanged: true}
		c.Prompts = &mcp.PromptCapabilities{ListChanged: true}
	}
	return c
}
