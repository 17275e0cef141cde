package mcpserver_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/config"
	"github.com/mitrity/mitrity/govern/mcpserver"
	"github.com/mitrity/mitrity/govern/service"
)

const testPolicy = `default_agent:
  profile: dev
agents:
  ci:
    profile: dev
    credentials: [github_token]
  locked:
    profile: locked
profiles:
  dev:
    sandbox_required: false
    exec_timeout_seconds: 30
  locked:
    sandbox_required: false
    tool_permissions: [{pattern: "shell:*", action: deny}]
`

// newService builds a service like the e2e tests do: backend none, a
// policy that runs unsandboxed, and (as root) an unprivileged run_as user
// with a world-writable workspace whose parents it can traverse.
func newService(t *testing.T, enabled bool) *service.Service {
	t.Helper()
	base, err := os.MkdirTemp("", "mitrity-mcp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	ws := filepath.Join(base, "ws")
	must(t, os.Chmod(base, 0o755))
	must(t, os.Mkdir(ws, 0o777))
	must(t, os.Chmod(ws, 0o777))
	runAs := ""
	if os.Geteuid() == 0 {
		if _, err := user.Lookup("nobody"); err != nil {
			t.Skip("running as root without a nobody user")
		}
		runAs = "  run_as: nobody\n"
	}
	cfgYAML := "exec:\n  enabled: " + map[bool]string{true: "true", false: "false"}[enabled] +
		"\n  shell: /bin/bash\n  default_cwd: " + ws + "\n" + runAs +
		"  sandbox:\n    backend: none\n" +
		"credentials:\n  github_token:\n    env: MCP_TEST_GITHUB_TOKEN\n" +
		"policy: policy.yaml\naudit:\n  path: " + filepath.Join(base, "audit.jsonl") + "\n"
	cfgPath := filepath.Join(base, "mitrity-gateway.yaml")
	must(t, os.WriteFile(cfgPath, []byte(cfgYAML), 0o644))
	must(t, os.WriteFile(filepath.Join(base, "policy.yaml"), []byte(testPolicy), 0o644))
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := service.Open(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	return svc
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// connect serves srv over in-memory transports and returns a client
// session.
func connect(t *testing.T, srv *mcpserver.Server) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st, ct := mcp.NewInMemoryTransports()
	done := make(chan error, 1)
	go func() { done <- srv.ServeStdio(ctx, st, time.Second) }()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), ct, nil)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		cancel()
		<-done
	})
	return cs
}

func call(t *testing.T, cs *mcp.ClientSession, args any) (*mcp.CallToolResult, service.Structured, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcpserver.ToolName, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool: %v", err)
	}
	var st service.Structured
	b, _ := json.Marshal(res.StructuredContent)
	must(t, json.Unmarshal(b, &st))
	checkOutputSchema(t, b)
	if len(res.Content) != 1 {
		t.Fatalf("want one content item, got %d", len(res.Content))
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content is %T, not text", res.Content[0])
	}
	return res, st, tc.Text
}

// checkOutputSchema fails t unless structured (a result's
// structuredContent, as JSON) is valid against the output schema the tool
// declares: clients may check it, a denial's too.
func checkOutputSchema(t *testing.T, structured []byte) {
	t.Helper()
	var schema jsonschema.Schema
	must(t, json.Unmarshal(mcpserver.Tool().OutputSchema.(json.RawMessage), &schema))
	rs, err := schema.Resolve(nil)
	must(t, err)
	var v any
	must(t, json.Unmarshal(structured, &v))
	if err := rs.Validate(v); err != nil {
		t.Errorf("structuredContent does not match the declared outputSchema: %v\n%s", err, structured)
	}
}

