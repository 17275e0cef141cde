package egress_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern/egress"
)

// upstream is a loopback TCP listener playing the internet. It counts the
// connections it accepts, so a test can prove a refusal never reached it.
type upstream struct {
	ln      net.Listener
	port    uint16
	accepts atomic.Int64
}

func startUpstream(t testing.TB, handle func(net.Conn)) *upstream {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	assert.NilError(t, err)
	u := &upstream{ln: ln, port: uint16(ln.Addr().(*net.TCPAddr).Port)}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u.accepts.Add(1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				handle(c)
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return u
}

// echoPrefixed answers every chunk with "echo:" and the chunk, and at EOF
// writes "bye" and closes: both directions and the half-close are visible.
func echoPrefixed(c net.Conn) {
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if _, werr := c.Write(append([]byte("echo:"), buf[:n]...)); werr != nil {
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				_, _ = c.Write([]byte("bye"))
			}
			return
		}
	}
}

var loopback = netip.MustParsePrefix("127.0.0.1/32")

// loopbackChecker lets 127.0.0.1 through by the test-only option and
// resolves the given names to it.
func loopbackChecker(t testing.TB, cfg egress.Config, names ...string) (*egress.Checker, *fakeResolver) {
	t.Helper()
	m := map[string][]string{}
	for _, n := range names {
		m[n+"."] = []string{"127.0.0.1"}
	}
	res := newResolver(m)
	c, err := egress.NewChecker(cfg, egress.WithResolver(res), egress.WithTestAllowedPrefixes(loopback))
	assert.NilError(t, err)
	return c, res
}

// startProxy serves p on a loopback TCP listener until the test ends.
func startProxy(t testing.TB, c *egress.Checker, opts ...egress.ProxyOption) (string, *egress.Proxy) {
	t.Helper()
	p, err := egress.NewProxy(c, opts...)
	assert.NilError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	assert.NilError(t, err)
	done := make(chan error, 1)
	go func() { done <- p.Serve(ln) }()
	t.Cleanup(func() {
		assert.Check(t, p.Close())
		assert.Check(t, <-done)
	})
	return ln.Addr().String(), p
}

// connect sends CONNECT authority (plus early bytes behind it) and reads
// the proxy's answer. The reader holds anything after the answer.
func connect(t testing.TB, proxy, authority string, early []byte) (net.Conn, *bufio.Reader, *http.Response) {
	t.Helper()
	conn, err := net.Dial("tcp", proxy)
	assert.NilError(t, err)
	t.Cleanup(func() { conn.Close() })
	return connectOn(t, conn, authority, early)
}

func connectOn(t testing.TB, conn net.Conn, authority string, early []byte) (net.Conn, *bufio.Reader, *http.Response) {
	t.Helper()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	req := fmt.Sprintf("CONNECT %s HTTP/1.1\r\nHost: %s\r\nProxy-Authorization: Basic c2VjcmV0\r\n\r\n", authority, authority)
	_, err := conn.Write(append([]byte(req), early...))
	assert.NilError(t, err)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	assert.NilError(t, err)
	return conn, br, resp
}

func body(t testing.TB, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	assert.NilError(t, err)
	return string(b)
}

func port(u *upstream) string { return strconv.Itoa(int(u.port)) }

func TestConnectRelaysBothWays(t *testing.T) {
	t.Parallel()
	up := startUpstream(t, echoPrefixed)
	c, res := loopbackChecker(t, egress.Config{Allow: []string{"allowed.test:" + port(up)}}, "allowed.test")
	proxy, p := startProxy(t, c)

	conn, br, resp := connect(t, proxy, "allowed.test:"+port(up), []byte("early"))
	assert.Equal(t, resp.StatusCode, http.StatusOK)
	got := make([]byte, len("echo:early"))
	_, err := io.ReadFull(br, got)
	assert.NilError(t, err)
	assert.Equal(t, string(got), "echo:early")

	_, err = conn.Write([]byte("hello"))
	assert.NilError(t, err)
	got = make([]byte, len("echo:hello"))
	_, err = io.ReadFull(br, got)
	assert.NilError(t, err)
	assert.Equal(t, string(got), "echo:hello")

	// Half-close: the upstream sees EOF, still answers, then closes.
	assert.NilError(t, conn.(*net.TCPConn).CloseWrite())
	rest, err := io.ReadAll(br)
	assert.NilError(t, err)
	assert.Equal(t, string(rest), "bye")

	assert.Equal(t, up.accepts.Load(), int64(1))
	assert.DeepEqual(t, res.lookups(), []string{"allowed.test."})
	r := p.Report()
	assert.Equal(t, r.Allowed, 1)
	assert.Equal(t, r.Denied, 0)
}

