package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tests of this file load and fault `serve --http` from outside, as a
// local attacker would: slow, idle, unauthenticated and vanishing clients,
// abandoned sessions. The gateway runs as the unprivileged test user; the
// test (root) counts its sockets in /proc, reads its metrics and its audit
// log, and looks for processes left behind.

const boundsToken = "e2e-bounds-token-0123456789abcdef"

// httpGW is a running `serve --http` gateway.
type httpGW struct {
	w       *world
	cmd     *exec.Cmd
	pid     int
	addr    string // host:port of the MCP endpoint
	url     string
	metrics string // the admin listener's /metrics
	stderr  *syncBuffer
	exited  chan struct{}
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

// gwOptions shape a gateway under test.
type gwOptions struct {
	nofile        int // when set, the gateway's RLIMIT_NOFILE (soft and hard)
	maxConcurrent int // exec.limits.max_concurrent; 0: the default (4)
	args          []string
	logLevel      string // the gateway's --log-level; "": error
}

// startHTTPGW serves w over Streamable HTTP on a free loopback port, as
// w's user, with the admission socket off (parallel tests share the test
// user) and the admin listener on for metrics.
func startHTTPGW(t testing.TB, w *world, o gwOptions) *httpGW {
	t.Helper()
	uid, gid := ensureUser(t)
	tokFile := filepath.Join(w.dir, "tokens")
	must(t, os.WriteFile(tokFile, []byte(boundsToken+" ci\n"), 0o600))
	if w.asUser != nil {
		must(t, os.Chown(tokFile, int(uid), int(gid)))
	}
	if o.maxConcurrent > 0 {
		limitConcurrency(t, w, o.maxConcurrent)
	}
	cfg, err := os.ReadFile(w.cfg)
	must(t, err)
	s := string(cfg)
	admin := freePort(t)
	s += "admission:\n  enabled: false\nadmin:\n  listen: " + admin + "\n"
	must(t, os.WriteFile(w.cfg, []byte(s), 0o644))
	addr := freePort(t)
	level := o.logLevel
	if level == "" {
		level = "error"
	}
	args := append([]string{"--log-level", level, "serve", "--http", addr, "--token-file", tokFile, "--grace", "1s",
		"--config", w.cfg, "--admin-dir", w.admin}, o.args...)
	var cmd *exec.Cmd
	if o.nofile > 0 {
		cmd = exec.Command("/bin/bash", append([]string{"-c", fmt.Sprintf(`ulimit -n %d && exec "$0" "$@"`, o.nofile), w.bin}, args...)...)
	} else {
		cmd = exec.Command(w.bin, args...)
	}
	cmd.Dir = w.ws
	cmd.Env = []string{"PATH=/usr/bin:/bin", "E2E_GITHUB_TOKEN=" + secretToken, "HOME=" + w.dir}
	if w.asUser != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: w.asUser}
	}
	g := &httpGW{w: w, cmd: cmd, addr: addr, url: "http://" + addr, metrics: "http://" + admin + "/metrics",
		stderr: &syncBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = g.stderr
	cmd.WaitDelay = 2 * time.Second
	must(t, cmd.Start())
	g.pid = cmd.Process.Pid
	go func() {
		cmd.Wait()
		close(g.exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-g.exited
	})
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := c.Post(g.url, "application/json", strings.NewReader(`{}`))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("no token: status %d, want 401", resp.StatusCode)
			}
			if _, err := c.Get(g.metrics); err == nil {
				break
			}
		}
		select {
		case <-g.exited:
			t.Fatalf("serve --http exited:\n%s", g.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve --http did not come up: %v\n%s", err, g.stderr.String())
		}
	}
	return g
}

// fdLinks lists the targets of the gateway's open descriptors.
func (g *httpGW) fdLinks(t testing.TB) []string {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fd", g.pid)
	ents, err := os.ReadDir(dir)
	must(t, err)
	var links []string
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil {
			links = append(links, l)
		}
	}
	return links
}

// sockets counts the gateway's open sockets.
func (g *httpGW) sockets(t testing.TB) int {
	n := 0
	for _, l := range g.fdLinks(t) {
		if strings.HasPrefix(l, "socket:") {
			n++
		}
	}
	return n
}

