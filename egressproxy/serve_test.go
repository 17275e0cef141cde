package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern/egress"
)

// lockedBuffer collects a child's stderr safely.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// proxyProc is one running mitrity-egressproxy serve.
type proxyProc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string // stdout, line by line
	stderr *lockedBuffer
	socket string
	done   chan error
}

// startProxy runs the binary with cfg on stdin. It does not wait for ready.
func startProxyProc(t testing.TB, cfg string) *proxyProc {
	t.Helper()
	p := &proxyProc{
		socket: filepath.Join(t.TempDir(), "egress.sock"),
		stderr: &lockedBuffer{},
		lines:  make(chan string, 16),
		done:   make(chan error, 1),
	}
	p.cmd = exec.Command(proxyBinary(t), "--log-level", "debug", "serve", "--socket", p.socket)
	p.cmd.Stderr = p.stderr
	var err error
	p.stdin, err = p.cmd.StdinPipe()
	assert.NilError(t, err)
	stdout, err := p.cmd.StdoutPipe()
	assert.NilError(t, err)
	assert.NilError(t, p.cmd.Start())
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
		p.done <- p.cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		t.Logf("proxy stderr:\n%s", p.stderr.String())
	})
	_, err = io.WriteString(p.stdin, cfg)
	assert.NilError(t, err)
	return p
}

// line returns the next stdout line, or "" when stdout ended.
func (p *proxyProc) line(t testing.TB) string {
	t.Helper()
	select {
	case l := <-p.lines:
		return l
	case <-time.After(20 * time.Second):
		t.Fatalf("no output from the proxy; stderr:\n%s", p.stderr.String())
		return ""
	}
}

func (p *proxyProc) wait(t testing.TB) error {
	t.Helper()
	select {
	case err := <-p.done:
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("the proxy did not exit")
		return nil
	}
}

// report reads the report line, then the exit.
func (p *proxyProc) report(t testing.TB) egress.Report {
	t.Helper()
	var r egress.Report
	l := p.line(t)
	assert.NilError(t, json.Unmarshal([]byte(l), &r), "report line %q", l)
	assert.Equal(t, p.line(t), "", "output after the report")
	assert.NilError(t, p.wait(t))
	return r
}

// request sends raw over a new connection to the socket and reads the
// answer.
func request(t *testing.T, socket, raw string) (*http.Response, string) {
	t.Helper()
	conn, err := net.Dial("unix", socket)
	assert.NilError(t, err)
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	_, err = io.WriteString(conn, raw)
	assert.NilError(t, err)
	method := strings.Fields(raw)[0]
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: method})
	assert.NilError(t, err)
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func connectReq(authority string) string {
	return fmt.Sprintf("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", authority, authority)
}