func TestConnectDeniedNeverConnects(t *testing.T) {
	t.Parallel()
	up := startUpstream(t, echoPrefixed)
	c, res := loopbackChecker(t, egress.Config{Allow: []string{"allowed.test:" + port(up)}}, "allowed.test", "denied.test")
	proxy, p := startProxy(t, c)

	_, _, resp := connect(t, proxy, "denied.test:"+port(up), []byte("early"))
	assert.Equal(t, resp.StatusCode, http.StatusForbidden)
	assert.Check(t, is.Contains(body(t, resp), "not_allowlisted"))
	assert.Equal(t, resp.Header.Get("Content-Type"), "text/plain; charset=utf-8")
	assert.Equal(t, up.accepts.Load(), int64(0))
	assert.Check(t, is.Len(res.lookups(), 0), "a name not on the allowlist was resolved")
	r := p.Report()
	assert.DeepEqual(t, r.DeniedHosts, []string{"denied.test:" + port(up)})
}

// Without the test override, a name resolving to 127.0.0.1 is refused even
// under "*": loopback is never reachable.
func TestConnectLoopbackNameRefused(t *testing.T) {
	t.Parallel()
	up := startUpstream(t, echoPrefixed)
	res := newResolver(map[string][]string{"allowed.test.": {"127.0.0.1"}})
	c, err := egress.NewChecker(egress.Config{Allow: []string{"*"}, AllowedPorts: []uint16{up.port}}, egress.WithResolver(res))
	assert.NilError(t, err)
	proxy, _ := startProxy(t, c)
	_, _, resp := connect(t, proxy, "allowed.test:"+port(up), nil)
	assert.Equal(t, resp.StatusCode, http.StatusForbidden)
	assert.Check(t, is.Contains(body(t, resp), "refused_address"))
	assert.Equal(t, up.accepts.Load(), int64(0))
}

// The SSRF tricks, each against a live loopback listener that must never
// see a connection: once with the test override in place (so only the name
// and allowlist rules stand in the way) and once without.
func TestConnectRefusesTricks(t *testing.T) {
	t.Parallel()
	up := startUpstream(t, echoPrefixed)
	p := port(up)
	tricks := []struct {
		authority string
		reason    egress.Reason
	}{
		{"[::ffff:127.0.0.1]:" + p, egress.ReasonNotAllowlisted},
		{"[::ffff:7f00:1]:" + p, egress.ReasonNotAllowlisted},
		{"127.0.0.1:" + p, egress.ReasonNotAllowlisted},
		{"[::1]:" + p, egress.ReasonNotAllowlisted},
		{"[::127.0.0.1]:" + p, egress.ReasonNotAllowlisted},
		{"2130706433:" + p, egress.ReasonNumericHost},
		{"0x7f000001:" + p, egress.ReasonNumericHost},
		{"0x7f.1:" + p, egress.ReasonNumericHost},
		{"0177.0.0.1:" + p, egress.ReasonNumericHost},
		{"127.1:" + p, egress.ReasonNumericHost},
		{"localhost:" + p, egress.ReasonRefusedName},
		{"LocalHost.:" + p, egress.ReasonRefusedName},
		{"sub.localhost:" + p, egress.ReasonRefusedName},
		{"metadata.google.internal:" + p, egress.ReasonRefusedName},
		{"metadata:" + p, egress.ReasonRefusedName},
		{"[fe80::1%25lo]:" + p, egress.ReasonInvalidHost},
	}
	for _, override := range []bool{true, false} {
		t.Run(fmt.Sprintf("override=%v", override), func(t *testing.T) {
			t.Parallel()
			cfg := egress.Config{Allow: []string{"*", "allowed.test"}, AllowedPorts: []uint16{up.port}}
			res := newResolver(map[string][]string{
				"allowed.test.": {"127.0.0.1"},
				"mixed.test.":   {"1.1.1.1", "127.0.0.1"},
				"localhost.":    {"127.0.0.1"},
			})
			opts := []egress.Option{egress.WithResolver(res)}
			if override {
				opts = append(opts, egress.WithTestAllowedPrefixes(loopback))
			}
			c, err := egress.NewChecker(cfg, opts...)
			assert.NilError(t, err)
			proxy, px := startProxy(t, c)
			cases := tricks
			if !override {
				// With the override a mixed answer would pass (both addresses
				// allowed) and dial the public one; only run it without.
				cases = append(cases, struct {
					authority string
					reason    egress.Reason
				}{"mixed.test:" + p, egress.ReasonRefusedAddress},
					struct {
						authority string
						reason    egress.Reason
					}{"allowed.test:" + p, egress.ReasonRefusedAddress})
			}
			for _, tc := range cases {
				_, _, resp := connect(t, proxy, tc.authority, nil)
				assert.Check(t, is.Equal(resp.StatusCode, http.StatusForbidden), tc.authority)
				assert.Check(t, is.Contains(body(t, resp), string(tc.reason)), tc.authority)
			}
			assert.Equal(t, up.accepts.Load(), int64(0))
			assert.Equal(t, px.Report().Denied, len(cases))
			for _, q := range res.lookups() {
				assert.Check(t, q == "allowed.test." || q == "mixed.test.", "unexpected lookup %q", q)
			}
		})
	}
}

