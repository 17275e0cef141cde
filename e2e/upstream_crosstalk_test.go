package e2e

// Two hostile upstreams against one gateway, each trying to reach past
// its own calls: one floods notifications/tools/list_changed to fill the
// audit log (and so refuse every call of every server), one sprays
// progress notifications at calls it was never given. Both are the
// fixture e2e/hostileupstream, run with sandbox: none (what is tested is
// the gateway's side of the connection, not the sandbox).

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const crosstalkPolicy = `default_agent:
  profile: dev
agents:
  ci:
    profile: dev
  other:
    profile: dev
profiles:
  dev:
    exec_timeout_seconds: 30
`

// crosstalkUpstreams adds the fixture as each named upstream (sandbox:
// none, a state directory of its own the run user may write, env on top)
// and returns the state directories by name.
func crosstalkUpstreams(t *testing.T, w *world, env map[string]map[string]string, names ...string) map[string]string {
	t.Helper()
	bin := hostileBinary(t)
	uid, gid := ensureUser(t)
	states := map[string]string{}
	var block strings.Builder
	for _, name := range names {
		st := filepath.Join(w.dir, name+"-state")
		must(t, os.Mkdir(st, 0o755))
		must(t, os.Chown(st, int(uid), int(gid)))
		states[name] = st
		var vars []string
		for k, v := range env[name] {
			vars = append(vars, fmt.Sprintf("%s: %q", k, v))
		}
		slices.Sort(vars)
		fmt.Fprintf(&block, "  %s:\n    command: [%s, --state, %s]\n    sandbox: none\n    call_timeout_seconds: 30\n    env: {%s}\n",
			name, bin, st, strings.Join(vars, ", "))
	}
	w.addUpstreams(t, block.String())
	return states
}

// TestUpstreamListChangedFlood: an upstream that lists a tool it cannot
// be served under (bad.name, refused tool_name_invalid) and then sends
// notifications/tools/list_changed in a tight loop, with the audit log on
// a 4 MiB tmpfs. The gateway lists it again at most once a second and
// audits the unchanged refusal once, so the log does not fill: another
// upstream's tool and shell__execute still run and are audited.
func TestUpstreamListChangedFlood(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting the audit tmpfs needs root")
	}
	w := newWorldBackend(t, false, crosstalkPolicy, "bubblewrap")
	auditOnTmpfs(t, w, 4<<20)
	states := crosstalkUpstreams(t, w, map[string]map[string]string{
		"flood": {"HOSTILE_BAD_NAME": "1", "HOSTILE_FLOOD_LIST_CHANGED": "1"},
	}, "flood", "good")
	cs := w.session(t, nil, w.bin, "--log-level", "warn", "serve", "--stdio", "--config", w.cfg, "--admin-dir", w.admin, "--agent", "ci")
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		names := toolNames(t, cs)
		_, err := os.Stat(filepath.Join(states["flood"], "list-changed-flood"))
		if names["good__echo"] && names["flood__echo"] && err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("both upstreams never served, or the flood never started: %v (%v)", names, err)
		}
	}
	// The flood runs; the review saw the 4 MiB full within 5 s.
	began := time.Now()
	time.Sleep(6 * time.Second)

	lists := func() int {
		b, _ := os.ReadFile(filepath.Join(states["flood"], "tools-lists"))
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return n
	}
	// One listing at connect, then at most one a second.
	if n, most := lists(), 2+int(time.Since(began)/time.Second)+2; n > most {
		t.Errorf("the flooding upstream was listed %d times in %s: want at most %d (coalesced, one a second)", n, time.Since(began).Round(time.Second), most)
	}
	badName := func() int {
		n := 0
		for _, ev := range w.events(t) {
			if ev["type"] == "dev.mitrity.tool_definition" && field(ev, "data", "tool_definition", "tool") == "bad.name" {
				if field(ev, "data", "tool_definition", "state") != "refused" || field(ev, "data", "tool_definition", "reason") != "tool_name_invalid" {
					t.Fatalf("bad.name: %v", ev)
				}
				n++
			}
		}
		return n
	}
	t.Logf("in %s of flood: %d tools/list answered by the flooding upstream, %d events of bad.name, %d events in all",
		time.Since(began).Round(time.Millisecond), lists(), badName(), len(w.events(t)))
	if n := badName(); n < 1 || n > 2 {
		t.Errorf("bad.name is audited %d times; want its refusal once (again only after a restart)", n)
	}
	var st syscall.Statfs_t
	must(t, syscall.Statfs(filepath.Dir(w.audit), &st))
	if free := st.Bavail * uint64(st.Bsize); free < 2<<20 {
		t.Errorf("the audit tmpfs has %d bytes free after the flood", free)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "good__echo", Arguments: map[string]any{"text": "still here"}})
	must(t, err)
	if r := toolResultOf(res); r.isError || r.text != "echo: still here" {
		t.Fatalf("good__echo during the flood: %s", resultJSON(res))
	}
	r, err := callShell(t, ctx, cs, map[string]any{"command": "echo shell-ok"})
	must(t, err)
	if r.isError || r.stdout != "shell-ok\n" || r.structured["sandbox_mode"] != "bubblewrap" {
		t.Fatalf("shell__execute during the flood: %+v", r)
	}
	if n := len(w.upstreamEvents(t, "tools/call")); n != 1 {
		t.Errorf("good__echo left %d upstream_call events, want 1", n)
	}
	if n := badName(); n > 2 {
		t.Errorf("bad.name is audited %d times by the end", n)
	}
}

