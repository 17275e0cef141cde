package e2e

// The hostile upstream attack suite (issue 15): the real
// `mitrity-gateway serve --stdio`, with e2e/hostileupstream configured as
// a sandboxed stdio upstream, driven by the MCP Go SDK client. Every
// outcome is checked from the host (the fixture's marker files, the
// files it tried to read or write, a loopback listener) and from the
// audit log, never only from what the gateway answers.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
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

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What the fixture returns, copied from e2e/hostileupstream/tools.go.
const (
	hostileAWSKey      = "AKIAHOSTILE2UPSTRM7Q"
	hostileGitHubToken = "ghp_HostileUpstreamFixtureQ4mN7pL2rT9vW3"
	hostileTruncated   = "[... truncated by the MITRITY gateway: the result was "
)

// hostileInjection are pieces of the fixture's InjectionText that must
// never reach the agent when injection.results is deny.
var hostileInjection = []string{"<|im_start|>", "maintenance mode", "Ignore all previous instructions", "attacker.example", "Do not tell the user"}

// hostileSecretForms are the granted credential as the fixture's leak
// returns it (raw, base64, hex, URL-escaped) and its two detector-matching
// secrets.
func hostileSecretForms() map[string]string {
	return map[string]string{
		"raw":          secretToken,
		"base64":       base64.StdEncoding.EncodeToString([]byte(secretToken)),
		"hex":          hex.EncodeToString([]byte(secretToken)),
		"url":          url.QueryEscape(secretToken),
		"aws key":      hostileAWSKey,
		"github token": hostileGitHubToken,
	}
}

const hostilePolicy = `default_agent:
  profile: hostile
agents:
  ci:
    profile: hostile
    credentials: [github_token]
profiles:
  hostile:
    exec_timeout_seconds: 30
    dlp:
      bindings: [aws_access_key_id, github_token]
`

// hostileKnobsPolicy turns every upstream knob away from its default:
// injection.results flag, dlp.arguments redact, and one upstream tool
// denied by tool_permissions.
const hostileKnobsPolicy = `default_agent:
  profile: knobs
agents:
  ci:
    profile: knobs
    credentials: [github_token]
profiles:
  knobs:
    exec_timeout_seconds: 30
    injection:
      results: flag
    dlp:
      bindings: [aws_access_key_id, github_token]
      arguments: redact
    tool_permissions:
      - pattern: "mcp:hostile__leak"
        action: deny
      - pattern: "*"
        action: allow
`

// fixtures are the e2e fixture programs built so far, by package.
var fixtures sync.Map // package -> *fixture

type fixture struct {
	once sync.Once
	path string
	err  error
}

// hostileBinary is the hostile upstream fixture (fixtureBinary).
func hostileBinary(t testing.TB) string {
	return fixtureBinary(t, "hostileupstream", "mitrity-hostile-upstream")
}

// fixtureBinary builds the fixture in e2e/<pkg> once per test binary, into
// a 0755 directory under /var/tmp: the sandbox's /tmp is a fresh tmpfs, so
// a binary under /tmp would not be visible to a sandboxed upstream, while
// /var/tmp is part of its read-only view of the host. It is removed when
// the test binary ends.
func fixtureBinary(t testing.TB, pkg, name string) string {
	t.Helper()
	v, _ := fixtures.LoadOrStore(pkg, &fixture{})
	f := v.(*fixture)
	f.once.Do(func() {
		root, err := workspaceRoot()
		if err != nil {
			f.err = err
			return
		}
		dir, err := os.MkdirTemp("/var/tmp", "mitrity-e2e-"+pkg+"-")
		if err != nil {
			f.err = err
			return
		}
		onExit(func() { os.RemoveAll(dir) })
		if f.err = os.Chmod(dir, 0o755); f.err != nil {
			return
		}
		p := filepath.Join(dir, name)
		cmd := exec.Command("go", "build", "-trimpath", "-o", p, "github.com/mitrity/mitrity/e2e/"+pkg)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			f.err = fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
			return
		}
		f.path = p
	})
	if f.err != nil {
		t.Fatal(f.err)
	}
	return f.path
}

// hostileOpts shape one gateway in front of the fixture.
type hostileOpts struct {
	policy string
	// agent is the gateway's --agent; "" is ci, which holds github_token.
	agent string
	// env is the upstream's environment on top of HOSTILE_SECRET.
	env map[string]string
	// timeout is call_timeout_seconds; 0 is 3.
	timeout int
	// entry are more lines of the upstream's entry (4 spaces in).
	entry string
	// wrap, when set, is a /bin/sh -c script that starts the server
	// (as "$0" "$@").
	wrap string
	// unlisted: the agent is shown none of the upstream's tools (it holds
	// no grant for the credential the upstream uses), so the start does
	// not wait for them; the gateway's own log says when it is connected.
	unlisted bool
	// prepare, when set, runs on the world before the gateway starts.
	prepare func(t *testing.T, w *world)
}

// hgw is one gateway serving the hostile upstream, and its client.
type hgw struct {
	w      *world
	state  string
	agent  string
	cs     *mcp.ClientSession
	stderr *syncBuffer
	// listChanged counts the gateway's notifications/tools/list_changed.
	listChanged atomic.Int32

	mu sync.Mutex
	// answered counts, per tool, the calls that got a tool result (a
	// JSON-RPC error is no call the gateway took).
	answered map[string]int
	// progress are the messages of the gateway's notifications/progress,
	// by progress token.
	progress map[any][]string
}

// startHostile starts a gateway in a bubblewrap world of its own, with
// the fixture as its upstream "hostile" (sandboxed: its state directory is
// its one writable root, owned by the run user).
func startHostile(t *testing.T, asUser bool, o hostileOpts) *hgw {
	t.Helper()
	bin := hostileBinary(t)
	w := newWorldBackend(t, asUser, o.policy, "bubblewrap")
	uid, gid := ensureUser(t)
	state := filepath.Join(w.dir, "hostile-state")
	must(t, os.Mkdir(state, 0o755))
	must(t, os.Chown(state, int(uid), int(gid)))
	if o.agent == "" {
		o.agent = "ci"
	}
	if o.timeout == 0 {
		o.timeout = 3
	}
	env := []string{`HOSTILE_SECRET: "${credential:github_token}"`}
	for _, k := range slices.Sorted(maps.Keys(o.env)) {
		env = append(env, fmt.Sprintf("%s: %q", k, o.env[k]))
	}
	cfg, err := os.ReadFile(w.cfg)
	must(t, err)
	// The admission socket is off: parallel gateways share the test user.
	s := string(cfg) + "admission:\n  enabled: false\nupstreams:\n  hostile:\n" +
		"    command: [" + wrapped(o.wrap, bin, "--state", state) + "]\n" +
		"    env: {" + strings.Join(env, ", ") + "}\n" +
		"    writable_roots: [" + state + "]\n" +
		"    call_timeout_seconds: " + strconv.Itoa(o.timeout) + "\n" + o.entry
	must(t, os.WriteFile(w.cfg, []byte(s), 0o644))

	if o.prepare != nil {
		o.prepare(t, w)
	}
	g := &hgw{w: w, state: state, agent: o.agent, stderr: &syncBuffer{}, answered: map[string]int{}, progress: map[any][]string{}}
	cmd := exec.Command(w.bin, "--log-level", "debug", "serve", "--stdio", "--config", w.cfg, "--admin-dir", w.admin, "--agent", o.agent)
	cmd.Dir = w.ws
	cmd.Env = []string{"PATH=/usr/bin:/bin", "E2E_GITHUB_TOKEN=" + secretToken, "E2E_OTHER_TOKEN=other-secret-value-123", "HOME=" + w.dir}
	cmd.Stderr = g.stderr
	if w.asUser != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: w.asUser}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-hostile", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { g.listChanged.Add(1) },
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			g.mu.Lock()
			defer g.mu.Unlock()
			g.progress[r.Params.ProgressToken] = append(g.progress[r.Params.ProgressToken], r.Params.Message)
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to serve --stdio: %v\n%s", err, g.stderr.String())
	}
	g.cs = cs
	t.Cleanup(func() {
		cs.Close()
		if t.Failed() {
			t.Logf("gateway log:\n%s", g.stderr.String())
		}
	})
	// The upstream's tools are served once it is up.
	if !o.unlisted {
		g.waitTools(t, "the upstream's tools", func(names []string) bool { return slices.Contains(names, "hostile__progress") })
	}
	return g
}