// The Control hook refuses on its own: dial with the guarded dialer
// directly, bypassing Check and the resolver, and nothing connects.
func TestControlHookRefusesBadAddress(t *testing.T) {
	t.Parallel()
	up := startUpstream(t, echoPrefixed)
	c, err := egress.NewChecker(egress.Config{Allow: []string{"*"}})
	assert.NilError(t, err)
	ctx := t.Context()
	for _, addr := range []string{
		"127.0.0.1:" + port(up),
		"[::ffff:127.0.0.1]:" + port(up),
		"localhost:" + port(up), // resolved by net.Dialer itself, not by Check
	} {
		conn, err := c.Dialer().DialContext(ctx, "tcp", addr)
		if conn != nil {
			conn.Close()
		}
		assert.Check(t, errors.Is(err, egress.ErrRefusedAddress), "%s: %v", addr, err)
	}
	// A forged decision: Dial still goes through the hook.
	forged := egress.Decision{Allowed: true, Target: "forged:1", Port: up.port, Addrs: []netip.Addr{netip.MustParseAddr("127.0.0.1")}}
	_, err = c.Dial(ctx, forged)
	assert.Check(t, errors.Is(err, egress.ErrRefusedAddress), "%v", err)
	// DialContext takes addresses only: no name is resolved outside Check.
	_, err = c.DialContext(ctx, "tcp", "localhost:"+port(up))
	assert.Check(t, errors.Is(err, egress.ErrNotAnAddress), "%v", err)
	_, err = c.DialContext(ctx, "udp", "127.0.0.1:"+port(up))
	assert.Check(t, errors.Is(err, egress.ErrRefusedAddress), "%v", err)
	assert.Equal(t, up.accepts.Load(), int64(0))
}