func TestListTools(t *testing.T) {
	for _, enabled := range []bool{true, false} {
		svc := newService(t, enabled)
		cs := connect(t, mcpserver.New(mcpserver.Options{Service: svc, Enabled: enabled, Agent: "local"}))
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if !enabled {
			if len(res.Tools) != 0 {
				t.Fatalf("exec disabled: want no tools, got %d", len(res.Tools))
			}
			continue
		}
		if len(res.Tools) != 1 || res.Tools[0].Name != "shell__execute" {
			t.Fatalf("tools: %+v", res.Tools)
		}
		tool := res.Tools[0]
		a := tool.Annotations
		if a == nil || a.DestructiveHint == nil || !*a.DestructiveHint || a.OpenWorldHint == nil || !*a.OpenWorldHint || a.ReadOnlyHint || a.IdempotentHint {
			t.Errorf("annotations: %+v", a)
		}
		b, _ := json.Marshal(tool.InputSchema)
		var schema struct {
			Properties map[string]map[string]any `json:"properties"`
			Required   []string                  `json:"required"`
		}
		must(t, json.Unmarshal(b, &schema))
		if schema.Properties["command"]["maxLength"] != float64(65536) || schema.Properties["timeout_seconds"]["minimum"] != float64(1) ||
			schema.Properties["env"]["maxProperties"] != float64(32) || len(schema.Required) != 1 {
			t.Errorf("input schema: %s", b)
		}
		for _, p := range []string{"command", "cwd", "timeout_seconds", "stdin", "env"} {
			if _, ok := schema.Properties[p]; !ok {
				t.Errorf("input schema lacks %s", p)
			}
		}
	}
}

func TestCallExitCode(t *testing.T) {
	cs := connect(t, mcpserver.New(mcpserver.Options{Service: newService(t, true), Enabled: true, Agent: "local"}))
	res, st, text := call(t, cs, map[string]any{"command": "echo hello; echo oops >&2; exit 3", "timeout_seconds": 20})
	if res.IsError {
		t.Fatalf("a non-zero exit is a result, not an error: %s", text)
	}
	if st.ExitCode == nil || *st.ExitCode != 3 {
		t.Fatalf("exit_code: %+v (%s)", st, text)
	}
	if want := "hello\n--- stderr ---\noops\n--- exit code 3 ---"; text != want {
		t.Errorf("text: %q, want %q", text, want)
	}
	if st.Stdout != "hello\n" || st.Stderr != "oops\n" {
		t.Errorf("the structured result must carry both streams: %+v", st)
	}
	if st.TimeoutSeconds != 20 || st.SandboxMode != "none" || st.EventID == "" {
		t.Errorf("structured: %+v", st)
	}
}

func TestCallStdinAndCwd(t *testing.T) {
	cs := connect(t, mcpserver.New(mcpserver.Options{Service: newService(t, true), Enabled: true, Agent: "local"}))
	res, st, text := call(t, cs, map[string]any{"command": "cat", "stdin": "from stdin"})
	if res.IsError || st.ExitCode == nil || *st.ExitCode != 0 || st.Stdout != "from stdin" {
		t.Fatalf("stdin: %v %+v %q", res.IsError, st, text)
	}
	res, st, _ = call(t, cs, map[string]any{"command": "pwd", "cwd": "/"})
	if !res.IsError || st.Reason != string(govern.ReasonCwdOutsideWorkspace) {
		t.Fatalf("cwd outside the workspace: %+v", st)
	}
}

// TestListMatchesPermission: with no upstream configured too, an agent
// whose tool permissions deny shell:* is not shown shell__execute (its call
// is refused tool_permission); another agent is.
func TestListMatchesPermission(t *testing.T) {
	svc := newService(t, true)
	for _, c := range []struct {
		agent  string
		listed bool
	}{{"ci", true}, {"locked", false}} {
		cs := connect(t, mcpserver.New(mcpserver.Options{Service: svc, Enabled: true, Agent: c.agent}))
		tools, err := cs.ListTools(context.Background(), nil)
		must(t, err)
		if got := len(tools.Tools) == 1 && tools.Tools[0].Name == mcpserver.ToolName; got != c.listed || len(tools.Tools) > 1 {
			t.Errorf("agent %s: tools/list %v, want shell__execute listed %v", c.agent, tools.Tools, c.listed)
		}
		res, st, _ := call(t, cs, map[string]any{"command": "true"})
		if refused := res.IsError && st.Reason == "tool_permission"; refused == c.listed {
			t.Errorf("agent %s: the call (%+v) disagrees with the list", c.agent, st)
		}
	}
}

