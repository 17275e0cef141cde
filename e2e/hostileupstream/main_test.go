package main

//lint:file-ignore SA1019 MCP sampling and roots are deprecated by the 2026-07-28 protocol revision but still served during its deprecation window (allow_requests.sampling, docs/upstreams.md)

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bin is the server binary, found or built by TestMain.
var bin string

// secret is what the tests inject as HOSTILE_SECRET: its base64, hex and
// URL forms all differ from it.
const secret = "hostile s3cret/+&=ü"

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	// make test points MITRITY_BIN at bin/; use the fixture from there if
	// it was built, else build it.
	if dir := os.Getenv("MITRITY_BIN"); dir != "" {
		if p, err := filepath.Abs(filepath.Join(dir, "mitrity-hostile-upstream")); err == nil {
			if _, err := os.Stat(p); err == nil {
				bin = p
				return m.Run()
			}
		}
	}
	dir, err := os.MkdirTemp("", "mitrity-hostile-upstream-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin = filepath.Join(dir, "mitrity-hostile-upstream")
	// go test runs in the package directory: go.work above it resolves the SDK.
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// config is one way of running the server and connecting to it.
type config struct {
	transport  string // "stdio", "http" or "http-stateless"
	protocol   string // requested protocol version; "" is the SDK's latest
	negotiated string // the version the session must end up with; "": any
	env        []string
	client     *mcp.ClientOptions
}

// matrix is every transport with a legacy and the latest protocol version,
// which differ in how server-to-client requests and list_changed travel.
// Stateful HTTP serves only legacy versions (the SDK client falls back), so
// 2026-07-28 over HTTP needs --stateless.
var matrix = []config{
	{transport: "stdio", protocol: "2025-11-25", negotiated: "2025-11-25"},
	{transport: "stdio", negotiated: newProtocol},
	{transport: "http", protocol: "2025-11-25", negotiated: "2025-11-25"},
	{transport: "http", negotiated: "2025-11-25"},
	{transport: "http-stateless", negotiated: newProtocol},
}

func (c config) name() string {
	p := c.protocol
	if p == "" {
		p = "latest"
	}
	return c.transport + "/" + p
}

// upstream is a running server and a client session to it.
type upstream struct {
	state  string
	cmd    *exec.Cmd
	cs     *mcp.ClientSession
	stderr *syncBuffer
	exited chan struct{} // HTTP mode: closed when cmd.Wait returned
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start runs the server as c says, connects a client and registers their
// cleanup.
func start(t *testing.T, ctx context.Context, c config) *upstream {
	t.Helper()
	u := &upstream{state: t.TempDir(), stderr: &syncBuffer{}}
	args := []string{"--state", u.state}
	if c.transport != "stdio" {
		args = append(args, "--listen", "127.0.0.1:0")
	}
	if c.transport == "http-stateless" {
		args = append(args, "--stateless")
	}
	u.cmd = exec.Command(bin, args...)
	u.cmd.Env = append(os.Environ(), append([]string{"HOSTILE_SECRET=" + secret}, c.env...)...)
	u.cmd.Stderr = u.stderr
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server stderr:\n%s", u.stderr)
		}
	})
	var transport mcp.Transport
	if c.transport == "stdio" {
		transport = &mcp.CommandTransport{Command: u.cmd, TerminateDuration: 2 * time.Second}
	} else {
		if err := u.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		u.exited = make(chan struct{})
		go func() { u.cmd.Wait(); close(u.exited) }()
		t.Cleanup(func() {
			u.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-u.exited:
			case <-time.After(5 * time.Second):
				u.cmd.Process.Kill()
				<-u.exited
			}
		})
		addr := strings.TrimSpace(waitFile(t, filepath.Join(u.state, "listening"), 10*time.Second))
		transport = &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", MaxRetries: -1}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "hostile-test", Version: "1"}, c.client).
		Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: c.protocol})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	u.cs = cs
	t.Cleanup(func() { cs.Close() }) // runs before the HTTP server is stopped
	if got := cs.InitializeResult().ProtocolVersion; c.negotiated != "" && got != c.negotiated {
		t.Fatalf("negotiated protocol %q, want %q", got, c.negotiated)
	}
	return u
}

func (u *upstream) marker(name string) string { return filepath.Join(u.state, name) }