func TestPlainHTTPForward(t *testing.T) {
	t.Parallel()
	type seen struct {
		uri    string
		host   string
		header http.Header
		body   string
	}
	got := make(chan seen, 1)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.RequestURI, r.Host, r.Header.Clone(), string(b)}
		w.Header().Set("Proxy-Authenticate", "Basic realm=upstream")
		w.Header().Set("Keep-Alive", "timeout=5")
		w.Header().Set("X-Upstream", "yes")
		_, _ = io.WriteString(w, "hello from upstream")
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	assert.NilError(t, err)
	var accepts atomic.Int64
	go func() { _ = srv.Serve(countingListener{ln, &accepts}) }()
	t.Cleanup(func() { srv.Close() })
	p := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)

	c, _ := loopbackChecker(t, egress.Config{Allow: []string{"allowed.test:" + p}}, "allowed.test")
	proxy, px := startProxy(t, c)

	conn, err := net.Dial("tcp", proxy)
	assert.NilError(t, err)
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	req := "POST http://allowed.test:" + p + "/path?q=1 HTTP/1.1\r\n" +
		"Host: allowed.test:" + p + "\r\n" +
		"Proxy-Authorization: Basic c2VjcmV0\r\n" +
		"Proxy-Connection: keep-alive\r\n" +
		"Proxy-Foo: bar\r\n" +
		"Connection: X-Hop\r\n" +
		"X-Hop: secret\r\n" +
		"X-Keep: yes\r\n" +
		"Content-Length: 4\r\n\r\nbody"
	_, err = io.WriteString(conn, req)
	assert.NilError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	assert.NilError(t, err)
	assert.Equal(t, resp.StatusCode, http.StatusOK)
	assert.Equal(t, body(t, resp), "hello from upstream")
	assert.Equal(t, resp.Header.Get("X-Upstream"), "yes")
	assert.Equal(t, resp.Header.Get("Proxy-Authenticate"), "")
	assert.Equal(t, resp.Header.Get("Keep-Alive"), "")

	s := <-got
	assert.Equal(t, s.uri, "/path?q=1")
	assert.Equal(t, s.host, "allowed.test:"+p)
	assert.Equal(t, s.body, "body")
	assert.Equal(t, s.header.Get("X-Keep"), "yes")
	for _, h := range []string{"Proxy-Authorization", "Proxy-Connection", "Proxy-Foo", "X-Hop", "X-Forwarded-For"} {
		assert.Check(t, is.Equal(s.header.Get(h), ""), h)
	}
	assert.Equal(t, px.Report().Allowed, 1)

	// Denied over plain HTTP: 403 and the upstream sees nothing more.
	before := accepts.Load()
	resp = plainRequest(t, proxy, "GET http://elsewhere.test:"+p+"/ HTTP/1.1\r\nHost: elsewhere.test\r\n\r\n")
	assert.Equal(t, resp.StatusCode, http.StatusForbidden)
	assert.Equal(t, accepts.Load(), before)
}

type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

func plainRequest(t testing.TB, proxy, raw string) *http.Response {
	t.Helper()
	conn, err := net.Dial("tcp", proxy)
	assert.NilError(t, err)
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	_, err = io.WriteString(conn, raw)
	assert.NilError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	assert.NilError(t, err)
	return resp
}

func TestBadRequests(t *testing.T) {
	t.Parallel()
	up := startUpstream(t, echoPrefixed)
	c, _ := loopbackChecker(t, egress.Config{Allow: []string{"allowed.test:" + port(up)}}, "allowed.test")
	proxy, px := startProxy(t, c)
	long := strings.Repeat("M", 100)
	tests := []struct {
		raw    string
		code   int
		target string // the destination the report lists; "" for none
		method string
	}{
		{"GET / HTTP/1.1\r\nHost: origin.test\r\n\r\n", http.StatusBadRequest, "origin.test:80", "GET"},
		{"GET https://evil.test/ HTTP/1.1\r\nHost: evil.test\r\n\r\n", http.StatusBadRequest, "evil.test:443", "GET"},
		{"GET ftp://ftp.test/ HTTP/1.1\r\nHost: ftp.test\r\n\r\n", http.StatusBadRequest, "ftp.test:21", "GET"},
		{"TRACE http://trace.test:8080/ HTTP/1.1\r\nHost: trace.test\r\n\r\n", http.StatusMethodNotAllowed, "trace.test:8080", "TRACE"},
		{long + " http://brew.test/ HTTP/1.1\r\nHost: brew.test\r\n\r\n", http.StatusMethodNotAllowed, "brew.test:80", long[:32]},
		{"CONNECT /path HTTP/1.1\r\nHost: allowed.test\r\n\r\n", http.StatusBadRequest, `"/path"`, "CONNECT"},
		{"CONNECT noport.test HTTP/1.1\r\nHost: noport.test\r\n\r\n", http.StatusBadRequest, `"noport.test"`, "CONNECT"},
		{"CONNECT slash.test:443/x HTTP/1.1\r\nHost: slash.test\r\n\r\n", http.StatusBadRequest, `"slash.test:443/x"`, "CONNECT"},
		{"GET http://ws.test:" + port(up) + "/ HTTP/1.1\r\nHost: ws.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", http.StatusBadRequest, "ws.test:" + port(up), "GET"},
		{"GET https://evil.test/again HTTP/1.1\r\nHost: evil.test\r\n\r\n", http.StatusBadRequest, "", ""}, // a repeat: counted, listed once
		{"GET http://allowed.test:" + port(up) + "/ HTTP/1.1\r\nHost: allowed.test\r\nX-Big: " + strings.Repeat("a", 64<<10) + "\r\n\r\n", http.StatusRequestHeaderFieldsTooLarge, "", ""},
	}
	var want []string
	for _, tc := range tests {
		resp := plainRequest(t, proxy, tc.raw)
		assert.Check(t, is.Equal(resp.StatusCode, tc.code), strings.SplitN(tc.raw, "\r\n", 2)[0])
		if tc.target != "" {
			want = append(want, tc.target)
		}
	}
	assert.Equal(t, up.accepts.Load(), int64(0))
	// Each is a refusal like any other: counted, its destination listed
	// (so it reaches the audit event and its DLP event), reason bad_request.
	r := px.Report()
	refused := len(tests) - 1 // 431 is net/http's own answer
	assert.Equal(t, r.BadRequests, refused)
	assert.Equal(t, r.Denied, refused)
	assert.DeepEqual(t, r.DeniedHosts, want)
	assert.Equal(t, len(r.Denials), len(want))
	for i, d := range r.Denials {
		assert.Check(t, is.Equal(d.Target, want[i]))
		assert.Check(t, is.Equal(d.Reason, egress.ReasonBadRequest), d.Target)
		assert.Check(t, is.Equal(d.Method, tests[i].method), d.Target)
		assert.Check(t, d.Detail != "", d.Target)
	}
	assert.Equal(t, r.Denials[1].Count, 2) // evil.test:443, asked twice
}