// crosstalkHTTP serves w over Streamable HTTP with a token for each of
// agents ci and other, and returns the URL and the gateway's log.
func crosstalkHTTP(t *testing.T, w *world) (url string, tokens map[string]string, log *syncBuffer) {
	t.Helper()
	tokens = map[string]string{"ci": "e2e-crosstalk-ci-0123456789abcdef", "other": "e2e-crosstalk-other-0123456789abcd"}
	tokFile := filepath.Join(w.dir, "tokens")
	must(t, os.WriteFile(tokFile, []byte(tokens["ci"]+" ci\n"+tokens["other"]+" other\n"), 0o600))
	addr := freePort(t)
	cmd := exec.Command(w.bin, "--log-level", "warn", "serve", "--http", addr, "--token-file", tokFile, "--grace", "1s",
		"--config", w.cfg, "--admin-dir", w.admin)
	cmd.Dir = w.ws
	cmd.Env = []string{"PATH=/usr/bin:/bin", "E2E_GITHUB_TOKEN=" + secretToken, "HOME=" + w.dir}
	log = &syncBuffer{}
	cmd.Stderr = log
	cmd.WaitDelay = 2 * time.Second
	must(t, cmd.Start())
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("gateway log:\n%s", log.String())
		}
	})
	url = "http://" + addr
	c := &http.Client{Timeout: 2 * time.Second}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := c.Post(url, "application/json", strings.NewReader(`{}`))
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve --http did not come up: %v\n%s", err, log.String())
		}
	}
	return url, tokens, log
}

// progressLog keeps the notifications/progress one client got.
type progressLog struct {
	mu  sync.Mutex
	got []string // "token: message"
}

func (p *progressLog) handler(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.got = append(p.got, fmt.Sprintf("%v: %s", r.Params.ProgressToken, r.Params.Message))
}

func (p *progressLog) all() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.got)
}

// TestUpstreamProgressCrosstalk: over HTTP, agent ci calls a__progress
// with its own progress token while agent other calls b__spray, which
// sends progress notifications on b's session for the gateway's old
// token sequence (mitrity-1 to -50) and for the very token the gateway
// gave a's call (read from a's state, as two servers sharing a backend
// could). ci sees its own progress and nothing of b's; the foreign ones
// are dropped and logged.
func TestUpstreamProgressCrosstalk(t *testing.T) {
	w := newWorld(t, false, crosstalkPolicy)
	states := crosstalkUpstreams(t, w, nil, "a", "b")
	url, tokens, log := crosstalkHTTP(t, w)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	connect := func(agent string, p *progressLog) *mcp.ClientSession {
		opts := &mcp.ClientOptions{}
		if p != nil {
			opts.ProgressNotificationHandler = p.handler
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e-" + agent, Version: "1"}, opts).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1, HTTPClient: &http.Client{Transport: bearerTransport{tokens[agent]}}}, nil)
		must(t, err)
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	seen := &progressLog{}
	victim := connect("ci", seen)
	attacker := connect("other", nil)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if names := toolNames(t, victim); names["a__progress"] && names["b__spray"] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a__progress and b__spray never served")
		}
	}

	const steps = 30 // 3 s
	done := make(chan error, 1)
	var res *mcp.CallToolResult
	go func() {
		params := &mcp.CallToolParams{Name: "a__progress", Arguments: map[string]any{"steps": steps}}
		params.SetProgressToken("victim-tok")
		var err error
		res, err = victim.CallTool(ctx, params)
		done <- err
	}()
	var upTok string
	for deadline := time.Now().Add(10 * time.Second); upTok == ""; time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(filepath.Join(states["a"], "progress-token"))
		upTok = string(b)
		if upTok == "" && time.Now().After(deadline) {
			t.Fatal("a__progress never got a progress token")
		}
	}
	if upTok == "victim-tok" {
		t.Fatal("the upstream got the agent's own progress token")
	}
	spray, err := attacker.CallTool(ctx, &mcp.CallToolParams{Name: "b__spray", Arguments: map[string]any{"tokens": []string{upTok}, "guess": 50}})
	must(t, err)
	if r := toolResultOf(spray); r.isError || r.text != "sprayed 51" {
		t.Fatalf("b__spray: %s", resultJSON(spray))
	}
	must(t, <-done)
	if r := toolResultOf(res); r.isError || r.text != "done" {
		t.Fatalf("a__progress: %s", resultJSON(res))
	}
	got := seen.all()
	own := 0
	for _, g := range got {
		tok, msg, _ := strings.Cut(g, ": ")
		if tok != "victim-tok" || strings.Contains(msg, "spray") || !strings.HasPrefix(msg, "step ") {
			t.Errorf("ci's stream got a foreign progress notification: %q", g)
			continue
		}
		own++
	}
	// The last one or two may cross the answer (docs/upstreams.md).
	if own < steps-2 {
		t.Errorf("ci got %d of its own %d progress notifications: %q", own, steps, got)
	}
	if !strings.Contains(log.String(), "progress notification was dropped") {
		t.Error("the gateway did not log the dropped notifications")
	}
}