// metric sums the gateway's series of name whose labels contain every
// label of match ("k=\"v\"").
func (g *httpGW) metric(t testing.TB, name string, match ...string) float64 {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(g.metrics)
	must(t, err)
	defer resp.Body.Close()
	sum, found := 0.0, false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		series, value, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		n, labels, _ := strings.Cut(series, "{")
		if n != name {
			continue
		}
		all := true
		for _, m := range match {
			all = all && strings.Contains(labels, m)
		}
		if !all {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		must(t, err)
		sum, found = sum+v, true
	}
	if !found {
		t.Fatalf("no metric %s%v at %s", name, match, g.metrics)
	}
	return sum
}

// client is an MCP client of the gateway over its own connections.
func (g *httpGW) client(t testing.TB) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: g.url, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: &bearerRT{token: boundsToken, base: &http.Transport{}}}}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, g.stderr.String())
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

type bearerRT struct {
	token string
	base  http.RoundTripper
}

func (b *bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// rawMCP speaks Streamable HTTP by hand: one session, messages POSTed
// with the token, over hc.
type rawMCP struct {
	g       *httpGW
	hc      *http.Client
	session string
}

const initializeMsg = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e-raw","version":"1"}}}`

// post sends one message on the session and returns the status and the
// body (an SSE stream's data lines joined).
func (r *rawMCP) post(ctx context.Context, msg string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.g.url, strings.NewReader(msg))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+boundsToken)
	if r.session != "" {
		req.Header.Set("Mcp-Session-Id", r.session)
	}
	resp, err := r.hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		r.session = id
	}
	b, err := io.ReadAll(resp.Body)
	var data []string
	for _, l := range strings.Split(string(b), "\n") {
		if d, ok := strings.CutPrefix(l, "data: "); ok {
			data = append(data, d)
		}
	}
	if len(data) == 0 {
		data = []string{string(b)}
	}
	return resp.StatusCode, strings.Join(data, "\n"), err
}

// open initializes a session.
func (r *rawMCP) open(ctx context.Context) (int, string, error) {
	code, body, err := r.post(ctx, initializeMsg)
	if err != nil || code != http.StatusOK {
		return code, body, err
	}
	code, body, err = r.post(ctx, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if err == nil && code != http.StatusAccepted {
		return code, body, fmt.Errorf("notifications/initialized: %d %s", code, body)
	}
	return http.StatusOK, "", err
}

func toolCallMsg(id int, command string) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
		"params": map[string]any{"name": "shell__execute", "arguments": map[string]any{"command": command}}})
	return string(b)
}