func TestReportAndDenialHook(t *testing.T) {
	t.Parallel()
	up := startUpstream(t, echoPrefixed)
	c, _ := loopbackChecker(t, egress.Config{Allow: []string{"allowed.test:" + port(up)}}, "allowed.test")
	var mu sync.Mutex
	var denials []egress.Denial
	proxy, px := startProxy(t, c, egress.WithDenialHook(func(d egress.Denial) {
		mu.Lock()
		denials = append(denials, d)
		mu.Unlock()
	}))

	var want []string
	for i := range 20 {
		target := fmt.Sprintf("d%02d.test:443", i)
		if i < egress.MaxDeniedHosts {
			want = append(want, target)
		}
		for range 2 { // repeats count, but are listed once
			_, _, resp := connect(t, proxy, target, nil)
			assert.Equal(t, resp.StatusCode, http.StatusForbidden)
		}
	}
	_, _, resp := connect(t, proxy, "2130706433:443", nil)
	assert.Equal(t, resp.StatusCode, http.StatusForbidden)
	for range 3 {
		conn, br, resp := connect(t, proxy, "allowed.test:"+port(up), nil)
		assert.Equal(t, resp.StatusCode, http.StatusOK)
		_, _ = conn.Write([]byte("x"))
		b := make([]byte, 6)
		_, err := io.ReadFull(br, b)
		assert.NilError(t, err)
	}

	r := px.Report()
	assert.Equal(t, r.Allowed, 3)
	assert.Equal(t, r.Denied, 41)
	assert.DeepEqual(t, r.DeniedHosts, want)
	assert.Assert(t, r.DeniedHostsTruncated)
	// The same destinations with why and how often; the seventeenth and
	// later are only counted.
	assert.Equal(t, len(r.Denials), egress.MaxDeniedHosts)
	for i, d := range r.Denials {
		assert.Check(t, is.Equal(d.Target, want[i]))
		assert.Check(t, is.Equal(d.Reason, egress.ReasonNotAllowlisted))
		assert.Check(t, is.Equal(d.Method, http.MethodConnect))
		assert.Check(t, is.Equal(d.Count, 2))
		assert.Check(t, d.First.Location() == time.UTC && !d.First.Before(denials[0].Time.Add(-time.Second)))
	}
	// A report is a copy: changing it changes nothing in the proxy.
	r.Denials[0].Count = 99
	assert.Equal(t, px.Report().Denials[0].Count, 2)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, len(denials), 41)
	assert.Equal(t, denials[0].Method, http.MethodConnect)
	assert.Equal(t, denials[0].Decision.Target, "d00.test:443")
	assert.Equal(t, denials[0].Decision.Reason, egress.ReasonNotAllowlisted)
	last := denials[40].Decision
	assert.Equal(t, last.Reason, egress.ReasonNumericHost)
	assert.Equal(t, last.Target, `"2130706433":443`)
}