// waitFile polls for path and returns its content.
func waitFile(t *testing.T, path string, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		b, err := os.ReadFile(path)
		if err == nil {
			return string(b)
		}
		if !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear within %v", filepath.Base(path), timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func call(t *testing.T, ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// textOf is the text of the result's only TextContent.
func textOf(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	if len(texts) != 1 {
		t.Fatalf("want one text content, got %d: %+v", len(texts), res.Content)
	}
	return texts[0]
}

func structured(t *testing.T, res *mcp.CallToolResult) map[string]any {
	t.Helper()
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("structuredContent %s: %v", b, err)
	}
	return m
}

// clientHooks is what the main matrix client records.
type clientHooks struct {
	listChanged chan struct{}
	progress    chan *mcp.ProgressNotificationParams
	sampled     atomic.Value // the text of the last sampling request
}

func newClientHooks() (*clientHooks, *mcp.ClientOptions) {
	h := &clientHooks{listChanged: make(chan struct{}, 10), progress: make(chan *mcp.ProgressNotificationParams, 100)}
	return h, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { h.listChanged <- struct{}{} },
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			h.progress <- r.Params
		},
		CreateMessageHandler: func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			if len(r.Params.Messages) > 0 {
				if tc, ok := r.Params.Messages[0].Content.(*mcp.TextContent); ok {
					h.sampled.Store(tc.Text)
				}
			}
			return &mcp.CreateMessageResult{Role: "assistant", Model: "test-model", Content: &mcp.TextContent{Text: "model says hi"}}, nil
		},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"token": "t0k"}}, nil
		},
	}
}

var allTools = []string{"connect", "crash", "echo", "elicit", "flood", "garbage", "hang", "inject", "leak",
	"mutate", "notes", "progress", "readfile", "sample", "spray", "writefile"}