func TestCallDenied(t *testing.T) {
	cs := connect(t, mcpserver.New(mcpserver.Options{Service: newService(t, true), Enabled: true, Agent: "ci"}))
	res, st, text := call(t, cs, map[string]any{"command": `curl -H "Authorization: Bearer ${credential:github_token}" https://example.com`})
	if !res.IsError || st.Reason != "credential_in_argv" || st.ExitCode != nil || st.EventID == "" {
		t.Fatalf("denial: %v %+v %q", res.IsError, st, text)
	}
	if !strings.HasPrefix(text, "denied (credential_in_argv): ") {
		t.Errorf("text: %q", text)
	}
	// env keys outside agent_settable are denied by the service.
	res, st, _ = call(t, cs, map[string]any{"command": "true", "env": map[string]string{"FOO": "bar"}})
	if !res.IsError || st.Reason != "invalid_argument" {
		t.Fatalf("env: %+v", st)
	}
}

func TestCallMalformed(t *testing.T) {
	cs := connect(t, mcpserver.New(mcpserver.Options{Service: newService(t, true), Enabled: true, Agent: "local"}))
	for _, tc := range []struct {
		name string
		args any
		want string
	}{
		{"no command", map[string]any{"cwd": "."}, "missing argument: command"},
		{"command not a string", map[string]any{"command": 42}, "command must be a string"},
		{"empty command", map[string]any{"command": "  "}, "command is empty"},
		{"fractional timeout", map[string]any{"command": "true", "timeout_seconds": 1.5}, "timeout_seconds must be an integer"},
		{"zero timeout", map[string]any{"command": "true", "timeout_seconds": 0}, "timeout_seconds must be an integer of at least 1"},
		{"timeout a string", map[string]any{"command": "true", "timeout_seconds": "5"}, "timeout_seconds"},
		{"env not strings", map[string]any{"command": "true", "env": map[string]any{"A": 1}}, "env must be an object of string values"},
		{"unknown field", map[string]any{"command": "true", "shell": "/bin/sh"}, "unknown field"},
		{"too long", map[string]any{"command": strings.Repeat("x", mcpserver.MaxCommandBytes+1)}, "at most 65536"},
		{"NUL", map[string]any{"command": "echo a\x00b"}, "NUL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, st, text := call(t, cs, tc.args)
			if !res.IsError || !strings.Contains(text, tc.want) || st.Reason != "invalid_argument" || st.EventID == "" {
				t.Fatalf("want a tool error containing %q, got isError=%v %q %+v", tc.want, res.IsError, text, st)
			}
		})
	}
	// The session still works afterwards.
	res, st, _ := call(t, cs, map[string]any{"command": "true"})
	if res.IsError || st.ExitCode == nil || *st.ExitCode != 0 {
		t.Fatalf("after malformed calls: %+v", st)
	}
}

func TestCallDisabled(t *testing.T) {
	cs := connect(t, mcpserver.New(mcpserver.Options{Service: newService(t, false), Enabled: false, Agent: "local"}))
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: mcpserver.ToolName, Arguments: map[string]any{"command": "true"}})
	if err == nil {
		t.Fatal("calling shell__execute on a gateway with exec disabled succeeded")
	}
}

func TestCancel(t *testing.T) {
	cs := connect(t, mcpserver.New(mcpserver.Options{Service: newService(t, true), Enabled: true, Agent: "local"}))
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcpserver.ToolName, Arguments: map[string]any{"command": "sleep 20"}})
	if err == nil {
		t.Fatal("a cancelled call returned a result")
	}
	if time.Since(start) > 10*time.Second {
		t.Fatalf("cancellation took %v", time.Since(start))
	}
}

func TestDrainCancelsRunningCalls(t *testing.T) {
	srv := mcpserver.New(mcpserver.Options{Service: newService(t, true), Enabled: true, Agent: "local"})
	cs := connect(t, srv)
	type out struct {
		st  service.Structured
		err error
	}
	done := make(chan out, 1)
	const running = "sleep 20.25; true" // the tag its bash carries in /proc
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: mcpserver.ToolName, Arguments: map[string]any{"command": running}})
		var st service.Structured
		if err == nil {
			b, _ := json.Marshal(res.StructuredContent)
			json.Unmarshal(b, &st)
		}
		done <- out{st, err}
	}()
	// Drain once the run is up: a call that has not begun is refused
	// (shutting_down) instead, as a loaded machine had it after a fixed
	// half second.
	for deadline := time.Now().Add(20 * time.Second); !procWith(running); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the run did not start")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	srv.Drain(ctx)
	o := <-done
	if o.err != nil || o.st.Status != govern.StatusKilled.String() {
		t.Fatalf("drained call: %+v %v", o.st, o.err)
	}
	res, st, text := call(t, cs, map[string]any{"command": "true"})
	if !res.IsError || st.ExitCode != nil || st.Reason != string(govern.ReasonShuttingDown) || st.EventID == "" {
		t.Fatalf("a call after drain: %+v", st)
	}
	if !strings.Contains(text, "shutting down") || !strings.Contains(text, "nothing ran") {
		t.Errorf("a call after drain is told why: %q", text)
	}
}

