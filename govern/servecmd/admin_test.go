package servecmd

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/audit"
	"github.com/mitrity/mitrity/govern/metrics"
)

func adminGet(t *testing.T, c *http.Client, method, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	assert.NilError(t, err)
	resp, err := c.Do(req)
	assert.NilError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	assert.NilError(t, err)
	return resp.StatusCode, string(b)
}

func TestStartAdmin(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	ev, err := audit.Builder{}.Build(audit.Record{
		Call:     govern.Call{Agent: "ci", Tool: govern.ToolShellExecute, ActionType: govern.ActionShellExecute, Surface: "mcp"},
		Decision: govern.Decision{Outcome: govern.Deny, Reason: govern.ReasonCredentialInArgv, Stage: "analyzer"},
	})
	assert.NilError(t, err)
	m.Observe(ev)

	var logs bytes.Buffer
	addr, stop, err := startAdmin(context.Background(), "127.0.0.1:0", m, zerolog.New(&logs))
	assert.NilError(t, err)
	defer stop()
	host, port, err := net.SplitHostPort(addr)
	assert.NilError(t, err)
	assert.Equal(t, host, "127.0.0.1")
	assert.Assert(t, port != "0")
	assert.Check(t, !strings.Contains(logs.String(), `"level":"warn"`), logs.String())

	c := &http.Client{Timeout: 10 * time.Second}
	base := "http://" + addr
	code, body := adminGet(t, c, http.MethodGet, base+"/metrics")
	assert.Equal(t, code, http.StatusOK)
	assert.Check(t, is.Contains(body, `mitrity_decisions_total{decision="deny",reason="credential_in_argv"} 1`+"\n"))
	assert.Check(t, is.Contains(body, "# TYPE mitrity_execution_duration_seconds histogram"))
	assert.Check(t, is.Contains(body, "mitrity_egress_denied_total 0\n"))
	assert.Check(t, is.Contains(body, "go_goroutines "))

	code, body = adminGet(t, c, http.MethodGet, base+"/healthz")
	assert.Equal(t, code, http.StatusOK)
	assert.Equal(t, body, "ok")

	code, _ = adminGet(t, c, http.MethodPost, base+"/metrics")
	assert.Equal(t, code, http.StatusMethodNotAllowed)
	code, _ = adminGet(t, c, http.MethodGet, base+"/")
	assert.Equal(t, code, http.StatusNotFound)
	code, _ = adminGet(t, c, http.MethodGet, base+"/debug/pprof/")
	assert.Equal(t, code, http.StatusNotFound)

	stop()
	stop() // idempotent
	_, err = net.DialTimeout("tcp", addr, time.Second)
	assert.Check(t, err != nil, "the listener is still open after stop")
}

func TestStartAdminContextStops(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	addr, stop, err := startAdmin(ctx, "127.0.0.1:0", metrics.New(), zerolog.Nop())
	assert.NilError(t, err)
	defer stop()
	cancel()
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			break
		}
		conn.Close()
		assert.Assert(t, time.Now().Before(deadline), "the listener is still open after the context ended")
		time.Sleep(10 * time.Millisecond)
	}
}

func TestStartAdminOff(t *testing.T) {
	t.Parallel()
	addr, stop, err := startAdmin(context.Background(), "", metrics.New(), zerolog.Nop())
	assert.NilError(t, err)
	assert.Equal(t, addr, "")
	stop()
}

func TestStartAdminListenError(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	assert.NilError(t, err)
	defer l.Close()
	for _, addr := range []string{l.Addr().String(), "127.0.0.1:notaport", "127.0.0.1"} {
		_, stop, err := startAdmin(context.Background(), addr, metrics.New(), zerolog.Nop())
		assert.Check(t, err != nil, addr)
		assert.Check(t, stop == nil, addr)
	}
}

func TestStartAdminNonLoopbackWarns(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	_, stop, err := startAdmin(context.Background(), "0.0.0.0:0", metrics.New(), zerolog.New(&logs))
	assert.NilError(t, err)
	stop()
	assert.Check(t, is.Contains(logs.String(), `"level":"warn"`))
	assert.Check(t, is.Contains(logs.String(), "non-loopback"))
}

func TestLoopbackAddr(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ip   string
		want bool
	}{
		{"127.0.0.1", true},
		{"127.3.2.1", true},
		{"::1", true},
		{"0.0.0.0", false},
		{"::", false},
		{"192.0.2.7", false},
		{"2001:db8::1", false},
	} {
		assert.Check(t, is.Equal(loopbackAddr(&net.TCPAddr{IP: net.ParseIP(tc.ip), Port: 9464}), tc.want), tc.ip)
	}
	assert.Check(t, !loopbackAddr(&net.UnixAddr{Name: "/tmp/x", Net: "unix"}))
}

// TestStartAdminConnectionsBounded: the admin listener holds at most
// adminMaxConnsPerPeer connections of one local user at once; one past it
// is answered 503 and closed at once, and a scrape still works once the
// idle ones close. Before, any local user could hold as many connections
// (each a descriptor of the gateway's, which executions need) as it could
// open, each for the header timeout, again and again.
func TestStartAdminConnectionsBounded(t *testing.T) {
	t.Parallel()
	addr, stop, err := startAdmin(context.Background(), "127.0.0.1:0", metrics.New(), zerolog.Nop())
	assert.NilError(t, err)
	defer stop()
	var idle []net.Conn
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	for range adminMaxConnsPerPeer {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		assert.NilError(t, err)
		idle = append(idle, c)
	}
	// The accepts above are the server's to make; give it the moment.
	time.Sleep(200 * time.Millisecond)
	extra, err := net.DialTimeout("tcp", addr, time.Second)
	assert.NilError(t, err)
	defer extra.Close()
	assert.NilError(t, extra.SetReadDeadline(time.Now().Add(3*time.Second)))
	b, err := io.ReadAll(extra)
	assert.NilError(t, err, "one connection past the bound was kept open")
	assert.Check(t, is.Contains(string(b), "503 Service Unavailable"))
	for _, c := range idle {
		c.Close()
	}
	idle = nil
	c := &http.Client{Timeout: 10 * time.Second}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		code, _ := adminGet(t, c, http.MethodGet, "http://"+addr+"/healthz")
		if code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no scrape after the idle connections closed: %d", code)
		}
	}
}