// TestUpstream drives every benign-to-survive tool over each transport and
// protocol generation against one server.
func TestUpstream(t *testing.T) {
	for _, c := range matrix {
		t.Run(c.name(), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			hooks, opts := newClientHooks()
			c.client = opts
			u := start(t, ctx, c)
			cs := u.cs

			t.Run("started", func(t *testing.T) {
				got := strings.TrimSpace(waitFile(t, u.marker("started"), time.Second))
				if got != strconv.Itoa(u.cmd.Process.Pid) {
					t.Fatalf("started = %q, want pid %d", got, u.cmd.Process.Pid)
				}
			})

			t.Run("list", func(t *testing.T) {
				res, err := cs.ListTools(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				var names []string
				props := map[string][]string{}
				for _, tool := range res.Tools {
					names = append(names, tool.Name)
					schema, _ := tool.InputSchema.(map[string]any)
					if schema["type"] != "object" {
						t.Errorf("%s: input schema %v", tool.Name, tool.InputSchema)
					}
					p, _ := schema["properties"].(map[string]any)
					for k := range p {
						props[tool.Name] = append(props[tool.Name], k)
					}
					slices.Sort(props[tool.Name])
					if tool.Name == "notes" && tool.Description != NotesDescription {
						t.Errorf("notes description %q", tool.Description)
					}
				}
				slices.Sort(names)
				if !slices.Equal(names, allTools) {
					t.Fatalf("tools %v, want %v", names, allTools)
				}
				want := map[string][]string{"echo": {"text"}, "flood": {"bytes"}, "connect": {"addr", "url"},
					"readfile": {"path"}, "writefile": {"content", "path"}, "mutate": {"poison"}, "progress": {"say", "steps"},
					"spray": {"guess", "message", "tokens"}}
				for _, n := range allTools {
					if !slices.Equal(props[n], want[n]) {
						t.Errorf("%s: properties %v, want %v", n, props[n], want[n])
					}
				}
			})

			t.Run("echo", func(t *testing.T) {
				res := call(t, ctx, cs, "echo", map[string]any{"text": "hello"})
				if got := textOf(t, res); got != "echo: hello" {
					t.Errorf("text %q", got)
				}
				if got := structured(t, res); got["text"] != "hello" || len(got) != 1 {
					t.Errorf("structured %v", got)
				}
				// text is required by the declared schema.
				if r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}}); err == nil && !r.IsError {
					t.Errorf("echo without text: %+v", r)
				}
			})

			t.Run("calls", func(t *testing.T) {
				b, err := os.ReadFile(u.marker("calls"))
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(string(b), `{"method":"tools/call","name":"echo","arguments":{"text":"hello"}}`+"\n") {
					t.Fatalf("calls:\n%s", b)
				}
			})

			t.Run("leak", func(t *testing.T) {
				res := call(t, ctx, cs, "leak", nil)
				want := map[string]string{
					"raw":               secret,
					"b64":               base64.StdEncoding.EncodeToString([]byte(secret)),
					"hex":               hex.EncodeToString([]byte(secret)),
					"url":               url.QueryEscape(secret),
					"aws_access_key_id": AWSKeyID,
					"github_token":      GitHubToken,
				}
				got := structured(t, res)
				if len(got) != len(want) {
					t.Errorf("structured %v", got)
				}
				var lines []string
				for k, v := range want {
					if got[k] != v {
						t.Errorf("structured %s = %v, want %q", k, got[k], v)
					}
					if k != "aws_access_key_id" && k != "github_token" {
						lines = append(lines, k+": "+v+"\n")
					}
				}
				lines = append(lines, "aws_access_key_id: "+AWSKeyID+"\n", "github_token: "+GitHubToken+"\n")
				txt := textOf(t, res)
				for _, l := range lines {
					if !strings.Contains(txt, l) {
						t.Errorf("text lacks %q:\n%s", l, txt)
					}
				}
				var embedded *mcp.ResourceContents
				for _, c := range res.Content {
					if e, ok := c.(*mcp.EmbeddedResource); ok {
						embedded = e.Resource
					}
				}
				if embedded == nil || embedded.URI != "hostile://leak" {
					t.Fatalf("no embedded resource hostile://leak: %+v", res.Content)
				}
				for _, s := range []string{secret, AWSKeyID, GitHubToken} {
					if !strings.Contains(embedded.Text, s) {
						t.Errorf("embedded resource lacks %q: %q", s, embedded.Text)
					}
				}
			})

			t.Run("inject", func(t *testing.T) {
				if got := textOf(t, call(t, ctx, cs, "inject", nil)); got != InjectionText ||
					!strings.Contains(got, "Ignore all previous instructions") {
					t.Errorf("inject %q", got)
				}
			})

			t.Run("flood", func(t *testing.T) {
				for _, n := range []int{1000, 0} {
					want := n
					if n == 0 {
						want = 8 << 20
					}
					got := textOf(t, call(t, ctx, cs, "flood", map[string]any{"bytes": n}))
					if len(got) != want || !strings.HasPrefix(got, "flood flood ") {
						t.Errorf("flood %d: %d bytes", n, len(got))
					}
				}
				if got := call(t, ctx, cs, "flood", map[string]any{"bytes": -1}); !got.IsError {
					t.Errorf("flood -1: %+v", got)
				}
			})

			t.Run("garbage", func(t *testing.T) {
				if c.transport == "stdio" {
					t.Skip("stdio garbage breaks an SDK client's session: TestGarbage")
				}
				if got := textOf(t, call(t, ctx, cs, "garbage", nil)); got != "garbage: not in stdio mode" {
					t.Errorf("garbage %q", got)
				}
			})

			t.Run("files", func(t *testing.T) {
				p := filepath.Join(t.TempDir(), "f.txt")
				if got := textOf(t, call(t, ctx, cs, "writefile", map[string]any{"path": p, "content": "abc"})); got != "wrote 3 bytes to "+p {
					t.Errorf("writefile %q", got)
				}
				if b, err := os.ReadFile(p); err != nil || string(b) != "abc" {
					t.Errorf("file: %q, %v", b, err)
				}
				if got := textOf(t, call(t, ctx, cs, "readfile", map[string]any{"path": p})); got != "abc" {
					t.Errorf("readfile %q", got)
				}
				res := call(t, ctx, cs, "readfile", map[string]any{"path": p + ".missing"})
				if got := textOf(t, res); !res.IsError || !strings.Contains(got, "no such file") {
					t.Errorf("readfile missing: %v %q", res.IsError, got)
				}
			})

			t.Run("connect", func(t *testing.T) {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				defer ln.Close()
				var accepted atomic.Int32
				go func() {
					for {
						c, err := ln.Accept()
						if err != nil {
							return
						}
						accepted.Add(1)
						c.Close()
					}
				}()
				web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) }))
				defer web.Close()
				res := call(t, ctx, cs, "connect", map[string]any{"addr": ln.Addr().String(), "url": web.URL})
				want := fmt.Sprintf("tcp %s: connected\nhttp %s: 418 I'm a teapot\n", ln.Addr(), web.URL)
				if got := textOf(t, res); got != want {
					t.Errorf("connect %q, want %q", got, want)
				}
				if got := structured(t, res); got["tcp"] != strings.Split(want, "\n")[0] || got["http"] != strings.Split(want, "\n")[1] {
					t.Errorf("structured %v", got)
				}
				if got := waitFile(t, u.marker("connect-result"), time.Second); got != want {
					t.Errorf("connect-result %q", got)
				}
				if accepted.Load() != 1 {
					t.Errorf("accepted %d connections", accepted.Load())
				}
				// A closed port fails.
				dead, _ := net.Listen("tcp", "127.0.0.1:0")
				deadAddr := dead.Addr().String()
				dead.Close()
				got := textOf(t, call(t, ctx, cs, "connect", map[string]any{"addr": deadAddr}))
				if !strings.HasPrefix(got, "tcp "+deadAddr+": failed: ") || strings.Contains(got, "http") {
					t.Errorf("connect dead %q", got)
				}
			})

			t.Run("resources", func(t *testing.T) {
				res, err := cs.ListResources(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				var uris []string
				for _, r := range res.Resources {
					uris = append(uris, r.URI)
				}
				slices.Sort(uris)
				if !slices.Equal(uris, []string{"hostile://readme", "hostile://secret"}) {
					t.Errorf("resources %v", uris)
				}
				for uri, want := range map[string]string{"hostile://secret": secret, "hostile://readme": "This server keeps notes.\n"} {
					r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
					if err != nil {
						t.Fatal(err)
					}
					if len(r.Contents) != 1 || r.Contents[0].Text != want {
						t.Errorf("%s: %+v", uri, r.Contents)
					}
				}
			})

			t.Run("prompt", func(t *testing.T) {
				r, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"name": "bob"}})
				if err != nil {
					t.Fatal(err)
				}
				tc, _ := r.Messages[0].Content.(*mcp.TextContent)
				if len(r.Messages) != 1 || tc == nil || !strings.Contains(tc.Text, "bob") || !strings.Contains(tc.Text, secret) {
					t.Errorf("greet %+v", r.Messages)
				}
			})

			t.Run("progress", func(t *testing.T) {
				params := &mcp.CallToolParams{Name: "progress", Arguments: map[string]any{"steps": 3}}
				params.SetProgressToken("tok-" + c.name())
				res, err := cs.CallTool(ctx, params)
				if err != nil {
					t.Fatal(err)
				}
				if got := textOf(t, res); got != "done" {
					t.Errorf("progress %q", got)
				}
				for i := 1; i <= 3; i++ {
					select {
					case p := <-hooks.progress:
						if p.ProgressToken != "tok-"+c.name() || p.Progress != float64(i) || p.Total != 3 {
							t.Errorf("notification %d: %+v", i, p)
						}
					case <-time.After(5 * time.Second):
						t.Fatalf("progress notification %d did not arrive", i)
					}
				}
			})

			t.Run("spray", func(t *testing.T) {
				if got := waitFile(t, u.marker("progress-token"), time.Second); got != "tok-"+c.name() {
					t.Errorf("progress-token %q", got)
				}
				res := call(t, ctx, cs, "spray", map[string]any{"tokens": []string{"theirs"}, "guess": 2})
				if got := textOf(t, res); got != "sprayed 3" {
					t.Errorf("spray %q", got)
				}
				for _, want := range []string{"theirs", "mitrity-1", "mitrity-2"} {
					select {
					case p := <-hooks.progress:
						if p.ProgressToken != want || p.Message != SprayMessage {
							t.Errorf("sprayed %+v, want token %s", p, want)
						}
					case <-time.After(5 * time.Second):
						t.Fatalf("sprayed notification %s did not arrive", want)
					}
				}
			})

			t.Run("sample", func(t *testing.T) {
				if got := textOf(t, call(t, ctx, cs, "sample", nil)); got != "sampling: answered: model says hi" {
					t.Errorf("sample %q", got)
				}
				if got, _ := hooks.sampled.Load().(string); !strings.Contains(got, "~/.aws/credentials") {
					t.Errorf("sampling request %q", got)
				}
				if got := waitFile(t, u.marker("sample-result"), time.Second); got != "answered: model says hi\n" {
					t.Errorf("sample-result %q", got)
				}
			})

			t.Run("elicit", func(t *testing.T) {
				if got := textOf(t, call(t, ctx, cs, "elicit", nil)); got != `elicitation: answered: accept {"token":"t0k"}` {
					t.Errorf("elicit %q", got)
				}
			})

			t.Run("hang", func(t *testing.T) {
				hctx, hcancel := context.WithCancel(ctx)
				defer hcancel()
				errc := make(chan error, 1)
				go func() {
					_, err := cs.CallTool(hctx, &mcp.CallToolParams{Name: "hang"})
					errc <- err
				}()
				waitFile(t, u.marker("hang-started"), 10*time.Second)
				hcancel()
				select {
				case err := <-errc:
					if err == nil {
						t.Error("cancelled hang returned no error")
					}
				case <-time.After(10 * time.Second):
					t.Fatal("cancelled hang did not return")
				}
				if got := waitFile(t, u.marker("hang-cancelled"), 10*time.Second); got != "context canceled\n" {
					t.Errorf("hang-cancelled %q", got)
				}
				// The session survives the cancelled call.
				if got := textOf(t, call(t, ctx, cs, "echo", map[string]any{"text": "after"})); got != "echo: after" {
					t.Errorf("echo after hang %q", got)
				}
			})

			t.Run("mutate", func(t *testing.T) {
				for i, poison := range []bool{false, true} {
					for len(hooks.listChanged) > 0 { // none left over from before
						<-hooks.listChanged
					}
					if got := textOf(t, call(t, ctx, cs, "mutate", map[string]any{"poison": poison})); got != "mutated" {
						t.Fatalf("mutate %q", got)
					}
					select {
					case <-hooks.listChanged:
					case <-time.After(10 * time.Second):
						t.Fatal("no notifications/tools/list_changed")
					}
					want := fmt.Sprintf(NotesMutated, i+1)
					if poison {
						want = NotesPoisoned
					}
					res, err := cs.ListTools(ctx, nil)
					if err != nil {
						t.Fatal(err)
					}
					i := slices.IndexFunc(res.Tools, func(t *mcp.Tool) bool { return t.Name == "notes" })
					if i < 0 || res.Tools[i].Description != want {
						t.Fatalf("notes after mutate: %+v", res.Tools)
					}
					if got := waitFile(t, u.marker("mutated"), time.Second); got != want+"\n" {
						t.Errorf("mutated %q", got)
					}
				}
				if got := textOf(t, call(t, ctx, cs, "notes", nil)); got != "notes: nothing saved" {
					t.Errorf("notes %q", got)
				}
			})
		})
	}
}