func TestUnixSocket(t *testing.T) {
	t.Parallel()
	up := startUpstream(t, echoPrefixed)
	c, _ := loopbackChecker(t, egress.Config{Allow: []string{"allowed.test:" + port(up)}}, "allowed.test")
	path := filepath.Join(t.TempDir(), "egress.sock")
	ln, err := egress.ListenUnix(path)
	assert.NilError(t, err)
	fi, err := os.Stat(path)
	assert.NilError(t, err)
	assert.Equal(t, fi.Mode().Perm(), os.FileMode(0o600))
	_, err = egress.ListenUnix(path)
	assert.Assert(t, err != nil, "an existing path must not be replaced")

	p, err := egress.NewProxy(c)
	assert.NilError(t, err)
	done := make(chan error, 1)
	go func() { done <- p.Serve(ln) }()

	conn, err := net.Dial("unix", path)
	assert.NilError(t, err)
	defer conn.Close()
	_, br, resp := connectOn(t, conn, "allowed.test:"+port(up), []byte("via unix"))
	assert.Equal(t, resp.StatusCode, http.StatusOK)
	assert.NilError(t, conn.(*net.UnixConn).CloseWrite())
	rest, err := io.ReadAll(br)
	assert.NilError(t, err)
	assert.Equal(t, string(rest), "echo:via unixbye")

	assert.NilError(t, p.Close())
	assert.NilError(t, <-done)
	_, err = os.Stat(path)
	assert.Assert(t, os.IsNotExist(err), "socket left behind")
}

// A tunnel ends when neither side moved a byte for the idle timeout, but a
// one-way stream with a silent client is not idle.
func TestTunnelIdleTimeout(t *testing.T) {
	t.Parallel()
	// Wide margins: the stream's gaps are a fifth of the timeout, so only a
	// machine stalled for most of a second could see it as idle.
	const idle = time.Second
	up := startUpstream(t, func(c net.Conn) {
		b := make([]byte, 16)
		n, _ := c.Read(b)
		if string(b[:n]) != "stream" {
			_, _ = io.Copy(io.Discard, c) // silent until the proxy gives up
			return
		}
		for i := range 8 { // 8 gaps of idle/5: longer than idle, never idle
			if _, err := fmt.Fprintf(c, "%d", i); err != nil {
				return
			}
			time.Sleep(idle / 5)
		}
	})
	c, _ := loopbackChecker(t, egress.Config{Allow: []string{"allowed.test:" + port(up)}}, "allowed.test")
	proxy, _ := startProxy(t, c, egress.WithIdleTimeout(idle))

	conn, br, resp := connect(t, proxy, "allowed.test:"+port(up), []byte("stream"))
	assert.Equal(t, resp.StatusCode, http.StatusOK)
	all, err := io.ReadAll(br)
	assert.NilError(t, err)
	assert.Equal(t, string(all), "01234567")
	conn.Close()

	conn, br, resp = connect(t, proxy, "allowed.test:"+port(up), []byte("quiet"))
	assert.Equal(t, resp.StatusCode, http.StatusOK)
	start := time.Now()
	_, err = io.ReadAll(br)
	assert.NilError(t, err) // closed by the proxy: EOF
	assert.Assert(t, time.Since(start) < 5*time.Second)
	conn.Close()
}