// tools is the gateway's tools/list, by name.
func (g *hgw) tools(t testing.TB) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := g.cs.ListTools(ctx, nil)
	must(t, err)
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

// waitTools polls tools/list until ok holds (10 s).
func (g *hgw) waitTools(t testing.TB, what string, ok func([]string) bool) []string {
	t.Helper()
	var names []string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if names = g.tools(t); ok(names) {
			return names
		}
		if time.Now().After(deadline) {
			t.Fatalf("tools/list never showed %s: %v", what, names)
		}
	}
}

// call calls a tool through the gateway (safe off the test's goroutine).
func (g *hgw) call(name string, args map[string]any) (*mcp.CallToolResult, error) {
	if args == nil {
		args = map[string]any{}
	}
	return g.callWith(&mcp.CallToolParams{Name: name, Arguments: args})
}

func (g *hgw) callWith(params *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := g.cs.CallTool(ctx, params)
	if err == nil {
		g.mu.Lock()
		g.answered[params.Name]++
		g.mu.Unlock()
	}
	return res, err
}

func (g *hgw) mustCall(t testing.TB, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := g.call(name, args)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// echo calls hostile__echo and checks it answers.
func (g *hgw) echo(t testing.TB, text string) {
	t.Helper()
	res := g.mustCall(t, "hostile__echo", map[string]any{"text": text})
	if r := toolResultOf(res); r.isError || r.text != "echo: "+text {
		t.Fatalf("echo %q: %s", text, hostileJSON(res))
	}
}

// shell runs echo in shell__execute and checks its output.
func (g *hgw) shell(t testing.TB, word string) {
	t.Helper()
	res := g.mustCall(t, "shell__execute", map[string]any{"command": "echo " + word})
	if r := toolResultOf(res); r.isError || r.stdout != word+"\n" || r.structured["sandbox_mode"] != "bubblewrap" {
		t.Fatalf("shell__execute: %s", hostileJSON(res))
	}
}

func hostileJSON(res *mcp.CallToolResult) string {
	b, err := json.Marshal(res)
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	return string(b)
}

// hostileText is every text content of a result, joined.
func hostileText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
			b.WriteString("\n")
		}
	}
	return b.String()
}

func hostileReason(res *mcp.CallToolResult) string {
	r, _ := toolResultOf(res).structured["reason"].(string)
	return r
}

// hostileRefused checks a tool result is the gateway's refusal for reason.
func hostileRefused(t testing.TB, what string, res *mcp.CallToolResult, reason string) {
	t.Helper()
	if !res.IsError || hostileReason(res) != reason {
		t.Fatalf("%s: want a refusal (%s), got %s", what, reason, hostileJSON(res))
	}
}

// callEvents are the audit events of the agent's calls of tool: the one
// event per call (upstream_call for a forwarded call, decision for one
// refused before it was sent).
func (g *hgw) callEvents(t testing.TB, tool string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, ev := range g.w.events(t) {
		if field(ev, "data", "tool") == tool && field(ev, "data", "agent") == g.agent &&
			(ev["type"] == "dev.mitrity.upstream_call" || ev["type"] == "dev.mitrity.decision") {
			out = append(out, ev)
		}
	}
	return out
}

// lastCallEvent is the event of the latest call of tool, which must be
// an upstream_call (the call was forwarded).
func (g *hgw) lastCallEvent(t testing.TB, tool string) map[string]any {
	t.Helper()
	evs := g.callEvents(t, tool)
	if len(evs) == 0 {
		t.Fatalf("no audit event for the call of %s", tool)
	}
	ev := evs[len(evs)-1]
	if ev["type"] != "dev.mitrity.upstream_call" || field(ev, "data", "upstream", "server") != "hostile" ||
		field(ev, "data", "surface") != "mcp" || field(ev, "data", "execution") != nil {
		t.Fatalf("the event of %s is not an upstream_call without an execution: %v", tool, ev)
	}
	return ev
}

// definitionEvents are the tool_definition events of a served name.
func (g *hgw) definitionEvents(t testing.TB, served string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, ev := range g.w.events(t) {
		if ev["type"] == "dev.mitrity.tool_definition" && field(ev, "data", "tool_definition", "served") == served {
			out = append(out, ev)
		}
	}
	return out
}

// eventsWith are the events whose data.upstream.method is method.
func (g *hgw) eventsWith(t testing.TB, method string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, ev := range g.w.events(t) {
		if field(ev, "data", "upstream", "method") == method {
			out = append(out, ev)
		}
	}
	return out
}

// checkOneEventPerCall: every call that got an answer left exactly one
// audit event, counted by the call's tool.
func (g *hgw) checkOneEventPerCall(t *testing.T) {
	t.Helper()
	g.mu.Lock()
	want := maps.Clone(g.answered)
	g.mu.Unlock()
	for _, tool := range slices.Sorted(maps.Keys(want)) {
		if tool == "shell__execute" {
			continue // a decision and an execution, linked: the shell's own suites count them
		}
		if n := len(g.callEvents(t, tool)); n != want[tool] {
			t.Errorf("%s: %d calls answered, %d audit events", tool, want[tool], n)
		}
	}
}

// marker reads one of the fixture's marker files ("" when absent).
func (g *hgw) marker(name string) string {
	b, _ := os.ReadFile(filepath.Join(g.state, name))
	return string(b)
}

// waitMarker polls for a marker file (10 s) until ok holds of its
// content (some markers are empty).
func (g *hgw) waitMarker(t testing.TB, name string, ok func(string) bool) string {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(filepath.Join(g.state, name)); err == nil && ok(string(b)) {
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("marker %s: %q", name, g.marker(name))
		}
	}
}