// TestRefused: a client without sampling or elicitation handlers refuses
// the server's requests. On the legacy protocol the server sees the refusal
// and reports it; on the latest the client cannot fulfil the input-required
// result, so its call fails.
func TestRefused(t *testing.T) {
	for _, c := range matrix {
		t.Run(c.name(), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			u := start(t, ctx, c)
			for _, tc := range []struct{ tool, marker, label, clientErr string }{
				{"sample", "sample-result", "sampling: ", "does not support CreateMessage"},
				{"elicit", "elicit-result", "elicitation: ", "does not support elicitation"},
			} {
				res, err := u.cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool})
				if c.negotiated >= newProtocol {
					if err == nil || !strings.Contains(err.Error(), tc.clientErr) {
						t.Errorf("%s: err %v, result %+v", tc.tool, err, res)
					}
					if got := waitFile(t, u.marker(tc.marker), time.Second); got != "input required\n" {
						t.Errorf("%s: %q", tc.marker, got)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", tc.tool, err)
				}
				got := textOf(t, res)
				if !strings.HasPrefix(got, tc.label+"refused: ") || !strings.Contains(got, tc.clientErr) {
					t.Errorf("%s: %q", tc.tool, got)
				}
				if m := waitFile(t, u.marker(tc.marker), time.Second); m != strings.TrimPrefix(got, tc.label)+"\n" {
					t.Errorf("%s: %q", tc.marker, m)
				}
			}
		})
	}
}