// Every destination here is refused before any lookup, so the test never
// touches the network beyond the socket.
func TestServeDeniesAndReports(t *testing.T) {
	t.Parallel()
	p := startProxyProc(t, `{"allow": ["*", "*.example.org"], "allowed_ports": [443]}`)
	assert.Equal(t, p.line(t), "ready")
	fi, err := os.Stat(p.socket)
	assert.NilError(t, err)
	assert.Equal(t, fi.Mode()&os.ModeSocket, os.ModeSocket)
	assert.Equal(t, fi.Mode().Perm(), os.FileMode(0o600))

	cases := []struct {
		raw    string
		reason egress.Reason
	}{
		{connectReq("localhost:443"), egress.ReasonRefusedName},
		{connectReq("metadata.google.internal:443"), egress.ReasonRefusedName},
		{connectReq("2130706433:443"), egress.ReasonNumericHost},
		{connectReq("0x7f000001:443"), egress.ReasonNumericHost},
		{connectReq("[::ffff:127.0.0.1]:443"), egress.ReasonNotAllowlisted},
		{connectReq("example.com:22"), egress.ReasonNotAllowlisted},
		{"GET http://169.254.169.254/latest/meta-data/ HTTP/1.1\r\nHost: 169.254.169.254\r\n\r\n", egress.ReasonNotAllowlisted},
		{connectReq("localhost:443"), egress.ReasonRefusedName}, // a repeat: counted, listed once
	}
	for _, tc := range cases {
		resp, body := request(t, p.socket, tc.raw)
		assert.Check(t, is.Equal(resp.StatusCode, http.StatusForbidden), tc.raw)
		assert.Check(t, is.Contains(body, string(tc.reason)), tc.raw)
	}
	resp, _ := request(t, p.socket, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	assert.Equal(t, resp.StatusCode, http.StatusBadRequest)

	assert.NilError(t, p.stdin.Close())
	r := p.report(t)
	hosts := []string{
		"localhost:443", "metadata.google.internal:443", `"2130706433":443`, `"0x7f000001":443`,
		"[::ffff:127.0.0.1]:443", "example.com:22", "169.254.169.254:80", "x:80",
	}
	reasons := make([]egress.Reason, 0, len(hosts))
	for _, tc := range cases[:len(cases)-1] {
		reasons = append(reasons, tc.reason)
	}
	reasons = append(reasons, egress.ReasonBadRequest) // the origin-form GET, its Host header's destination
	assert.Equal(t, len(r.Denials), len(hosts))
	for i, d := range r.Denials {
		assert.Check(t, is.Equal(d.Target, hosts[i]))
		assert.Check(t, is.Equal(d.Reason, reasons[i]), d.Target)
		assert.Check(t, !d.First.IsZero())
	}
	assert.Equal(t, r.Denials[0].Count, 2) // localhost, asked twice
	assert.Equal(t, r.Denials[6].Method, http.MethodGet)
	r.Denials = nil
	assert.DeepEqual(t, r, egress.Report{Denied: len(cases) + 1, DeniedHosts: hosts, BadRequests: 1})
	_, err = os.Stat(p.socket)
	assert.Assert(t, os.IsNotExist(err), "socket left behind")
	assert.Check(t, is.Contains(p.stderr.String(), "egress.decision"))
}

func TestServeStopsOnSIGTERM(t *testing.T) {
	t.Parallel()
	p := startProxyProc(t, `{"allow": []}`)
	assert.Equal(t, p.line(t), "ready")
	resp, body := request(t, p.socket, connectReq("example.com:443"))
	assert.Equal(t, resp.StatusCode, http.StatusForbidden)
	assert.Check(t, is.Contains(body, string(egress.ReasonNoEgress)))
	assert.NilError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	r := p.report(t)
	assert.Equal(t, r.Denied, 1)
	assert.DeepEqual(t, r.DeniedHosts, []string{"example.com:443"})
}

// An invalid configuration refuses to start, names the field, and creates
// nothing.
func TestServeInvalidConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ cfg, want string }{
		{`{"allow": ["https://example.com"]}`, "allow[0]"},
		{`{"allowed_private_cidrs": ["8.8.8.0/24"]}`, "allowed_private_cidrs[0]"},
		{`{"allow": [], "typo": 1}`, "typo"},
		{`not json`, "invalid egress config"},
	} {
		p := startProxyProc(t, tc.cfg)
		assert.NilError(t, p.stdin.Close())
		assert.Equal(t, p.line(t), "", "%s: printed something", tc.cfg)
		err := p.wait(t)
		var ee *exec.ExitError
		assert.Assert(t, errors.As(err, &ee), "%s: exit %v", tc.cfg, err)
		assert.Check(t, is.Contains(p.stderr.String(), tc.want))
		_, err = os.Stat(p.socket)
		assert.Check(t, os.IsNotExist(err), "%s: socket created", tc.cfg)
	}
}

func TestServeExistingSocketPath(t *testing.T) {
	t.Parallel()
	p := startProxyProc(t, `{"allow": []}`)
	assert.Equal(t, p.line(t), "ready")
	// Run a second proxy on the live socket's path: it must refuse, and the
	// first must keep serving.
	cmd := exec.Command(proxyBinary(t), "serve", "--socket", p.socket)
	cmd.Stdin = strings.NewReader(`{"allow": []}`)
	out, err := cmd.CombinedOutput()
	assert.Assert(t, err != nil, "second proxy started on a used path: %s", out)
	assert.Check(t, is.Contains(string(out), "already exists"))
	resp, _ := request(t, p.socket, connectReq("example.com:443"))
	assert.Equal(t, resp.StatusCode, http.StatusForbidden)
	assert.NilError(t, p.stdin.Close())
	assert.Equal(t, p.report(t).Denied, 1)
}