// markerInode is the inode of a marker file (0 when absent).
func (g *hgw) markerInode(t testing.TB, name string) uint64 {
	t.Helper()
	fi, err := os.Stat(filepath.Join(g.state, name))
	if err != nil {
		return 0
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

type hostileRecord struct {
	Method    string          `json:"method"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// received is what the upstream says it received (its "calls" marker).
func (g *hgw) received(t testing.TB) []hostileRecord {
	t.Helper()
	f, err := os.Open(filepath.Join(g.state, "calls"))
	if os.IsNotExist(err) {
		return nil
	}
	must(t, err)
	defer f.Close()
	var out []hostileRecord
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r hostileRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("calls marker: %v: %s", err, sc.Text())
		}
		out = append(out, r)
	}
	return out
}

func (g *hgw) receivedCalls(t testing.TB, tool string) []hostileRecord {
	t.Helper()
	var out []hostileRecord
	for _, r := range g.received(t) {
		if r.Method == "tools/call" && r.Name == tool {
			out = append(out, r)
		}
	}
	return out
}

// hostileNoSecrets checks that none of the secret forms is in b.
func hostileNoSecrets(t testing.TB, what string, b []byte) {
	t.Helper()
	for name, v := range hostileSecretForms() {
		if bytes.Contains(b, []byte(v)) {
			t.Errorf("%s holds the %s form of a secret (%s)", what, name, v)
		}
	}
}

// TestUpstreamHostile is issue 15's hostile upstream, through the gateway,
// for a root gateway (exec.run_as) and an unprivileged one. Each world is
// a gateway of its own; the cases that do not disturb the upstream share
// one.
func TestUpstreamHostile(t *testing.T) {
	forGatewayIdentities(t, func(t *testing.T, asUser bool) {
		for _, c := range []struct {
			name string
			f    func(*testing.T, bool)
		}{
			{"shared", hostileShared},
			{"faults", hostileFaults},
			{"rug-pull", hostileRugPull},
			{"withheld-from-start", hostileWithheldFromStart},
			{"profile-knobs", hostileKnobs},
			{"credential-not-granted", hostileNoGrant},
			{"unsandboxed-control", hostileUnsandboxed},
			{"orphan-holds-pipes", hostileOrphanHoldsPipes},
			{"secret-in-descriptions", hostileDescribedSecret},
			{"resource-uris", hostileResourceURIs},
			{"resource-uri-audit-nearly-full", hostileLongURINearlyFull},
		} {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				c.f(t, asUser)
			})
		}
	})
}

// hostileFilesPolicy denies the upstream's private files by the pattern
// docs/upstreams.md shows.
const hostileFilesPolicy = `default_agent:
  profile: files
agents:
  ci:
    profile: files
    credentials: [github_token]
profiles:
  files:
    exec_timeout_seconds: 30
    tool_permissions:
      - {pattern: "mcp:hostile__resource:file:///srv/data/private/*", action: deny}
      - {pattern: "*", action: allow}
`

// hostileResourceURIs: the upstream serves the template
// file:///srv/data/{+path} and the policy denies file:///srv/data/private/*.
// Another spelling of a private file (dot segments, a doubled slash, a
// percent-encoded letter, encoded dots, an encoded slash, a query
// a naive server reads as path) is refused before it is sent
// (invalid_argument, naming the normal form); a 1 MiB URI is refused
// likewise rather than forwarded with an event too large for its room.
// The upstream reads only the public file, and every read leaves one
// event, none larger than the room a forwarded call reserves.
func hostileResourceURIs(t *testing.T, asUser bool) {
	g := startHostile(t, asUser, hostileOpts{policy: hostileFilesPolicy, env: map[string]string{"HOSTILE_FILES": "1"}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	read := func(uri string) error {
		_, err := g.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		return err
	}
	if err := read("file:///srv/data/public/a"); err != nil {
		t.Fatalf("the public file: %v", err)
	}
	var je *jsonrpc.Error
	if err := read("file:///srv/data/private/key"); err == nil || !strings.Contains(err.Error(), "tool_permission") ||
		!errors.As(err, &je) || je.Code != -32001 { // the gateway's CodeRefused
		t.Errorf("the private file: %v (want the JSON-RPC code -32001)", err)
	}
	refused := []struct{ uri, says string }{
		{"file:///srv/data/public/../private/key", "read file:///srv/data/private/key instead"},
		{"file:///srv/data//private/key", "read file:///srv/data/private/key instead"},
		{"file:///srv/data/%70rivate/key", "read file:///srv/data/private/key instead"},
		{"file:///srv/data/./private/key", "read file:///srv/data/private/key instead"},
		{"file:///srv/data/public/%2e%2e/private/key", "read file:///srv/data/private/key instead"},
		{"file:///srv/data/public%2F..%2Fprivate/key", "(%2F)"},
		{"file:///srv/data/public/x?/../../private/key", "no query or fragment"},
		{"file:///srv/data/" + strings.Repeat("a", 1<<20), "at most 8192"},
	}
	for _, c := range refused {
		if err := read(c.uri); err == nil || !strings.Contains(err.Error(), "invalid_argument") || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%.60s: want invalid_argument (%s), got %v", c.uri, c.says, err)
		}
	}
	calls, err := os.ReadFile(filepath.Join(g.state, "calls"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var reads []string
	for _, line := range strings.Split(string(calls), "\n") {
		if strings.Contains(line, `"resources/read"`) {
			reads = append(reads, line)
		}
	}
	if len(reads) != 1 || !strings.Contains(reads[0], `"file:///srv/data/public/a"`) {
		t.Errorf("the upstream read %d resources: %.300q", len(reads), reads)
	}
	log, err := os.ReadFile(g.w.audit)
	must(t, err)
	var events, invalid int
	for _, line := range strings.Split(strings.TrimSpace(string(log)), "\n") {
		if len(line) > 64<<10 {
			t.Errorf("an audit event of %d bytes (the room reserved is 64 KiB): %.200s", len(line), line)
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("audit line is not JSON: %v: %.200s", err, line)
		}
		if field(ev, "data", "tool") != "resources/read" {
			continue
		}
		events++
		if field(ev, "data", "decision", "reason") == "invalid_argument" {
			invalid++
			if ev["type"] != "dev.mitrity.decision" || field(ev, "data", "upstream") != nil {
				t.Errorf("a refused read has an upstream card: %.300v", ev)
			}
		}
	}
	if events != 2+len(refused) || invalid != len(refused) {
		t.Errorf("%d events of reads, %d invalid_argument; want %d and %d", events, invalid, 2+len(refused), len(refused))
	}
}

// hostileLongURINearlyFull: the review's reproduction. With the audit
// log's tmpfs at about 490 KB free, a resources/read of a 1.2 MB URI was
// forwarded (the upstream read it) and its event could not be written
// (no space left on device): a call with no event. Now it is refused
// before anything is sent, and its refusal is on the log.
func hostileLongURINearlyFull(t *testing.T, asUser bool) {
	var fill func()
	g := startHostile(t, asUser, hostileOpts{policy: hostileFilesPolicy, env: map[string]string{"HOSTILE_FILES": "1"},
		prepare: func(t *testing.T, w *world) { fill, _ = auditOnTmpfs(t, w, 4<<20) }})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := g.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "file:///srv/data/public/a"}); err != nil {
		t.Fatalf("the public file: %v", err)
	}
	fill()
	filler := filepath.Join(filepath.Dir(g.w.audit), "filler")
	fi, err := os.Stat(filler)
	must(t, err)
	must(t, os.Truncate(filler, fi.Size()-490_000))
	uri := "file:///srv/data/" + strings.Repeat("b", 1200_000)
	_, err = g.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err == nil || !strings.Contains(err.Error(), "invalid_argument") || strings.Contains(err.Error(), "could not be recorded") {
		t.Errorf("the 1.2 MB URI: want invalid_argument, recorded; got %.300v", err)
	}
	calls, _ := os.ReadFile(filepath.Join(g.state, "calls"))
	if strings.Contains(string(calls), "bbbbbbbb") {
		t.Error("the upstream read the 1.2 MB URI")
	}
	var refused int
	for _, ev := range g.w.events(t) {
		if field(ev, "data", "tool") == "resources/read" && field(ev, "data", "decision", "reason") == "invalid_argument" {
			refused++
		}
	}
	if refused != 1 {
		t.Errorf("%d invalid_argument events of the read, want 1", refused)
	}
}

// hostileDescribedSecret: the upstream lists the granted credential (in
// every form) in the descriptions of a tool, a resource and a prompt. The
// agent's tools/list, resources/list and prompts/list carry none of it,
// each description redacted in place, and the tool still works.
func hostileDescribedSecret(t *testing.T, asUser bool) {
	g := startHostile(t, asUser, hostileOpts{policy: hostilePolicy, env: map[string]string{"HOSTILE_DESCRIBE_SECRET": "1"}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	descs := map[string]string{}
	tools, err := g.cs.ListTools(ctx, nil)
	must(t, err)
	for _, x := range tools.Tools {
		descs["tool "+x.Name] = x.Description
	}
	resources, err := g.cs.ListResources(ctx, nil)
	must(t, err)
	for _, x := range resources.Resources {
		descs["resource "+x.URI] = x.Description
	}
	prompts, err := g.cs.ListPrompts(ctx, nil)
	must(t, err)
	for _, x := range prompts.Prompts {
		descs["prompt "+x.Name] = x.Description
	}
	for _, k := range []string{"tool hostile__echo", "resource hostile://readme", "prompt hostile__greet"} {
		d, ok := descs[k]
		if !ok {
			t.Errorf("%s is not listed: %v", k, slices.Sorted(maps.Keys(descs)))
			continue
		}
		hostileNoSecrets(t, k+"'s description", []byte(d))
		if strings.Count(d, "[REDACTED:credential:github_token]") != 4 {
			t.Errorf("%s's description is not redacted in place: %q", k, d)
		}
	}
	for _, b := range [][]byte{mustJSON(t, tools), mustJSON(t, resources), mustJSON(t, prompts)} {
		hostileNoSecrets(t, "a listing", b)
	}
	g.echo(t, "still served")
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	must(t, err)
	return b
}

// wrapped is the entry's command: argv, or a sh -c script starting it.
func wrapped(script string, argv ...string) string {
	if script != "" {
		argv = append([]string{"/bin/sh", "-c", strconv.Quote(script)}, argv...)
	}
	return strings.Join(argv, ", ")
}

// hostileOrphanHoldsPipes: without the kernel sandbox a process the
// server leaves behind in a session of its own escapes the kill and keeps
// the server's stdin and stdout open. Its crash must still end the call in
// flight and restart the server (the gateway's own pipe ends close a
// second after the server has gone), not leave the upstream hanging.
func hostileOrphanHoldsPipes(t *testing.T, asUser bool) {
	tag := fmt.Sprintf("600.%d", time.Now().UnixNano()%1000000)
	t.Cleanup(func() {
		for _, pid := range procsWithArgv("sleep", tag) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	g := startHostile(t, asUser, hostileOpts{policy: hostilePolicy, timeout: 30, entry: "    sandbox: none\n",
		wrap: `setsid sleep ` + tag + ` & exec "$0" "$@"`})
	started := g.markerInode(t, "started")
	start := time.Now()
	res := g.mustCall(t, "hostile__crash", nil)
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the crash was answered after %v", d)
	}
	hostileRefused(t, "crash with an orphan holding the pipes", res, "upstream_unavailable")
	if len(procsWithArgv("sleep", tag)) == 0 {
		t.Fatal("the orphan is not running: the case shows nothing")
	}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		r, err := g.call("hostile__echo", map[string]any{"text": "back"})
		if err == nil && !r.IsError && hostileText(r) == "echo: back\n" && g.markerInode(t, "started") != started {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the upstream is not back 15 s after its crash: %v %s", err, hostileJSON(r))
		}
	}
}

// procsWithArgv lists the host's processes whose argv is exactly argv.
func procsWithArgv(argv ...string) []int {
	want := strings.Join(argv, "\x00") + "\x00"
	var pids []int
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile("/proc/" + d.Name() + "/cmdline"); err == nil && string(b) == want {
			pids = append(pids, pid)
		}
	}
	return pids
}

// hostileShared runs the cases that leave the upstream up, one after the
// other, on one gateway.
func hostileShared(t *testing.T, asUser bool) {
	g := startHostile(t, asUser, hostileOpts{policy: hostilePolicy,
		// A proxy to refuse through: the upstream's allowlist names one
		// host, never contacted.
		entry: "    egress: [allowed.mitrity.invalid]\n"})
	t.Run("leak", func(t *testing.T) { hostileLeak(t, g) })
	t.Run("progress-messages", func(t *testing.T) { hostileProgress(t, g) })
	t.Run("inject-deny", func(t *testing.T) { hostileInjectDeny(t, g) })
	t.Run("flood", func(t *testing.T) { hostileFlood(t, g) })
	t.Run("hang", func(t *testing.T) { hostileHang(t, g) })
	t.Run("server-requests", func(t *testing.T) { hostileServerRequests(t, g) })
	t.Run("egress", func(t *testing.T) { hostileEgress(t, g) })
	t.Run("isolation", func(t *testing.T) { hostileIsolation(t, g) })
	t.Run("dlp-arguments-deny", func(t *testing.T) { hostileDLPDeny(t, g) })
	t.Run("one-event-per-call", g.checkOneEventPerCall)
	b, err := os.ReadFile(g.w.audit)
	must(t, err)
	hostileNoSecrets(t, "the audit file", b)
}

// 3. The granted credential in every form and two detector-matching
// secrets, in text, structuredContent and an embedded resource: none
// reaches the agent or the audit log.
func hostileLeak(t *testing.T, g *hgw) {
	res := g.mustCall(t, "hostile__leak", nil)
	j := hostileJSON(res)
	hostileNoSecrets(t, "the leak result", []byte(j))
	// Redacted in place, not dropped: each of the three places still
	// carries its markers.
	var structured map[string]any
	b, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &structured)
	var resource string
	for _, c := range res.Content {
		if er, ok := c.(*mcp.EmbeddedResource); ok && er.Resource != nil {
			resource = er.Resource.Text
		}
	}
	if res.IsError || !strings.Contains(hostileText(res), "[REDACTED:credential:github_token]") ||
		structured["raw"] != "[REDACTED:credential:github_token]" || !strings.Contains(fmt.Sprint(structured["aws_access_key_id"]), "REDACTED") ||
		!strings.Contains(resource, "REDACTED") {
		t.Errorf("the leak result is not redacted in place: %s", j)
	}
	ev := g.lastCallEvent(t, "hostile__leak")
	if rc, _ := field(ev, "data", "upstream", "redaction_count").(float64); rc <= 0 ||
		field(ev, "data", "upstream", "status") != "completed" || field(ev, "data", "upstream", "method") != "tools/call" ||
		field(ev, "data", "upstream", "name") != "leak" {
		t.Errorf("leak's event: %v", field(ev, "data", "upstream"))
	}
	b, err := os.ReadFile(g.w.audit)
	must(t, err)
	hostileNoSecrets(t, "the audit file", b)
}

// 3b. The leak's secrets and the injection in the messages of the
// upstream's notifications/progress, which the gateway passes on to the
// agent: each notification's message is redacted as a result is
// (the credential in every form, the profile's DLP detectors) or withheld
// (an injection, under the default injection.results: deny).
func hostileProgress(t *testing.T, g *hgw) {
	for _, c := range []struct{ say, want string }{
		{"leak", "[REDACTED:credential:github_token]"},
		{"inject", "withheld: it reads as a prompt injection"},
	} {
		t.Run(c.say, func(t *testing.T) {
			tok := "e2e-progress-" + c.say
			params := &mcp.CallToolParams{Name: "hostile__progress", Arguments: map[string]any{"steps": 2, "say": c.say}}
			params.SetProgressToken(tok)
			res, err := g.callWith(params)
			if err != nil || res.IsError || hostileText(res) != "done\n" {
				t.Fatalf("progress: %v %s", err, hostileJSON(res))
			}
			// The first is sent 100 ms before the answer, so it is passed
			// on before it; the last, sent the moment before, can be
			// handled after the answer and is then dropped (docs/upstreams.md,
			// Progress).
			time.Sleep(200 * time.Millisecond)
			g.mu.Lock()
			msgs := slices.Clone(g.progress[tok])
			g.mu.Unlock()
			if len(msgs) < 1 || len(msgs) > 2 {
				t.Fatalf("%d progress notifications, want 1 or 2: %q", len(msgs), msgs)
			}
			for _, m := range msgs {
				hostileNoSecrets(t, "a progress message", []byte(m))
				for _, s := range hostileInjection {
					if strings.Contains(m, s) {
						t.Errorf("a progress message carries the injection's %q: %q", s, m)
					}
				}
				if !strings.Contains(m, c.want) {
					t.Errorf("progress message %q, want it to hold %q", m, c.want)
				}
			}
		})
	}
}

// 4. An injection in the result, under the default injection.results
// (deny): a refusal the model can read, none of the injection.
func hostileInjectDeny(t *testing.T, g *hgw) {
	res := g.mustCall(t, "hostile__inject", nil)
	hostileRefused(t, "inject", res, "prompt_injection")
	j := hostileJSON(res)
	text := hostileText(res)
	for _, s := range hostileInjection[1:] {
		if strings.Contains(text, s) {
			t.Errorf("the refusal carries the injection's %q: %s", s, j)
		}
	}
	t.Run("no-quoted-role-marker", func(t *testing.T) {
		if strings.Contains(text, hostileInjection[0]) {
			t.Errorf("the refusal carries the injection's %q: %s", hostileInjection[0], j)
		}
	})
	t.Run("audited", func(t *testing.T) {
		if strings.Contains(j, "could not be recorded") {
			t.Errorf("the call could not be recorded: %s", j)
		}
		evs := g.callEvents(t, "hostile__inject")
		if len(evs) != 1 {
			t.Fatalf("%d events for one call of hostile__inject", len(evs))
		}
		ev := g.lastCallEvent(t, "hostile__inject")
		if field(ev, "data", "upstream", "injection_action") != "deny" || field(ev, "data", "upstream", "injection") == nil {
			t.Errorf("inject's event: %v", field(ev, "data", "upstream"))
		}
	})
}

// 5. 8 MiB of output: capped at result_max_bytes (1 MiB by default) with
// the marker, audited as truncated; the gateway serves on.
func hostileFlood(t *testing.T, g *hgw) {
	res := g.mustCall(t, "hostile__flood", map[string]any{"bytes": 8 << 20})
	j := hostileJSON(res)
	text := hostileText(res)
	if res.IsError || len(j) > 1<<20+4096 || !strings.Contains(text, hostileTruncated+"8388") || !strings.Contains(text, "the limit is 1048576") ||
		!strings.HasPrefix(text, "flood flood ") {
		t.Errorf("flood: %d bytes of JSON, ends %q", len(j), text[max(0, len(text)-300):])
	}
	ev := g.lastCallEvent(t, "hostile__flood")
	if field(ev, "data", "upstream", "truncated") != true || field(ev, "data", "upstream", "status") != "completed" {
		t.Errorf("flood's event: %v", field(ev, "data", "upstream"))
	}
	if rb, _ := field(ev, "data", "upstream", "result_bytes").(float64); rb < 8<<20 {
		t.Errorf("flood's event: result_bytes %v, want what the upstream sent (over 8 MiB)", rb)
	}
	g.echo(t, "after the flood")
}

// 6. A call that never returns: answered upstream_timeout within the call
// timeout, cancelled upstream (the fixture says so on the host), while
// the shell and other calls go on.
func hostileHang(t *testing.T, g *hgw) {
	type out struct {
		res *mcp.CallToolResult
		err error
		d   time.Duration
	}
	done := make(chan out, 1)
	start := time.Now()
	go func() {
		res, err := g.call("hostile__hang", nil)
		done <- out{res, err, time.Since(start)}
	}()
	g.waitMarker(t, "hang-started", func(string) bool { return true })
	// During the hang: another call of the same upstream answers at once
	// (not queued behind the hang), and the shell serves.
	g.echo(t, "during the hang")
	select {
	case o := <-done:
		t.Fatalf("the hang returned (%v) before an echo made during it: %s", o.d, hostileJSON(o.res))
	default:
	}
	g.shell(t, "during-the-hang")
	var o out
	select {
	case o = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the hung call is still waiting 10 s after it started (call_timeout_seconds: 3)")
	}
	if o.err != nil {
		t.Fatalf("hang: %v", o.err)
	}
	if o.d < 2500*time.Millisecond || o.d > 6*time.Second {
		t.Errorf("hang answered after %v; call_timeout_seconds is 3", o.d)
	}
	hostileRefused(t, "hang", o.res, "upstream_timeout")
	if m := g.waitMarker(t, "hang-cancelled", func(string) bool { return true }); !strings.Contains(m, "cancel") {
		t.Errorf("hang-cancelled: %q", m)
	}
	ev := g.lastCallEvent(t, "hostile__hang")
	if field(ev, "data", "upstream", "status") != "timed_out" || field(ev, "data", "upstream", "reason") != "upstream_timeout" {
		t.Errorf("hang's event: %v", field(ev, "data", "upstream"))
	}
	g.echo(t, "after the hang")
	g.shell(t, "after-the-hang")
}

// 8. Requests from the upstream to the client (sampling, elicitation):
// refused, and each audited.
func hostileServerRequests(t *testing.T, g *hgw) {
	for _, c := range []struct{ tool, method, marker, prefix, answered string }{
		{"hostile__sample", "sampling/createMessage", "sample-result", "sampling: refused", "sampling: answered"},
		{"hostile__elicit", "elicitation/create", "elicit-result", "elicitation: refused", "elicitation: answered"},
	} {
		t.Run(c.method, func(t *testing.T) {
			before := len(g.eventsWith(t, c.method))
			res := g.mustCall(t, c.tool, nil)
			if !strings.Contains(hostileText(res), "refused") || strings.Contains(hostileText(res), c.answered) {
				t.Errorf("%s does not report the request refused: %s", c.tool, hostileJSON(res))
			}
			// From the host: the upstream never got an answer.
			if m := g.marker(c.marker); m == "" || strings.Contains(m, "answered") {
				t.Errorf("%s: %q", c.marker, m)
			}
			evs := g.eventsWith(t, c.method)
			if len(evs) != before+1 {
				t.Fatalf("%d events of %s for one request", len(evs)-before, c.method)
			}
			ev := evs[len(evs)-1]
			if ev["type"] != "dev.mitrity.upstream_call" || field(ev, "data", "decision", "reason") != "upstream_request_refused" ||
				field(ev, "data", "upstream", "reason") != "upstream_request_refused" || field(ev, "data", "upstream", "server") != "hostile" {
				t.Errorf("the %s event: %v", c.method, ev)
			}
			g.lastCallEvent(t, c.tool)
			t.Run("call-outcome", func(t *testing.T) {
				if hostileReason(res) != "upstream_request_refused" && !strings.HasPrefix(hostileText(res), c.prefix) {
					t.Errorf("%s: want the refusal (upstream_request_refused) or the upstream's own report, got %s", c.tool, hostileJSON(res))
				}
				ev := g.lastCallEvent(t, c.tool)
				if field(ev, "data", "upstream", "status") == "killed" || field(ev, "data", "upstream", "reason") == "upstream_unavailable" {
					t.Errorf("%s is audited as if the upstream had gone away: %v", c.tool, field(ev, "data", "upstream"))
				}
			})
		})
	}
}

// 9. Phoning home: a loopback listener on the host gets no connection,
// and an unlisted host is refused by the egress proxy.
func hostileEgress(t *testing.T, g *hgw) {
	addr, accepted := hostileListener(t)
	for _, args := range []map[string]any{
		{"addr": addr, "url": "http://example.com/"},
		{"url": "http://" + addr + "/"},
	} {
		res := g.mustCall(t, "hostile__connect", args)
		r := toolResultOf(res)
		report := g.marker("connect-result")
		for _, k := range []string{"tcp", "http"} {
			if _, asked := args[map[string]string{"tcp": "addr", "http": "url"}[k]]; !asked {
				continue
			}
			line, _ := r.structured[k].(string)
			if line == "" || strings.Contains(line, "connected") || strings.Contains(line, " 200 ") ||
				!strings.Contains(line, "failed") && !strings.Contains(line, "403") {
				t.Errorf("connect %v: %s reached something: %q", args, k, line)
			}
		}
		if report == "" || strings.Contains(report, "connected") || strings.Contains(report, " 200 ") {
			t.Errorf("connect-result on the host: %q", report)
		}
	}
	time.Sleep(200 * time.Millisecond)
	if n := accepted.Load(); n != 0 {
		t.Errorf("the host's loopback listener accepted %d connections from the upstream", n)
	}
	// The unlisted host was the proxy's to refuse, and it says so.
	deadline := time.Now().Add(5 * time.Second)
	for !hostileProxyRefused(g.stderr.String(), "example.com") {
		if time.Now().After(deadline) {
			t.Errorf("no egress proxy refusal of example.com in the gateway's log")
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func hostileProxyRefused(log, host string) bool {
	for l := range strings.Lines(log) {
		if strings.Contains(l, host) && strings.Contains(l, "mitrity-egressproxy") && strings.Contains(l, "not_allowlisted") {
			return true
		}
	}
	return false
}

// 10. The upstream's sandbox: the run user's ~/.ssh is masked, and writes
// outside its writable roots never reach the host.
func hostileIsolation(t *testing.T, g *hgw) {
	home := "/home/" + testUser
	sshDir := filepath.Join(home, ".ssh")
	keyFile, secret := hostileSSHKey(t)
	res := g.mustCall(t, "hostile__readfile", map[string]any{"path": keyFile})
	if j := hostileJSON(res); !res.IsError || strings.Contains(j, secret) {
		t.Errorf("the upstream read %s: %s", keyFile, j)
	}

	// Writes: inside its writable root they land, anywhere else not.
	inside := filepath.Join(g.state, "inside-"+secret)
	res = g.mustCall(t, "hostile__writefile", map[string]any{"path": inside, "content": "in"})
	if b, err := os.ReadFile(inside); res.IsError || err != nil || string(b) != "in" {
		t.Errorf("a write in the upstream's writable root: %v %q %s", err, b, hostileJSON(res))
	}
	for _, p := range []string{
		filepath.Join(home, "pwned-"+secret),       // the run user's home
		filepath.Join(g.w.ws, "pwned-"+secret),     // the shell's workspace (0777 on the host), not the upstream's
		filepath.Join("/var/tmp", "pwned-"+secret), // world-writable on the host
		filepath.Join(sshDir, "authorized_keys-"+secret[len(secret)-8:]),
	} {
		res := g.mustCall(t, "hostile__writefile", map[string]any{"path": p, "content": "ssh-ed25519 AAAA attacker"})
		if _, err := os.Lstat(p); err == nil {
			os.Remove(p)
			t.Errorf("the upstream wrote %s on the host: %s", p, hostileJSON(res))
		} else if !res.IsError {
			t.Errorf("writefile %s reports success, yet nothing is on the host: %s", p, hostileJSON(res))
		}
	}
}

// hostileSSHKey puts a key of a random value in the run user's ~/.ssh,
// readable by that user on the host (checked), and returns its path and
// value.
func hostileSSHKey(t *testing.T) (path, secret string) {
	t.Helper()
	uid, gid := ensureUser(t)
	sshDir := filepath.Join("/home", testUser, ".ssh")
	secret = marker(t)
	must(t, os.MkdirAll(sshDir, 0o700))
	must(t, os.Chown(sshDir, int(uid), int(gid)))
	path = filepath.Join(sshDir, "upstream_e2e_"+secret[len(secret)-8:])
	must(t, os.WriteFile(path, []byte(secret), 0o600))
	must(t, os.Chown(path, int(uid), int(gid)))
	t.Cleanup(func() { os.Remove(path) })
	ctl := exec.Command("cat", path)
	ctl.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	if out, err := ctl.Output(); err != nil || string(out) != secret {
		t.Fatalf("control: the run user cannot read %s on the host: %v %q", path, err, out)
	}
	return path, secret
}

// hostileListener is a loopback listener on the host that counts the
// connections it accepts.
func hostileListener(t *testing.T) (addr string, accepted *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	t.Cleanup(func() { ln.Close() })
	accepted = new(atomic.Int32)
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
	return ln.Addr().String(), accepted
}

// hostileUnsandboxed is the control of the isolation and egress cases:
// the same upstream under sandbox: none reads the key, reaches the
// listener and writes the home directory, so those cases can tell.
func hostileUnsandboxed(t *testing.T, asUser bool) {
	g := startHostile(t, asUser, hostileOpts{policy: hostilePolicy, entry: "    sandbox: none\n"})
	keyFile, secret := hostileSSHKey(t)
	if res := g.mustCall(t, "hostile__readfile", map[string]any{"path": keyFile}); res.IsError || !strings.Contains(hostileText(res), secret) {
		t.Errorf("control: the unsandboxed upstream cannot read %s: %s", keyFile, hostileJSON(res))
	}
	addr, accepted := hostileListener(t)
	g.mustCall(t, "hostile__connect", map[string]any{"addr": addr})
	// The dial returned: the listener's accept may lag it a moment.
	for deadline := time.Now().Add(5 * time.Second); accepted.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if accepted.Load() == 0 {
		t.Errorf("control: the unsandboxed upstream did not reach the listener: %q", g.marker("connect-result"))
	}
	p := filepath.Join("/home", testUser, "pwned-"+secret)
	t.Cleanup(func() { os.Remove(p) })
	if res := g.mustCall(t, "hostile__writefile", map[string]any{"path": p, "content": "x"}); res.IsError {
		t.Errorf("control: the unsandboxed upstream cannot write %s: %s", p, hostileJSON(res))
	} else if _, err := os.Stat(p); err != nil {
		t.Errorf("control: %v", err)
	}
	t.Run("one-event-per-call", g.checkOneEventPerCall)
}

// 12. A secret in the arguments, under dlp.arguments: deny (the default):
// refused, and the upstream never received it; nor hidden under a member
// named twice.
func hostileDLPDeny(t *testing.T, g *hgw) {
	res := g.mustCall(t, "hostile__echo", map[string]any{"text": "deploy with " + hostileAWSKey})
	hostileRefused(t, "echo with a secret", res, "dlp_argument")
	for _, r := range g.received(t) {
		if strings.Contains(string(r.Arguments), hostileAWSKey) {
			t.Errorf("the upstream received the secret: %+v", r)
		}
	}
	evs := g.callEvents(t, "hostile__echo")
	if ev := evs[len(evs)-1]; field(ev, "data", "decision", "reason") != "dlp_argument" || field(ev, "data", "decision", "outcome") != "deny" {
		t.Errorf("the refusal's event: %v", ev)
	}
	// The secret under a member named twice: the stages read the last
	// value, and the bytes as sent (the first value too) would go on.
	// Refused before anything is sent.
	before := len(g.received(t))
	res, err := g.callWith(&mcp.CallToolParams{Name: "hostile__echo",
		Arguments: json.RawMessage(`{"text":"deploy with ` + hostileAWSKey + `","text":"hello"}`)})
	if err != nil {
		t.Fatalf("echo with a repeated member: %v", err)
	}
	hostileRefused(t, "echo with a repeated member", res, "invalid_argument")
	if got := g.received(t); len(got) != before {
		t.Errorf("the upstream received the call with a repeated member: %+v", got[before:])
	}
	evs = g.callEvents(t, "hostile__echo")
	if ev := evs[len(evs)-1]; field(ev, "data", "decision", "reason") != "invalid_argument" || field(ev, "data", "decision", "outcome") != "deny" {
		t.Errorf("the refusal's event: %v", ev)
	}
}

// hostileFaults: 7. a crash mid-call and 11. garbage on the stdio stream,
// each with a call in flight: clear errors, no hang, a restarted upstream
// and a shell that serves throughout.
func hostileFaults(t *testing.T, asUser bool) {
	// A long call timeout: the call in flight must end because its upstream
	// died, not because its time ran out.
	g := startHostile(t, asUser, hostileOpts{policy: hostilePolicy, timeout: 30})
	for _, c := range []struct {
		tool, why string
	}{
		{"hostile__crash", "exits mid-call"},
		{"hostile__garbage", "writes a line that is not JSON-RPC"},
	} {
		t.Run(strings.TrimPrefix(c.tool, "hostile__"), func(t *testing.T) {
			// The pid inside the sandbox's pid namespace is the same for
			// every start: a start is told by the marker's new inode (it
			// is replaced by a rename).
			pid := g.waitMarker(t, "started", func(string) bool { return true })
			started := g.markerInode(t, "started")
			os.Remove(filepath.Join(g.state, "hang-started"))
			type out struct {
				res *mcp.CallToolResult
				err error
			}
			inFlight := make(chan out, 1)
			go func() {
				res, err := g.call("hostile__hang", nil)
				inFlight <- out{res, err}
			}()
			g.waitMarker(t, "hang-started", func(string) bool { return true })
			start := time.Now()
			res := g.mustCall(t, c.tool, nil)
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("%s answered after %v", c.tool, d)
			}
			hostileRefused(t, c.tool+" ("+c.why+")", res, "upstream_unavailable")
			var o out
			select {
			case o = <-inFlight:
			case <-time.After(10 * time.Second):
				t.Fatalf("the call in flight when the upstream %s is still waiting", c.why)
			}
			if o.err != nil {
				t.Fatalf("the call in flight: %v", o.err)
			}
			hostileRefused(t, "the call in flight", o.res, "upstream_unavailable")
			for _, tool := range []string{c.tool, "hostile__hang"} {
				ev := g.lastCallEvent(t, tool)
				if field(ev, "data", "upstream", "status") != "killed" || field(ev, "data", "upstream", "reason") != "upstream_unavailable" {
					t.Errorf("%s's event: %v", tool, field(ev, "data", "upstream"))
				}
			}
			if c.tool == "hostile__crash" {
				if m := g.marker("crashing"); strings.TrimSpace(m) != strings.TrimSpace(pid) {
					t.Errorf("crashing marker %q, started %q", m, pid)
				}
			}
			// The shell never depended on it.
			g.shell(t, "while-restarting")
			// Restarted by the gateway: a new process, and calls answer.
			for deadline := time.Now().Add(10 * time.Second); g.markerInode(t, "started") == started; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the upstream was not started again")
				}
			}
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				res, err := g.call("hostile__echo", map[string]any{"text": "restarted"})
				if err == nil && !res.IsError && hostileText(res) == "echo: restarted\n" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the upstream is not back 10 s after it %s: %v %s", c.why, err, hostileJSON(res))
				}
			}
			g.shell(t, "after-the-restart")
		})
	}
	t.Run("one-event-per-call", g.checkOneEventPerCall)
}

// hostileRugPull: 2. a definition that changes mid-session is withheld
// until an operator approves it through the approvals queue.
func hostileRugPull(t *testing.T, asUser bool) {
	g := startHostile(t, asUser, hostileOpts{policy: hostilePolicy})
	if r := g.mustCall(t, "hostile__notes", nil); r.IsError || hostileText(r) != "notes: nothing saved\n" {
		t.Fatalf("notes before the change: %s", hostileJSON(r))
	}
	first := g.definitionEvents(t, "hostile__notes")
	if len(first) != 1 || field(first[0], "data", "tool_definition", "state") != "first_seen" {
		t.Fatalf("notes' first definition events: %v", first)
	}
	firstSHA := field(first[0], "data", "tool_definition", "sha256")
	notified := g.listChanged.Load()

	if r := g.mustCall(t, "hostile__mutate", nil); r.IsError || hostileText(r) != "mutated\n" {
		t.Fatalf("mutate: %s", hostileJSON(r))
	}
	if g.marker("mutated") == "" {
		t.Fatal("no mutated marker on the host")
	}
	g.waitTools(t, "notes withdrawn", func(n []string) bool { return !slices.Contains(n, "hostile__notes") })
	// The SDK sends list_changed a moment after the change (it batches
	// them): the list can be read changed before the notification lands.
	for deadline := time.Now().Add(10 * time.Second); g.listChanged.Load() == notified && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if g.listChanged.Load() == notified {
		t.Error("the agent was not told the list changed")
	}
	var withheld map[string]any
	for _, ev := range g.definitionEvents(t, "hostile__notes") {
		if field(ev, "data", "tool_definition", "state") == "withheld" {
			withheld = ev
		}
	}
	if withheld == nil || field(withheld, "data", "tool_definition", "reason") != "tool_definition_changed" ||
		field(withheld, "data", "tool_definition", "previous_sha256") != firstSHA ||
		field(withheld, "data", "tool_definition", "sha256") == firstSHA || field(withheld, "data", "tool_definition", "sha256") == nil {
		t.Fatalf("no withheld tool_definition event with both hashes: %v", withheld)
	}
	newSHA := field(withheld, "data", "tool_definition", "sha256").(string)
	hostileWithheldCall(t, g, "hostile__notes", "tool_definition_changed")

	// The operator approves the new definition.
	id := waitHold(t, g.w)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if l := g.w.gw(t, ctx, "", "approvals", "list", "--admin-dir", g.w.admin); !strings.Contains(l.stdout, "hostile__notes") || !strings.Contains(l.stdout, newSHA) {
		t.Errorf("the approvals queue does not name the tool and its new hash:\n%s", l.stdout)
	}
	if a := g.w.gw(t, ctx, "", "approvals", "approve", "--admin-dir", g.w.admin, id); a.code != 0 {
		t.Fatalf("approve: %+v", a)
	}
	g.waitTools(t, "notes back", func(n []string) bool { return slices.Contains(n, "hostile__notes") })
	if r := g.mustCall(t, "hostile__notes", nil); r.IsError || hostileText(r) != "notes: nothing saved\n" {
		t.Fatalf("notes after the approval: %s", hostileJSON(r))
	}
	var approved bool
	for _, ev := range g.definitionEvents(t, "hostile__notes") {
		if field(ev, "data", "tool_definition", "state") == "approved" && field(ev, "data", "tool_definition", "sha256") == newSHA {
			approved = true
		}
	}
	if !approved {
		t.Errorf("no approved tool_definition event for %s: %v", newSHA, g.definitionEvents(t, "hostile__notes"))
	}
	if n := len(g.receivedCalls(t, "notes")); n != 2 {
		t.Errorf("the upstream received %d calls of notes, want the 2 made while it was served", n)
	}
	t.Run("one-event-per-call", g.checkOneEventPerCall)
}

// hostileWithheldCall: a call of a withheld tool is refused, never reaches
// the upstream, and is answered with a closed reason and audited.
func hostileWithheldCall(t *testing.T, g *hgw, tool, reason string) {
	t.Helper()
	before := len(g.receivedCalls(t, strings.TrimPrefix(tool, "hostile__")))
	res, err := g.call(tool, nil)
	if err == nil && !res.IsError {
		t.Fatalf("a withheld %s was called: %s", tool, hostileJSON(res))
	}
	if n := len(g.receivedCalls(t, strings.TrimPrefix(tool, "hostile__"))); n != before {
		t.Errorf("the upstream received the call of the withheld %s", tool)
	}
	t.Run("closed-reason-audited", func(t *testing.T) {
		if err != nil {
			t.Fatalf("the call of a withheld %s is a protocol error, not a refusal: %v", tool, err)
		}
		if r := hostileReason(res); r != reason && r != "upstream_unavailable" {
			t.Errorf("the call of a withheld %s: reason %q, want %s", tool, r, reason)
		}
		if evs := g.callEvents(t, tool); len(evs) == 0 || field(evs[len(evs)-1], "data", "decision", "outcome") != "deny" {
			t.Errorf("the refused call of %s is not audited", tool)
		}
	})
}

// hostileWithheldFromStart: 1. a poisoned description and a definition
// that is not the policy's pin are never served.
func hostileWithheldFromStart(t *testing.T, asUser bool) {
	wrongPin := strings.Repeat("0", 64)
	g := startHostile(t, asUser, hostileOpts{policy: hostilePolicy + "tool_pins:\n  hostile__echo: \"" + wrongPin + "\"\n",
		env: map[string]string{"HOSTILE_POISON": "1"}})
	names := g.tools(t)
	for _, n := range []string{"hostile__notes", "hostile__echo"} {
		if slices.Contains(names, n) {
			t.Errorf("tools/list serves %s: %v", n, names)
		}
	}
	if !slices.Contains(names, "hostile__leak") || !slices.Contains(names, "shell__execute") {
		t.Errorf("the other tools are not served: %v", names)
	}
	for _, c := range []struct{ served, reason, previous string }{
		{"hostile__notes", "tool_description_injection", ""},
		{"hostile__echo", "tool_definition_changed", wrongPin},
	} {
		evs := g.definitionEvents(t, c.served)
		var ok bool
		for _, ev := range evs {
			d := func(k string) any { return field(ev, "data", "tool_definition", k) }
			if d("state") == "withheld" && d("reason") == c.reason && field(ev, "data", "decision", "outcome") == "deny" &&
				(c.previous == "" || d("previous_sha256") == c.previous && d("sha256") != c.previous) {
				ok = true
			}
			if d("state") == "first_seen" {
				t.Errorf("%s was accepted: %v", c.served, ev)
			}
		}
		if !ok {
			t.Errorf("no withheld (%s) tool_definition event for %s: %v", c.reason, c.served, evs)
		}
		hostileWithheldCall(t, g, c.served, c.reason)
	}
	t.Run("one-event-per-call", g.checkOneEventPerCall)
}

// hostileKnobs: the profile knobs turned: 4. injection.results: flag, 12.
// dlp.arguments: redact, 5. a smaller result_max_bytes, and 13. list and
// call agree under tool_permissions.
func hostileKnobs(t *testing.T, asUser bool) {
	g := startHostile(t, asUser, hostileOpts{policy: hostileKnobsPolicy, entry: "    result_max_bytes: 65536\n"})
	t.Run("inject-flag", func(t *testing.T) {
		res := g.mustCall(t, "hostile__inject", nil)
		if res.IsError || len(res.Content) < 2 {
			t.Fatalf("inject flagged: %s", hostileJSON(res))
		}
		warn, _ := res.Content[0].(*mcp.TextContent)
		rest := hostileText(&mcp.CallToolResult{Content: res.Content[1:]})
		if warn == nil || !strings.HasPrefix(warn.Text, "[MITRITY gateway warning:") || strings.Contains(warn.Text, "Ignore all previous") ||
			!strings.Contains(rest, "Ignore all previous instructions") {
			t.Errorf("inject flagged: want the warning, then the text: %s", hostileJSON(res))
		}
		ev := g.lastCallEvent(t, "hostile__inject")
		if field(ev, "data", "upstream", "injection_action") != "flag" || field(ev, "data", "upstream", "injection") == nil ||
			field(ev, "data", "upstream", "status") != "completed" {
			t.Errorf("inject's event: %v", field(ev, "data", "upstream"))
		}
	})
	t.Run("dlp-arguments-redact", func(t *testing.T) {
		res := g.mustCall(t, "hostile__echo", map[string]any{"text": "deploy with " + hostileAWSKey})
		if res.IsError || strings.Contains(hostileJSON(res), hostileAWSKey) || !strings.Contains(hostileText(res), "echo: deploy with [REDACTED") {
			t.Errorf("echo with a secret, redacted: %s", hostileJSON(res))
		}
		got := g.receivedCalls(t, "echo")
		if len(got) == 0 {
			t.Fatal("the upstream received no echo")
		}
		last := string(got[len(got)-1].Arguments)
		if strings.Contains(last, hostileAWSKey) || !strings.Contains(last, "deploy with [REDACTED") {
			t.Errorf("the upstream received %s", last)
		}
		ev := g.lastCallEvent(t, "hostile__echo")
		if n, _ := field(ev, "data", "upstream", "arguments_redacted").(float64); n < 1 {
			t.Errorf("echo's event: %v", field(ev, "data", "upstream"))
		}
	})
	t.Run("result-max-bytes", func(t *testing.T) {
		res := g.mustCall(t, "hostile__flood", map[string]any{"bytes": 200000})
		j := hostileJSON(res)
		if len(j) > 65536+4096 || !strings.Contains(hostileText(res), hostileTruncated) || !strings.Contains(hostileText(res), "the limit is 65536") {
			t.Errorf("flood of 200000 under a 65536 cap: %d bytes", len(j))
		}
		if ev := g.lastCallEvent(t, "hostile__flood"); field(ev, "data", "upstream", "truncated") != true {
			t.Errorf("flood's event: %v", field(ev, "data", "upstream"))
		}
	})
	t.Run("list-call-consistency", func(t *testing.T) { hostileConsistency(t, g) })
	t.Run("one-event-per-call", g.checkOneEventPerCall)
}

// 13. No denied tool is ever listed, a denied tool's call is refused
// tool_permission, and no listed tool's call is.
func hostileConsistency(t *testing.T, g *hgw) {
	names := g.tools(t)
	if slices.Contains(names, "hostile__leak") {
		t.Errorf("tools/list shows the denied hostile__leak: %v", names)
	}
	res := g.mustCall(t, "hostile__leak", nil)
	hostileRefused(t, "the denied hostile__leak", res, "tool_permission")
	if len(g.receivedCalls(t, "leak")) != 0 {
		t.Error("the upstream received a call of the denied leak")
	}
	if ev := g.callEvents(t, "hostile__leak"); len(ev) != 1 || field(ev[0], "data", "decision", "reason") != "tool_permission" {
		t.Errorf("the denied call's event: %v", ev)
	}
	args := map[string]map[string]any{
		"shell__execute":     {"command": "true"},
		"hostile__echo":      {"text": "listed"},
		"hostile__flood":     {"bytes": 10},
		"hostile__progress":  {"steps": 1},
		"hostile__readfile":  {"path": "/etc/hostname"},
		"hostile__writefile": {"path": filepath.Join(g.state, "listed"), "content": "x"},
	}
	notPermission := func(name string, res *mcp.CallToolResult, err error) {
		switch {
		case err != nil && strings.Contains(err.Error(), "tool_permission"):
			t.Errorf("the listed %s is refused: %v", name, err)
		case err == nil && (hostileReason(res) == "tool_permission" || strings.Contains(hostileText(res), "tool_permission")):
			t.Errorf("the listed %s is refused tool_permission: %s", name, hostileJSON(res))
		}
	}
	// Every listed tool, at once; those that take the upstream down or
	// change it last.
	last := []string{"hostile__mutate", "hostile__garbage", "hostile__crash"}
	var wg sync.WaitGroup
	for _, n := range names {
		if slices.Contains(last, n) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := g.call(n, args[n])
			notPermission(n, res, err)
		}()
	}
	wg.Wait()
	for _, n := range last {
		if !slices.Contains(names, n) {
			t.Errorf("%s is not listed: %v", n, names)
			continue
		}
		res, err := g.call(n, args[n])
		notPermission(n, res, err)
	}
	// Relisted after the change and the restarts: still never the denied
	// tool.
	names = g.waitTools(t, "the upstream back", func(n []string) bool { return slices.Contains(n, "hostile__echo") })
	if slices.Contains(names, "hostile__leak") {
		t.Errorf("tools/list shows the denied hostile__leak after a relist: %v", names)
	}
}

// hostileNoGrant: the upstream's entry sends it github_token; an agent
// without that grant may call none of its tools.
func hostileNoGrant(t *testing.T, asUser bool) {
	g := startHostile(t, asUser, hostileOpts{policy: hostilePolicy, agent: "nogrant", unlisted: true})
	// List and call agree: none of its tools is listed to this agent.
	for _, n := range g.tools(t) {
		if strings.HasPrefix(n, "hostile__") {
			t.Errorf("tools/list shows %s to an agent whose calls of it are refused", n)
		}
	}
	res := g.mustCall(t, "hostile__echo", map[string]any{"text": "hello"})
	hostileRefused(t, "echo without the grant", res, "credential_not_granted")
	if !strings.Contains(hostileText(res), "github_token") || strings.Contains(hostileJSON(res), secretToken) {
		t.Errorf("the refusal should name the credential, never its value: %s", hostileJSON(res))
	}
	if r := g.received(t); len(r) != 0 {
		t.Errorf("the upstream received %+v", r)
	}
	evs := g.callEvents(t, "hostile__echo")
	if len(evs) != 1 || field(evs[0], "data", "decision", "reason") != "credential_not_granted" {
		t.Errorf("the refusal's event: %v", evs)
	}
	t.Run("one-event-per-call", g.checkOneEventPerCall)
}