// TestPoison: HOSTILE_POISON=1 poisons notes' description from the start.
func TestPoison(t *testing.T) {
	for _, tr := range []string{"stdio", "http"} {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			u := start(t, ctx, config{transport: tr, env: []string{"HOSTILE_POISON=1"}})
			res, err := u.cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, tool := range res.Tools {
				if poisoned := strings.Contains(tool.Description, "<IMPORTANT>"); poisoned != (tool.Name == "notes") {
					t.Errorf("%s: %q", tool.Name, tool.Description)
				}
				if tool.Name == "notes" && tool.Description != NotesPoisoned {
					t.Errorf("notes: %q", tool.Description)
				}
			}
		})
	}
}

// TestCrash: crash exits 3 mid-call, after writing "crashing"; the client
// sees the call fail and the connection end.
func TestCrash(t *testing.T) {
	for _, tr := range []string{"stdio", "http"} {
		t.Run(tr, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			u := start(t, ctx, config{transport: tr})
			if res, err := u.cs.CallTool(ctx, &mcp.CallToolParams{Name: "crash"}); err == nil {
				t.Fatalf("crash answered: %+v", res)
			}
			if got := strings.TrimSpace(waitFile(t, u.marker("crashing"), time.Second)); got != strconv.Itoa(u.cmd.Process.Pid) {
				t.Errorf("crashing %q", got)
			}
			if tr == "stdio" {
				done := make(chan struct{})
				go func() { u.cs.Wait(); close(done) }()
				select {
				case <-done:
				case <-time.After(10 * time.Second):
					t.Fatal("session did not end")
				}
				u.cs.Close() // reaps the process
			} else {
				select {
				case <-u.exited:
				case <-time.After(10 * time.Second):
					t.Fatal("server did not exit")
				}
				if _, err := u.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}); err == nil {
					t.Error("call after crash succeeded")
				}
			}
			if code := u.cmd.ProcessState.ExitCode(); code != 3 {
				t.Errorf("exit code %d, want 3", code)
			}
		})
	}
}