// procWith reports whether a host process's command line holds tag.
func procWith(tag string) bool {
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range cmdlines {
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), tag) && !strings.Contains(string(b), "-test.") {
			return true
		}
	}
	return false
}

// serveHTTP starts the Streamable HTTP server on 127.0.0.1.
func serveHTTP(t *testing.T, srv *mcpserver.Server, tokens mcpserver.Tokens) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.ServeHTTP(ctx, l, tokens, time.Second) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServeHTTP: %v", err)
		}
	})
	return "http://" + l.Addr().String()
}

type bearer struct {
	token  string
	origin string
	base   http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	if b.origin != "" {
		r.Header.Set("Origin", b.origin)
	}
	return b.base.RoundTrip(r)
}

func TestHTTP(t *testing.T) {
	const token = "tok-0123456789abcdef"
	srv := mcpserver.New(mcpserver.Options{Service: newService(t, true), Enabled: true})
	url := serveHTTP(t, srv, mcpserver.NewTokens(map[string]string{token: "ci"}))

	// No token, a wrong token, a foreign Origin: refused before any call.
	for _, tc := range []struct {
		token, origin string
		code          int
	}{{"", "", 401}, {"wrong-token-000000000", "", 401}, {token, "http://evil.example", 403}} {
		req, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"shell__execute","arguments":{"command":"touch /tmp/x"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		resp, err := http.DefaultClient.Do(req)
		must(t, err)
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("token %q origin %q: status %d, want %d", tc.token, tc.origin, resp.StatusCode, tc.code)
		}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	if _, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, nil); err == nil {
		t.Fatal("a client without a token connected")
	}

	// With the token, from a localhost origin: the call is made as the
	// token's agent (ci holds github_token, so the reference is granted).
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearer{token: token, origin: "http://localhost:6274", base: http.DefaultTransport}}}, nil)
	must(t, err)
	defer cs.Close()
	tools, err := cs.ListTools(context.Background(), nil)
	must(t, err)
	if len(tools.Tools) != 1 {
		t.Fatalf("tools over HTTP: %+v", tools.Tools)
	}
	res, st, text := call(t, cs, map[string]any{"command": "exit 3"})
	if res.IsError || st.ExitCode == nil || *st.ExitCode != 3 {
		t.Fatalf("over HTTP: %+v %q", st, text)
	}
	// credential_not_granted would be the reason for an agent without the
	// grant; ci has it, so the credential reaches the command's env.
	t.Setenv("MCP_TEST_GITHUB_TOKEN", "ghp_mcpTestSecretValue0123456789")
	res, st, text = call(t, cs, map[string]any{"command": `T=${credential:github_token}; echo "${#T} $T"`})
	if res.IsError || !strings.Contains(text, "32 [REDACTED:credential:github_token]") {
		t.Fatalf("agent mapping: %+v %q", st, text)
	}
}