// TestServeHTTPConnectionPhases: every phase of a connection is bounded.
// A client that sends nothing, one that trickles its headers, one that
// trickles its body (authenticated), one idle on keep-alive and one idle
// after a 401: each connection is closed by the gateway within the bound
// of its phase, and the gateway's socket count comes back to where it
// started.
func TestServeHTTPConnectionPhases(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the gateway as the test user")
	}
	g := startHTTPGW(t, newWorld(t, true, e2ePolicy), gwOptions{})
	base := g.sockets(t)
	host := "Host: " + g.addr + "\r\n"
	auth := "Authorization: Bearer " + boundsToken + "\r\n"
	// Each phase, with how soon its connections must be closed (the
	// bound, plus slack for a loaded machine).
	phases := []struct {
		name   string
		within time.Duration
		open   func(c net.Conn) error // run before the trickle
		trick  string                 // trickled one byte per 1.5 s
	}{
		{name: "silent", within: 9 * time.Second, open: func(net.Conn) error { return nil }},
		{name: "slow-header", within: 9 * time.Second, open: func(c net.Conn) error {
			_, err := io.WriteString(c, "POST / HTTP/1.1\r\n"+host)
			return err
		}, trick: "X-Slow: " + strings.Repeat("a", 100)},
		{name: "slow-body", within: 14 * time.Second, open: func(c net.Conn) error {
			_, err := io.WriteString(c, "POST / HTTP/1.1\r\n"+host+auth+"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n")
			return err
		}, trick: strings.Repeat(" ", 1000)},
		{name: "idle-keepalive", within: 34 * time.Second, open: func(c net.Conn) error {
			// An authenticated request answered 400 (a GET needs a
			// session), then nothing.
			if _, err := io.WriteString(c, "GET / HTTP/1.1\r\n"+host+auth+"Accept: text/event-stream\r\n\r\n"); err != nil {
				return err
			}
			return readResponse(c, http.StatusBadRequest)
		}},
		{name: "idle-after-401", within: 3 * time.Second, open: func(c net.Conn) error {
			if _, err := io.WriteString(c, "POST / HTTP/1.1\r\n"+host+"Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}"); err != nil {
				return err
			}
			return readResponse(c, http.StatusUnauthorized)
		}},
	}
	const perPhase = 12
	type closed struct {
		phase int
		after time.Duration
	}
	results := make(chan closed, len(phases)*perPhase)
	start := time.Now()
	for i, p := range phases {
		for range perPhase {
			c, err := net.Dial("tcp", g.addr)
			must(t, err)
			t.Cleanup(func() { c.Close() })
			if err := p.open(c); err != nil {
				t.Fatalf("%s: %v", p.name, err)
			}
			go func() {
				// The server closing the connection ends the read.
				buf := make([]byte, 4096)
				for {
					if _, err := c.Read(buf); err != nil {
						results <- closed{i, time.Since(start)}
						return
					}
				}
			}()
			if p.trick != "" {
				go func() {
					for j := 0; j < len(p.trick); j++ {
						if _, err := c.Write([]byte{p.trick[j]}); err != nil {
							return
						}
						time.Sleep(1500 * time.Millisecond)
					}
				}()
			}
		}
	}
	if n := g.sockets(t); n < base+len(phases)*perPhase-perPhase {
		t.Logf("the gateway holds %d sockets (%d before); some connections closed already", n, base)
	}
	maxWait := 0 * time.Second
	for _, p := range phases {
		maxWait = max(maxWait, p.within)
	}
	timeout := time.After(maxWait + 5*time.Second)
	got := make([][]time.Duration, len(phases))
	for n := 0; n < len(phases)*perPhase; n++ {
		select {
		case r := <-results:
			got[r.phase] = append(got[r.phase], r.after)
		case <-timeout:
			n = len(phases) * perPhase
		}
	}
	for i, p := range phases {
		if len(got[i]) != perPhase {
			t.Errorf("%s: %d of %d connections still open after %v", p.name, perPhase-len(got[i]), perPhase, time.Since(start).Round(time.Second))
			continue
		}
		for _, d := range got[i] {
			if d > p.within {
				t.Errorf("%s: a connection closed after %v, want within %v", p.name, d.Round(100*time.Millisecond), p.within)
				break
			}
		}
	}
	for deadline := time.Now().Add(5 * time.Second); g.sockets(t) > base && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
	}
	if n := g.sockets(t); n > base {
		t.Errorf("the gateway holds %d sockets, %d before the clients came", n, base)
	}
}

// readResponse reads one HTTP response from c and checks its status.
func readResponse(c net.Conn, want int) error {
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	defer c.SetReadDeadline(time.Time{})
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != want {
		return fmt.Errorf("status %d, want %d", resp.StatusCode, want)
	}
	return nil
}