// requireRoot skips a test that needs root, unless make test (CI) demands
// everything run.
func requireRoot(t testing.TB) {
	t.Helper()
	_, err := exec.LookPath("ip")
	if os.Geteuid() == 0 && err == nil {
		return
	}
	if os.Getenv("GOVERN_REQUIRE_SANDBOX") == "1" {
		t.Fatal("needs root and iproute2 (ip), and GOVERN_REQUIRE_SANDBOX=1 is set")
	}
	t.Skip("needs root and iproute2 (ip)")
}

func ip(t testing.TB, args ...string) {
	t.Helper()
	out, err := exec.Command("ip", args...).CombinedOutput()
	assert.NilError(t, err, "ip %s: %s", strings.Join(args, " "), out)
}

// netnsHost makes a network namespace with a veth pair: the host side gets
// 10.213.N.1/29 and the namespace side 10.213.N.2/29. Private addresses we
// assign, reachable only from this host.
func netnsHost(t testing.TB) (ns string, subnet int) {
	t.Helper()
	subnet = rand.IntN(256)
	tag := fmt.Sprintf("%d%04d", os.Getpid()%10000, rand.IntN(10000))
	ns = "mtegress" + tag
	hostIf, nsIf := "mteh"+tag, "mten"+tag
	ip(t, "netns", "add", ns)
	t.Cleanup(func() {
		_ = exec.Command("ip", "netns", "del", ns).Run()
		_ = exec.Command("ip", "link", "del", hostIf).Run()
	})
	ip(t, "link", "add", hostIf, "type", "veth", "peer", "name", nsIf)
	ip(t, "link", "set", nsIf, "netns", ns)
	ip(t, "addr", "add", fmt.Sprintf("10.213.%d.1/29", subnet), "dev", hostIf)
	ip(t, "link", "set", hostIf, "up")
	ip(t, "-n", ns, "addr", "add", fmt.Sprintf("10.213.%d.2/29", subnet), "dev", nsIf)
	// .5 answers inside the namespace (with a reset: nothing listens), until
	// the host takes the same address for itself.
	ip(t, "-n", ns, "addr", "add", fmt.Sprintf("10.213.%d.5/29", subnet), "dev", nsIf)
	ip(t, "-n", ns, "link", "set", nsIf, "up")
	ip(t, "-n", ns, "link", "set", "lo", "up")
	t.Cleanup(func() {
		_ = exec.Command("ip", "addr", "del", fmt.Sprintf("10.213.%d.5/32", subnet), "dev", hostIf).Run()
	})
	return ns, subnet
}