// The same through the Unix socket, where the tunnel splices: a download
// much longer than the idle timeout, the client silent throughout, arrives
// whole, and the client's half-close still reaches the server.
func TestTunnelIdleWhileSplicing(t *testing.T) {
	t.Parallel()
	const idle = time.Second // wide margins, as above
	chunk := make([]byte, 512<<10)
	for i := range chunk {
		chunk[i] = byte(i * 31)
	}
	const chunks = 48 // over about 3 idle times
	up := startUpstream(t, func(c net.Conn) {
		for range chunks {
			if _, err := c.Write(chunk); err != nil {
				return
			}
			time.Sleep(idle / 16)
		}
		// Then wait for the client's half-close and answer it.
		if n, _ := io.Copy(io.Discard, c); n == 0 {
			_, _ = io.WriteString(c, "bye")
		}
	})
	c, _ := loopbackChecker(t, egress.Config{Allow: []string{"allowed.test:" + port(up)}}, "allowed.test")
	sock := filepath.Join(t.TempDir(), "egress.sock")
	ln, err := egress.ListenUnix(sock)
	assert.NilError(t, err)
	p, err := egress.NewProxy(c, egress.WithIdleTimeout(idle))
	assert.NilError(t, err)
	go func() { _ = p.Serve(ln) }()
	t.Cleanup(func() { _ = p.Close() })

	conn, err := net.Dial("unix", sock)
	assert.NilError(t, err)
	defer conn.Close()
	_, br, resp := connectOn(t, conn, "allowed.test:"+port(up), nil)
	assert.Equal(t, resp.StatusCode, http.StatusOK)
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	start := time.Now()
	got := make([]byte, len(chunk))
	for i := range chunks {
		_, err := io.ReadFull(br, got)
		assert.NilError(t, err, "chunk %d, after %v", i, time.Since(start))
		assert.Assert(t, string(got) == string(chunk), "chunk %d differs", i)
	}
	assert.Assert(t, time.Since(start) > idle, "too fast to show anything: %v", time.Since(start))
	assert.NilError(t, conn.(*net.UnixConn).CloseWrite())
	rest, err := io.ReadAll(br)
	assert.NilError(t, err)
	assert.Equal(t, string(rest), "bye")
}

func TestHeaderTimeout(t *testing.T) {
	t.Parallel()
	c, _ := loopbackChecker(t, egress.Config{Allow: []string{"*"}})
	proxy, _ := startProxy(t, c, egress.WithHeaderTimeout(200*time.Millisecond))
	conn, err := net.Dial("tcp", proxy)
	assert.NilError(t, err)
	defer conn.Close()
	_, err = io.WriteString(conn, "CONNECT allowed.test:443 HTTP/1.1\r\n") // never finished
	assert.NilError(t, err)
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = io.ReadAll(conn)
	assert.NilError(t, err, "the proxy should close a client that never finishes its headers")
}

// With a cap of one connection, a second client waits until the first is
// gone.
func TestMaxConns(t *testing.T) {
	t.Parallel()
	up := startUpstream(t, echoPrefixed)
	c, _ := loopbackChecker(t, egress.Config{Allow: []string{"allowed.test:" + port(up)}}, "allowed.test")
	proxy, _ := startProxy(t, c, egress.WithMaxConns(1))
	first, _, resp := connect(t, proxy, "allowed.test:"+port(up), nil)
	assert.Equal(t, resp.StatusCode, http.StatusOK)

	second, err := net.Dial("tcp", proxy)
	assert.NilError(t, err)
	defer second.Close()
	_, err = io.WriteString(second, "CONNECT allowed.test:"+port(up)+" HTTP/1.1\r\nHost: x\r\n\r\n")
	assert.NilError(t, err)
	_ = second.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	_, err = second.Read(make([]byte, 1))
	assert.Assert(t, errors.Is(err, os.ErrDeadlineExceeded), "second connection served over the cap: %v", err)

	first.Close()
	_ = second.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err = http.ReadResponse(bufio.NewReader(second), &http.Request{Method: http.MethodConnect})
	assert.NilError(t, err)
	assert.Equal(t, resp.StatusCode, http.StatusOK)
}

// Close ends open tunnels, and Serve returns.
func TestCloseEndsTunnels(t *testing.T) {
	t.Parallel()
	up := startUpstream(t, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) })
	c, _ := loopbackChecker(t, egress.Config{Allow: []string{"allowed.test:" + port(up)}}, "allowed.test")
	p, err := egress.NewProxy(c)
	assert.NilError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	assert.NilError(t, err)
	done := make(chan error, 1)
	go func() { done <- p.Serve(ln) }()
	_, br, resp := connect(t, ln.Addr().String(), "allowed.test:"+port(up), nil)
	assert.Equal(t, resp.StatusCode, http.StatusOK)
	assert.NilError(t, p.Close())
	assert.NilError(t, <-done)
	_, err = io.ReadAll(br)
	assert.NilError(t, err)
	assert.Equal(t, p.Report().Allowed, 1)
}