// TestServeHTTPConnectionCaps: with RLIMIT_NOFILE at 1024, another local
// user opens 1,100 idle connections. The gateway never runs out of
// descriptors: the next call of a legitimate client (another user) is
// accepted at once and runs in its sandbox, and the attacker's connections
// beyond its share are refused.
func TestServeHTTPConnectionCaps(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the gateway and the attacker as the test user")
	}
	w := newWorldBackend(t, true, e2ePolicy, "auto")
	g := startHTTPGW(t, w, gwOptions{nofile: 1024})
	port := g.addr[strings.LastIndex(g.addr, ":")+1:]
	// The attacker: bash as the test user, holding 1,100 connections.
	att := exec.Command("/bin/bash", "-c", `for i in $(seq 1100); do exec {fd}<>/dev/tcp/127.0.0.1/`+port+` || exit 1; done; echo ready; exec sleep 60`)
	att.SysProcAttr = &syscall.SysProcAttr{Credential: w.asUser}
	out, err := att.StdoutPipe()
	must(t, err)
	var attErr syncBuffer
	att.Stderr = &attErr
	must(t, att.Start())
	t.Cleanup(func() { att.Process.Kill(); att.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("the attacker did not open its connections: %q %v\n%s", line, err, attErr.String())
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := g.client(t)
	r, err := callShell(t, ctx, cs, map[string]any{"command": "echo still-serving"})
	if err != nil {
		t.Fatalf("a legitimate call under attack: %v\n%s", err, g.stderr.String())
	}
	if r.isError || r.stdout != "still-serving\n" || r.structured["sandbox_mode"] != "bubblewrap" {
		t.Fatalf("a legitimate call under attack: %+v", r)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the legitimate call took %v", d)
	}
	if n := len(g.fdLinks(t)); n > 1024-128 {
		t.Errorf("the gateway holds %d descriptors of 1024: the reserve for executions is gone", n)
	}
	if n := g.metric(t, "mitrity_http_connections_refused_total", `reason="peer_limit"`); n < 1100-64 {
		t.Errorf("%v connections refused for the peer limit, want at least %d", n, 1100-64)
	}
	if n := g.metric(t, "mitrity_http_connections"); n > 64+4 {
		t.Errorf("%v connections open, want at most the attacker's 64 and the client's", n)
	}
}

// TestServeHTTPVanishingClient: four clients start `sleep` and vanish
// (their connections close mid-call, no notifications/cancelled). Each run
// is killed and audited killed at once, its max_concurrent slot is free,
// so a fifth client runs its command right away, and no sandboxed process
// is left behind.
func TestServeHTTPVanishingClient(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the gateway as the test user")
	}
	w := newWorldBackend(t, true, e2ePolicy, "auto")
	g := startHTTPGW(t, w, gwOptions{})
	mark := fmt.Sprintf("vanish-%d", time.Now().UnixNano())
	var wg sync.WaitGroup
	started := make(chan struct{}, 4)
	for i := range 4 {
		r := &rawMCP{g: g, hc: &http.Client{Transport: &http.Transport{}}}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if code, body, err := r.open(ctx); err != nil || code != http.StatusOK {
			t.Fatalf("client %d: initialize: %d %s %v", i, code, body, err)
		}
		callCtx, vanish := context.WithCancel(ctx)
		// Each run's sleep is told apart by its duration.
		sleep := fmt.Sprintf("15.%d%d", time.Now().UnixNano()%100000, i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, _ = r.post(callCtx, toolCallMsg(2, "sleep "+sleep+"; echo "+mark))
		}()
		go func() {
			// Wait until the command runs, then go away: cancelling the
			// request closes its connection.
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				if len(procsWith("sleep\x00"+sleep+"\x00")) > 0 {
					break
				}
			}
			vanish()
			started <- struct{}{}
		}()
		<-started
	}
	wg.Wait()
	vanished := time.Now()
	// A fifth client: its call runs at once (the slots are free).
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := callShell(t, ctx, g.client(t), map[string]any{"command": "echo free-slot"})
	must(t, err)
	if res.isError || res.stdout != "free-slot\n" {
		t.Fatalf("the fifth client's call: %+v", res)
	}
	if d := time.Since(vanished); d > 10*time.Second {
		t.Errorf("the fifth call took %v", d)
	}
	// Four killed runs in the audit, each well before its 15 s.
	var killed int
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		killed = 0
		for _, ev := range w.events(t) {
			if strings.Contains(fmt.Sprint(ev), mark) {
				if field(ev, "data", "execution", "status") == "killed" {
					if d, _ := field(ev, "data", "execution", "duration_ms").(float64); d < 10000 {
						killed++
					}
				}
			}
		}
		if killed == 4 {
			break
		}
	}
	if killed != 4 {
		t.Errorf("%d of 4 vanished clients' runs audited killed early; audit:\n%v", killed, w.events(t))
	}
	for deadline := time.Now().Add(5 * time.Second); len(procsWith(mark)) > 0 && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
	}
	if p := procsWith(mark); len(p) > 0 {
		t.Errorf("processes left behind: %v", p)
	}
}