// A real allowed path with no test override: a server in a network
// namespace at a private address the operator opened. The host's own side
// of the link is refused, including an address added while the proxy runs.
func TestServeNetnsAllowedPath(t *testing.T) {
	requireRoot(t)
	ns, n := netnsHost(t)
	const port = "8443"
	server := fmt.Sprintf("10.213.%d.2:%s", n, port)
	echo := exec.Command("ip", "netns", "exec", ns, os.Args[0])
	echo.Env = append(os.Environ(), "EGRESSPROXY_TEST_HELPER=echo", "EGRESSPROXY_ECHO_ADDR="+server)
	echoOut, err := echo.StdoutPipe()
	assert.NilError(t, err)
	echo.Stderr = os.Stderr
	assert.NilError(t, echo.Start())
	t.Cleanup(func() { _ = echo.Process.Kill(); _ = echo.Wait() })
	l, err := bufio.NewReader(echoOut).ReadString('\n')
	assert.NilError(t, err)
	assert.Equal(t, l, "listening\n")

	cfg := fmt.Sprintf(`{"allow": ["10.213.%[1]d.2:%[2]s", "10.213.%[1]d.1:%[2]s", "10.213.%[1]d.5:%[2]s", "10.213.%[1]d.3:%[2]s"],
		"allowed_private_cidrs": ["10.213.%[1]d.0/29"], "denied_cidrs": ["10.213.%[1]d.3/32"]}`, n, port)
	p := startProxyProc(t, cfg)
	assert.Equal(t, p.line(t), "ready")

	conn, err := net.Dial("unix", p.socket)
	assert.NilError(t, err)
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	_, err = io.WriteString(conn, connectReq(server)+"early")
	assert.NilError(t, err)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	assert.NilError(t, err)
	assert.Equal(t, resp.StatusCode, http.StatusOK)
	_, err = io.WriteString(conn, "+more")
	assert.NilError(t, err)
	got := make([]byte, len("echo:early"))
	_, err = io.ReadFull(br, got)
	assert.NilError(t, err)
	assert.Assert(t, strings.HasPrefix(string(got), "echo:early"))
	assert.NilError(t, conn.(*net.UnixConn).CloseWrite())
	rest, err := io.ReadAll(br)
	assert.NilError(t, err)
	assert.Assert(t, strings.HasSuffix(string(rest), "bye"), "got %q", rest)

	// The host side of the link: a host interface address.
	resp, body := request(t, p.socket, connectReq(fmt.Sprintf("10.213.%d.1:%s", n, port)))
	assert.Equal(t, resp.StatusCode, http.StatusForbidden)
	assert.Check(t, is.Contains(body, "refused_address"))
	// Denied CIDR beats allowed_private_cidrs.
	resp, _ = request(t, p.socket, connectReq(fmt.Sprintf("10.213.%d.3:%s", n, port)))
	assert.Equal(t, resp.StatusCode, http.StatusForbidden)
	// An address the host gains while the proxy runs is refused after the
	// refresh interval.
	resp, _ = request(t, p.socket, connectReq(fmt.Sprintf("10.213.%d.5:%s", n, port)))
	assert.Equal(t, resp.StatusCode, http.StatusBadGateway) // allowed, nothing listens
	ip(t, "addr", "add", fmt.Sprintf("10.213.%d.5/32", n), "dev", "mteh"+strings.TrimPrefix(ns, "mtegress"))
	time.Sleep(2500 * time.Millisecond)
	resp, body = request(t, p.socket, connectReq(fmt.Sprintf("10.213.%d.5:%s", n, port)))
	assert.Equal(t, resp.StatusCode, http.StatusForbidden)
	assert.Check(t, is.Contains(body, "refused_address"))

	assert.NilError(t, p.stdin.Close())
	r := p.report(t)
	assert.Equal(t, r.Allowed, 2)
	assert.Equal(t, r.Denied, 3)
	assert.Equal(t, r.DialErrors, 1)
	assert.Check(t, is.Contains(p.stderr.String(), "host_interface"))
	assert.Check(t, is.Contains(p.stderr.String(), "denied_cidr"))
}

// A process in namespaces of its own (as every sandboxed command is) that
// reached the socket, as the same uid, gets no answer: the proxy serves
// only the bridge, which runs outside every sandbox. The control is a
// host process, which gets the proxy's refusal of the same request.
func TestServeRefusesNamespacedPeer(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("unshare (util-linux) not installed")
	}
	p := startProxyProc(t, `{"allow": ["*"]}`)
	assert.Equal(t, p.line(t), "ready")
	resp, _ := request(t, p.socket, connectReq("localhost:443"))
	assert.Equal(t, resp.StatusCode, http.StatusForbidden, "control: a host process gets the proxy's answer")
	script := `socket(my $s, AF_UNIX, SOCK_STREAM, 0) or die "socket: $!"; connect($s, pack_sockaddr_un($ARGV[0])) or die "connect: $!";
syswrite($s, "CONNECT localhost:443 HTTP/1.1\r\nHost: localhost:443\r\n\r\n"); my $n = sysread($s, my $buf, 4096); print defined $n && $n > 0 ? "ANSWERED: $buf" : "NO-ANSWER\n";`
	out, err := exec.Command("unshare", "--user", "--map-current-user", "--pid", "--fork", "--", "perl", "-MSocket", "-e", script, p.socket).CombinedOutput()
	assert.NilError(t, err, string(out))
	assert.Check(t, is.Equal(string(out), "NO-ANSWER\n"))
	assert.NilError(t, p.stdin.Close())
	r := p.report(t)
	assert.Check(t, is.Equal(r.Denied, 1), "only the host's request was decided")
	assert.Check(t, is.Contains(p.stderr.String(), "only the sandbox's bridge may connect"))
}