func TestLoadTokens(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "tokens")
	must(t, os.WriteFile(p, []byte("# comment\n\ntok-0123456789abcdef ci\ntok-fedcba9876543210 local\n"), 0o600))
	toks, err := mcpserver.LoadTokens(p)
	must(t, err)
	if a, ok := toks.Agent("tok-0123456789abcdef"); !ok || a != "ci" {
		t.Errorf("agent: %q %v", a, ok)
	}
	if _, ok := toks.Agent("tok-0123456789abcdeX"); ok {
		t.Error("a wrong token matched")
	}
	must(t, os.Chmod(p, 0o644))
	if _, err := mcpserver.LoadTokens(p); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a world-readable token file: %v", err)
	}
	// A reload swaps the set every copy answers from: a removed token is
	// refused from then on.
	copied := toks
	must(t, os.Chmod(p, 0o600))
	must(t, os.WriteFile(p, []byte("tok-fedcba9876543210 local\n"), 0o600))
	next, err := mcpserver.LoadTokens(p)
	must(t, err)
	toks.Replace(next)
	if _, ok := copied.Agent("tok-0123456789abcdef"); ok {
		t.Error("a token removed by the reload still matched")
	}
	if a, ok := copied.Agent("tok-fedcba9876543210"); !ok || a != "local" || copied.Len() != 1 {
		t.Errorf("after the reload: %q %v %d", a, ok, copied.Len())
	}
	for _, bad := range []string{"short ci\n", "tok-0123456789abcdef\n", "tok-0123456789abcdef a b\n", "", "tok-0123456789abcdef a\ntok-0123456789abcdef b\n",
		"tok-0123456789abcdef a/b\n", "tok-0123456789abcdef " + strings.Repeat("a", 129) + "\n"} {
		must(t, os.WriteFile(p, []byte(bad), 0o600))
		must(t, os.Chmod(p, 0o600))
		if _, err := mcpserver.LoadTokens(p); err == nil {
			t.Errorf("token file %q accepted", bad)
		}
	}
}

func TestLocalOrigin(t *testing.T) {
	for o, want := range map[string]bool{
		"http://localhost": true, "http://localhost:6274": true, "http://127.0.0.1:3000": true, "https://[::1]:1": true,
		"http://evil.example": false, "http://localhost.evil.example": false, "null": false, "file://localhost": false,
		"http://127.0.0.2": false,
	} {
		if got := mcpserver.LocalOrigin(o); got != want {
			t.Errorf("LocalOrigin(%q) = %v", o, got)
		}
	}
	for addr, want := range map[string]bool{"127.0.0.1:8765": true, "localhost:1": true, "[::1]:2": true, "10.0.0.1:3": false} {
		if got, err := mcpserver.CheckListenAddr(addr); err != nil || got != want {
			t.Errorf("CheckListenAddr(%q) = %v, %v", addr, got, err)
		}
	}
	for _, addr := range []string{":8765", "127.0.0.1", ""} {
		if _, err := mcpserver.CheckListenAddr(addr); err == nil {
			t.Errorf("CheckListenAddr(%q) accepted", addr)
		}
	}
}

func TestProgress(t *testing.T) {
	srv := mcpserver.New(mcpserver.Options{Service: newService(t, true), Enabled: true, Agent: "local", ProgressInterval: 100 * time.Millisecond})
	st, ct := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.ServeStdio(ctx, st, time.Second) }()
	defer func() {
		cancel()
		<-done
	}()
	got := make(chan *mcp.ProgressNotificationParams, 100)
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			got <- r.Params
		}})
	cs, err := client.Connect(context.Background(), ct, nil)
	must(t, err)
	defer cs.Close()
	params := &mcp.CallToolParams{Name: mcpserver.ToolName, Arguments: map[string]any{"command": "sleep 1"}}
	params.SetProgressToken("tok-1")
	res, err := cs.CallTool(context.Background(), params)
	must(t, err)
	if res.IsError {
		t.Fatalf("call: %+v", res)
	}
	select {
	case p := <-got:
		if p.ProgressToken != "tok-1" || p.Progress <= 0 || !strings.HasPrefix(p.Message, "running for") {
			t.Errorf("progress: %+v", p)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no progress notification for a 1 s command")
	}
}

// TestLoadTokensNotRegular: a --token-file that names a named pipe is
// refused at once rather than opened waiting for a writer: at boot the
// gateway would hang without a word, and on SIGHUP the reload goroutine
// (and with it every later audit reopen and reload) would wait forever.
func TestLoadTokensNotRegular(t *testing.T) {
	p := filepath.Join(t.TempDir(), "tokens")
	must(t, syscall.Mkfifo(p, 0o600))
	done := make(chan error, 1)
	go func() { _, err := mcpserver.LoadTokens(p); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("a named pipe as the token file: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("LoadTokens still waiting on a named pipe after 5s")
	}
}