// procsWith lists the processes whose command line contains s.
func procsWith(s string) []string {
	var found []string
	for pid, b := range procCmdlines() {
		if bytes.Contains(b, []byte(s)) && !bytes.Contains(b, []byte("-test.")) {
			found = append(found, strconv.Itoa(pid)+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return found
}

// procCmdlines is every host process's command line, by pid.
func procCmdlines() map[int][]byte {
	ents, _ := os.ReadDir("/proc")
	out := map[int][]byte{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil {
			out[pid] = b
		}
	}
	return out
}

// TestServeHTTPSessionLimit: sessions opened and never deleted stop at the
// bound (256): the next one gets a clear HTTP error, and the sessions
// already open still work.
func TestServeHTTPSessionLimit(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the gateway as the test user")
	}
	g := startHTTPGW(t, newWorld(t, true, e2ePolicy), gwOptions{})
	hc := &http.Client{Transport: &http.Transport{}}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var first *rawMCP
	for i := range 256 {
		r := &rawMCP{g: g, hc: hc}
		if code, body, err := r.open(ctx); err != nil || code != http.StatusOK {
			t.Fatalf("session %d: %d %s %v", i, code, body, err)
		}
		if first == nil {
			first = r
		}
	}
	r := &rawMCP{g: g, hc: hc}
	code, body, err := r.post(ctx, initializeMsg)
	must(t, err)
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "sessions") {
		t.Fatalf("session 257: %d %s", code, body)
	}
	if n := g.metric(t, "mitrity_mcp_sessions"); n != 256 {
		t.Errorf("mitrity_mcp_sessions %v, want 256", n)
	}
	code, body, err = first.post(ctx, `{"jsonrpc":"2.0","id":7,"method":"ping"}`)
	if err != nil || code != http.StatusOK || !strings.Contains(body, `"id":7`) {
		t.Fatalf("a ping on an open session: %d %s %v", code, body, err)
	}
}

// TestServeHTTPSessionReaping: sessions left idle are closed after
// --session-idle-timeout: the session gauge and the goroutine count come
// back down, a reaped session's id answers 404, and new sessions open.
func TestServeHTTPSessionReaping(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the gateway as the test user")
	}
	g := startHTTPGW(t, newWorld(t, true, e2ePolicy), gwOptions{args: []string{"--session-idle-timeout", "3s"}})
	hc := &http.Client{Transport: &http.Transport{}}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	baseG := g.metric(t, "go_goroutines")
	var sessions []*rawMCP
	for i := range 200 {
		r := &rawMCP{g: g, hc: hc}
		if code, body, err := r.open(ctx); err != nil || code != http.StatusOK {
			t.Fatalf("session %d: %d %s %v", i, code, body, err)
		}
		sessions = append(sessions, r)
	}
	if n := g.metric(t, "mitrity_mcp_sessions"); n != 200 {
		t.Errorf("mitrity_mcp_sessions %v, want 200", n)
	}
	if n := g.metric(t, "go_goroutines"); n < baseG+200 {
		t.Logf("goroutines %v with 200 sessions, %v before", n, baseG)
	}
	var n float64
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		if n = g.metric(t, "mitrity_mcp_sessions"); n == 0 {
			break
		}
	}
	if n != 0 {
		t.Fatalf("%v sessions still open after the idle timeout", n)
	}
	if n := g.metric(t, "go_goroutines"); n > baseG+10 {
		t.Errorf("%v goroutines after the sessions were reaped, %v before they opened", n, baseG)
	}
	code, _, err := sessions[0].post(ctx, `{"jsonrpc":"2.0","id":7,"method":"ping"}`)
	if err != nil || code != http.StatusNotFound {
		t.Errorf("a reaped session: %d %v, want 404", code, err)
	}
	r := &rawMCP{g: g, hc: hc}
	if code, body, err := r.open(ctx); err != nil || code != http.StatusOK {
		t.Fatalf("a new session after reaping: %d %s %v", code, body, err)
	}
}