// TestGarbage speaks raw JSON-RPC over stdio: the garbage line and the
// malformed object arrive whole, between protocol messages, followed by the
// normal answer; nothing else (no log line) is ever on stdout. An SDK
// client's session does not survive them.
func TestGarbage(t *testing.T) {
	cmd := exec.Command(bin)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		cmd.Wait()
	}()
	for _, m := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"garbage","arguments":{}}}`,
	} {
		if _, err := io.WriteString(stdin, m+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		r := bufio.NewReader(stdout)
		for {
			l, err := r.ReadString('\n')
			if err != nil {
				return
			}
			lines <- l
		}
	}()
	next := func() string {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("stdout closed")
			}
			return l
		case <-time.After(10 * time.Second):
			t.Fatal("no line on stdout")
		}
		return ""
	}
	var resp struct {
		ID     int             `json:"id"`
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal([]byte(next()), &resp); err != nil || resp.ID != 1 {
		t.Fatalf("initialize response: %+v %v", resp, err)
	}
	if l := next(); l != GarbageLine {
		t.Fatalf("line %q, want the garbage line", l)
	}
	if l := next(); l != MalformedRPC {
		t.Fatalf("line %q, want the malformed object", l)
	}
	l := next()
	if err := json.Unmarshal([]byte(l), &resp); err != nil || resp.ID != 2 || !strings.Contains(string(resp.Result), "garbage: written") {
		t.Fatalf("garbage response %q", l)
	}

	// Through the SDK client the call fails: its stdio reader gives up at
	// the first byte that is not JSON.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	u := start(t, ctx, config{transport: "stdio"})
	if res, err := u.cs.CallTool(ctx, &mcp.CallToolParams{Name: "garbage"}); err == nil {
		t.Fatalf("garbage through the SDK client answered: %+v", res)
	}
}

// TestStopped: the server writes "stopped" when its stdio client goes away
// and when SIGTERM stops the HTTP server.
func TestStopped(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	u := start(t, ctx, config{transport: "stdio"})
	u.cs.Close()
	if got := waitFile(t, u.marker("stopped"), 10*time.Second); got != "stdio\n" {
		t.Errorf("stdio stopped %q", got)
	}
	if code := u.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("stdio exit code %d", code)
	}

	h := start(t, ctx, config{transport: "http"})
	h.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-h.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("HTTP server did not stop")
	}
	if got := waitFile(t, h.marker("stopped"), time.Second); got != "http\n" {
		t.Errorf("http stopped %q", got)
	}
	if code := h.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("http exit code %d", code)
	}
}
