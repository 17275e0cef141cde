package executor

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/egress"
	"github.com/mitrity/mitrity/govern/plan"
	"github.com/mitrity/mitrity/govern/sandbox"
)

// requireSandbox skips without bubblewrap, unless GOVERN_REQUIRE_SANDBOX=1
// (make test, CI), where a missing tool fails.
func requireSandbox(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("GOVERN_REQUIRE_SANDBOX") == "1" {
			t.Fatalf("GOVERN_REQUIRE_SANDBOX=1 and bwrap is missing: %v", err)
		}
		t.Skip("bwrap is not installed")
	}
}

// requireRootNet skips a test that needs root and iproute2, unless
// GOVERN_REQUIRE_SANDBOX=1.
func requireRootNet(t testing.TB) {
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

func selfExe(t testing.TB) string {
	t.Helper()
	p, err := os.Executable()
	assert.NilError(t, err)
	return p
}

// sandboxed is an executor running bubblewrap with this test binary as the
// sandbox's init and the real proxy binary.
func sandboxed(t testing.TB, eg egress.Config, opts ...Option) *Executor {
	t.Helper()
	s := Sandbox{Helper: selfExe(t), Seccomp: sandbox.SeccompRequired, Egress: eg,
		Limits: sandbox.Limits{TmpfsBytes: 64 << 20, Nofile: 1024}}
	return New(4, append([]Option{WithSandbox(s), WithEgressProxy(egressProxyBin(t)), WithKillGrace(time.Second)}, opts...)...)
}

func runSandboxed(t testing.TB, e *Executor, p *plan.Plan) (Result, string, string) {
	t.Helper()
	return runIn(t, e, p, govern.SandboxBubblewrap)
}

func runIn(t testing.TB, e *Executor, p *plan.Plan, mode govern.SandboxMode) (Result, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	r := e.Run(context.Background(), p, mode, nil, &out, &errb)
	return r, out.String(), errb.String()
}

// proxiedModes are the modes in which a plan with an allowlist has its
// proxy: inside the sandbox, and in mode none through a bridge on the
// host's loopback.
var proxiedModes = []govern.SandboxMode{govern.SandboxBubblewrap, govern.SandboxNone}

// executorFor runs mode: sandboxed (sandboxed) for bubblewrap; for mode
// none an executor with no sandbox at all, as on a host without a backend,
// with eg as the host's egress settings. Both run the real proxy binary.
func executorFor(t testing.TB, mode govern.SandboxMode, eg egress.Config, opts ...Option) *Executor {
	t.Helper()
	if mode != govern.SandboxNone {
		requireSandbox(t)
		return sandboxed(t, eg, opts...)
	}
	return New(4, append([]Option{WithEgressSettings(eg), WithEgressProxy(egressProxyBin(t)), WithKillGrace(time.Second)}, opts...)...)
}

// proxyChildren lists the running mitrity-egressproxy processes whose
// parent is ppid.
func proxyChildren(ppid int) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		f := strings.Fields(s[i+2:])
		if len(f) < 2 || f[0] == "Z" || f[1] != strconv.Itoa(ppid) {
			continue
		}
		if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && filepath.Base(exe) == egress.BinaryName {
			pids = append(pids, pid)
		}
	}
	return pids
}

// egressDirs lists the proxy socket directories of this process.
func egressDirs(t testing.TB) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(os.TempDir(), fmt.Sprintf("%s%d-*", egress.ProcessDirPrefix, os.Getpid())))
	assert.NilError(t, err)
	return m
}

// Refusals through the real proxy, from inside a real sandbox and from a
// run in mode none: each comes back in the report with its reason, method
// and count; every proxy variable points at the bridge and NO_PROXY is
// empty; the proxy process is gone afterwards and its socket directory
// removed; in mode none the bridge's port on the host is closed. Every
// destination is refused before any lookup, so nothing leaves the host.
//
// Not parallel: it counts the proxy processes of this test binary.
func TestSandboxedEgressDenials(t *testing.T) {
	for _, mode := range proxiedModes {
		t.Run(mode.String(), func(t *testing.T) {
			e := executorFor(t, mode, egress.Config{})
			cmd := `printf '%s|' "$HTTP_PROXY" "$HTTPS_PROXY" "$ALL_PROXY" "$http_proxy" "$https_proxy" "$all_proxy" "${NO_PROXY-unset}" "${no_proxy-unset}"; echo
curl -s -o /dev/null -w '%{http_code}\n' https://denied.invalid/
curl -s -o /dev/null -w '%{http_code}\n' https://denied.invalid/again
curl -s -o /dev/null -w '%{http_code}\n' http://169.254.169.254/latest/meta-data/
curl -s -o /dev/null -w '%{http_code}\n' http://localhost:8080/`
			// curl reports the CONNECT refusal as 000 with the proxy's 403
			// behind it. The sandbox's own loopback goes around the proxy
			// (NO_PROXY): nothing listens there (000, no denial); in mode
			// none it is the host's, and the proxy refuses it.
			want := []string{"000", "000", "403", "403"}
			noProxy := ""
			denied, hosts := 4, []string{"denied.invalid:443", "169.254.169.254:80", "localhost:8080"}
			if mode != govern.SandboxNone {
				want[3], noProxy = "000", "localhost,127.0.0.1,::1"
				denied, hosts = 3, hosts[:2]
				// Only the sandbox has no route around the proxy.
				cmd += "\ncurl -s --max-time 2 --noproxy '*' http://127.0.0.1:9/ || echo noroute"
				want = append(want, "noroute")
			}
			p := newPlan(t, func(s *spec) {
				s.Egress = []string{"*.allowed.invalid", "localhost"}
				s.Command = cmd
			})
			r, out, errs := runIn(t, e, p, mode)
			assert.Equal(t, r.Status, govern.StatusCompleted, "%s %s", r.Message, errs)
			assert.Equal(t, r.SandboxMode, mode)
			lines := strings.Split(strings.TrimSpace(out), "\n")
			assert.Equal(t, len(lines), 1+len(want), out)
			vars := strings.Split(lines[0], "|")
			url := vars[0]
			assert.Check(t, strings.HasPrefix(url, "http://127.0.0.1:"), lines[0])
			assert.Check(t, is.DeepEqual(vars, []string{url, url, url, url, url, url, noProxy, noProxy, ""}))
			assert.Check(t, is.DeepEqual(lines[1:], want))

			assert.Equal(t, r.EgressError, "")
			assert.Assert(t, r.Egress != nil)
			rep := *r.Egress
			assert.Equal(t, rep.Allowed, 0)
			assert.Equal(t, rep.Denied, denied)
			assert.DeepEqual(t, rep.DeniedHosts, hosts)
			assert.Equal(t, len(rep.Denials), len(hosts))
			wantDenials := []struct {
				target, method string
				reason         egress.Reason
				count          int
			}{
				{"denied.invalid:443", "CONNECT", egress.ReasonNotAllowlisted, 2},
				{"169.254.169.254:80", "GET", egress.ReasonNotAllowlisted, 1},
				{"localhost:8080", "GET", egress.ReasonRefusedName, 1},
			}
			for i, w := range wantDenials[:len(hosts)] {
				d := rep.Denials[i]
				assert.Check(t, is.Equal(d.Target, w.target))
				assert.Check(t, is.Equal(d.Method, w.method))
				assert.Check(t, is.Equal(d.Reason, w.reason))
				assert.Check(t, is.Equal(d.Count, w.count))
				assert.Check(t, !d.First.IsZero() && time.Since(d.First) < time.Minute, "first refusal at %v", d.First)
			}
			// The report is in when Run returns; the process is gone right after.
			deadline := time.Now().Add(5 * time.Second)
			for len(proxyChildren(os.Getpid())) > 0 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			assert.Check(t, is.Len(proxyChildren(os.Getpid()), 0), "a proxy outlived its run")
			assert.Check(t, is.Len(egressDirs(t), 0), "socket directory left behind")
			if mode == govern.SandboxNone {
				// The bridge listened on the host's loopback: closed with the run.
				c, err := net.DialTimeout("tcp", strings.TrimPrefix(url, "http://"), 2*time.Second)
				if err == nil {
					c.Close()
				}
				assert.Check(t, err != nil, "the bridge's port %s is still open after the run", url)
			}
		})
	}
}

// An empty allowlist is no egress at all: no proxy is started (none is
// needed), no proxy variable is set, and there is nowhere to connect to.
func TestSandboxedEmptyAllowlistHasNoProxy(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	e := sandboxed(t, egress.Config{}, WithEgressProxy(""))
	p := newPlan(t, func(s *spec) {
		s.Command = `echo "${HTTP_PROXY-unset}"; curl -s --max-time 2 http://192.0.2.1/ || echo nonet`
	})
	r, out, errs := runSandboxed(t, e, p)
	assert.Equal(t, r.Status, govern.StatusCompleted, "%s %s", r.Message, errs)
	assert.Equal(t, out, "unset\nnonet\n")
	assert.Check(t, r.Egress == nil)
	assert.Equal(t, r.EgressError, "")

	// Mode none: no proxy and no variables either (the command has the
	// host's network, which this test does not touch).
	p = newPlan(t, func(s *spec) { s.Command = `echo "${HTTP_PROXY-unset}${https_proxy-unset}${NO_PROXY-unset}"` })
	r, out, errs = runIn(t, New(1, WithEgressProxy("")), p, govern.SandboxNone)
	assert.Equal(t, r.Status, govern.StatusCompleted, "%s %s", r.Message, errs)
	assert.Equal(t, out, "unsetunsetunset\n")
	assert.Check(t, r.Egress == nil)
	assert.Equal(t, r.EgressError, "")
}

// The host's settings a run's proxy starts from: WithEgressSettings when
// given, else the sandbox's, else the defaults. A gateway with no backend
// has no sandbox at all, and its runs in mode none still get their proxy.
func TestEgressSettings(t *testing.T) {
	t.Parallel()
	mine := egress.Config{AllowedPorts: []uint16{8443}}
	theSandbox := egress.Config{AllowedPorts: []uint16{443}}
	assert.Check(t, is.DeepEqual(New(1).egressSettings(), egress.Config{}))
	assert.Check(t, is.DeepEqual(New(1, WithSandbox(Sandbox{Egress: theSandbox})).egressSettings(), theSandbox))
	assert.Check(t, is.DeepEqual(New(1, WithSandbox(Sandbox{Egress: theSandbox}), WithEgressSettings(mine)).egressSettings(), mine))

	p := newPlan(t, func(s *spec) {
		s.Egress = []string{"example.com"}
		s.Command = `curl -s -o /dev/null -w '%{http_code}' http://example.com:8443/`
	})
	r, out, errs := runIn(t, New(1, WithEgressProxy(egressProxyBin(t))), p, govern.SandboxNone)
	assert.Equal(t, r.Status, govern.StatusCompleted, "%s %s", r.Message, errs)
	assert.Equal(t, out, "403")
	assert.Assert(t, r.Egress != nil, r.EgressError)
	assert.Check(t, is.DeepEqual(r.Egress.DeniedHosts, []string{"example.com:8443"}))
	assert.Check(t, is.Equal(r.Egress.Denials[0].Reason, egress.ReasonNotAllowlisted))
}

// No proxy binary, or one that cannot be started: a plan with an allowlist
// fails to start, saying why, and nothing runs, sandboxed or not.
func TestSandboxedProxyMissing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	notExec := filepath.Join(dir, "not-executable")
	assert.NilError(t, os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644))
	for _, tc := range []struct{ path, want string }{
		{"", "mitrity-egressproxy was not found next to the gateway or in PATH"},
		{"/nonexistent/mitrity-egressproxy", "starting /nonexistent/mitrity-egressproxy"},
		{notExec, "permission denied"},
	} {
		for _, mode := range proxiedModes {
			e := New(1, WithSandbox(Sandbox{Helper: "/nonexistent/helper"}), WithEgressProxy(tc.path))
			p := newPlan(t, func(s *spec) {
				s.Cwd, s.WorkspaceRoots = dir, []string{dir}
				s.Egress = []string{"example.com"}
				s.Command = "touch " + marker
			})
			r := e.Run(context.Background(), p, mode, nil, nil, nil)
			assert.Check(t, is.Equal(r.Status, govern.StatusFailedToStart), "%s %s", mode, tc.path)
			assert.Check(t, is.Equal(r.Reason, govern.ReasonSpawnError), "%s %s", mode, tc.path)
			assert.Check(t, is.Contains(r.Message, tc.want), "%s %s", mode, tc.path)
		}
	}
	_, err := os.Stat(marker)
	assert.Check(t, os.IsNotExist(err), "the command ran without its proxy")
}

// An invalid allowlist entry is this run's error, naming the entry, before
// anything is spawned.
func TestSandboxedInvalidAllowlist(t *testing.T) {
	t.Parallel()
	e := New(1, WithSandbox(Sandbox{Helper: "/nonexistent/helper"}), WithEgressProxy("/nonexistent/proxy"))
	p := newPlan(t, func(s *spec) { s.Egress = []string{"example.com", "https://example.org/x"} })
	for _, mode := range proxiedModes {
		r := e.Run(context.Background(), p, mode, nil, nil, nil)
		assert.Check(t, is.Equal(r.Status, govern.StatusFailedToStart), mode)
		assert.Check(t, is.Equal(r.Reason, govern.ReasonSpawnError), mode)
		assert.Check(t, is.Contains(r.Message, "allow[1]"), mode)
	}
}

// withFakeProxy runs command, with example.com allowed, in every proxied
// mode, with script as the proxy, and hands each run to check.
func withFakeProxy(t *testing.T, script, command string, check func(t *testing.T, d time.Duration, r Result, out, errs string)) {
	t.Helper()
	fake := filepath.Join(t.TempDir(), "fake-proxy")
	assert.NilError(t, os.WriteFile(fake, []byte(script), 0o755))
	for _, mode := range proxiedModes {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			e := executorFor(t, mode, egress.Config{}, WithEgressProxy(fake))
			p := newPlan(t, func(s *spec) {
				s.Egress = []string{"example.com"}
				s.Command = command
			})
			start := time.Now()
			r, out, errs := runIn(t, e, p, mode)
			check(t, time.Since(start), r, out, errs)
		})
	}
}

// A proxy that exits as soon as it starts ends the run, with what the
// proxy said: the command, which had just made its first connection and
// would then sleep, is killed rather than left without its way out.
func TestSandboxedProxyDies(t *testing.T) {
	t.Parallel()
	withFakeProxy(t, "#!/bin/sh\necho 'cannot serve: disk on fire' >&2\nexit 3\n",
		"echo started; curl -s -o /dev/null --max-time 5 http://example.com/; sleep 20; echo finished",
		func(t *testing.T, d time.Duration, r Result, out, _ string) {
			assert.Check(t, d < 10*time.Second, "the run went on without its proxy")
			assert.Equal(t, out, "started\n")
			assert.Equal(t, r.Status, govern.StatusKilled, r.Message)
			assert.Check(t, is.Contains(r.Message, "ended because its egress proxy failed"))
			assert.Check(t, is.Contains(r.Message, "cannot serve: disk on fire"))
			assert.Check(t, r.Egress == nil)
			assert.Check(t, is.Contains(r.EgressError, "exit status 3"))
		})
}

// A command that never connects never costs a proxy: none is started, and
// the report says nothing was allowed or refused.
func TestSandboxedProxyOnlyOnFirstConnection(t *testing.T) {
	t.Parallel()
	withFakeProxy(t, "#!/bin/sh\nexit 3\n", `echo "${HTTPS_PROXY:+proxied}"`,
		func(t *testing.T, _ time.Duration, r Result, out, errs string) {
			assert.Equal(t, r.Status, govern.StatusCompleted, "%s %s", r.Message, errs)
			assert.Equal(t, out, "proxied\n")
			assert.Equal(t, r.EgressError, "")
			assert.DeepEqual(t, r.Egress, &egress.Report{DeniedHosts: []string{}, Denials: []egress.DeniedDestination{}})
		})
}

// Threads of the gateway come and go (a goroutine that returns while
// locked to its thread ends it; govern/sandbox does so as root): none of
// that may reach the proxy through its parent-death signal.
func TestSandboxedProxySurvivesThreadExits(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				done := make(chan struct{})
				go func() {
					runtime.LockOSThread() // never unlocked: the thread exits
					close(done)
				}()
				<-done
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	defer wg.Wait()
	defer close(stop)
	e := sandboxed(t, egress.Config{})
	p := newPlan(t, func(s *spec) {
		s.Egress = []string{"example.com"}
		s.Command = `for i in 1 2 3 4 5; do sleep 0.2; curl -s -o /dev/null -w '%{http_code} ' http://denied.invalid/; done`
	})
	r, out, errs := runSandboxed(t, e, p)
	assert.Equal(t, r.Status, govern.StatusCompleted, "%s %s", r.Message, errs)
	assert.Equal(t, out, "403 403 403 403 403 ")
	assert.Assert(t, r.Egress != nil, r.EgressError)
	assert.Equal(t, r.Egress.Denied, 5)
}

// SIGKILL the gateway mid-run: its proxy dies with it (and so does the
// sandbox), though nobody closed the proxy's stdin.
func TestSandboxedProxyDiesWithGateway(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	ws := t.TempDir()
	marker := fmt.Sprintf("executor-test-%d", rand.Int64())
	gw := exec.Command(selfExe(t))
	gw.Env = append(os.Environ(), "EXECUTOR_TEST_HELPER=gateway", "EXECUTOR_TEST_WS="+ws,
		"EXECUTOR_TEST_MARKER="+marker, "EXECUTOR_TEST_PROXY="+egressProxyBin(t))
	stderr := &lockedBuffer{}
	gw.Stderr = stderr
	assert.NilError(t, gw.Start())
	t.Cleanup(func() { _ = gw.Process.Kill(); _ = gw.Wait() })

	var proxies []int
	deadline := time.Now().Add(30 * time.Second)
	for len(proxies) == 0 || len(processesWith(marker)) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the run never started (proxies %v); gateway stderr:\n%s", proxies, stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
		proxies = proxyChildren(gw.Process.Pid)
	}
	t.Cleanup(func() {
		for _, pid := range append(proxies, processesWith(marker)...) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	assert.NilError(t, gw.Process.Signal(syscall.SIGKILL))
	_ = gw.Wait()
	deadline = time.Now().Add(10 * time.Second)
	for {
		left := append(alive(proxies), processesWith(marker)...)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes outlived the SIGKILLed gateway: %v", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lockedBuffer collects a child's output safely.
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

// alive keeps the pids that still run (zombies are gone).
func alive(pids []int) []int {
	var out []int
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i > 0 && i+2 < len(s) && s[i+2] == 'Z' {
			continue
		}
		out = append(out, pid)
	}
	return out
}

// processesWith lists the pids whose command line holds s.
func processesWith(s string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(s)) && !bytes.Contains(b, []byte("EXECUTOR_TEST")) {
			pids = append(pids, pid)
		}
	}
	return alive(pids)
}

func ip(t testing.TB, args ...string) {
	t.Helper()
	out, err := exec.Command("ip", args...).CombinedOutput()
	assert.NilError(t, err, "ip %s: %s", strings.Join(args, " "), out)
}

// netnsServer puts an HTTP server in a network namespace behind a veth
// pair: the host side is 10.214.N.1/29, the server 10.214.N.2:8443.
// Private addresses we assign, reachable only from this host: a real
// destination without any test hook in the proxy.
func netnsServer(t testing.TB) (subnet int) {
	t.Helper()
	subnet = rand.IntN(256)
	tag := fmt.Sprintf("%d%04d", os.Getpid()%10000, rand.IntN(10000))
	ns, hostIf, nsIf := "mtexec"+tag, "mtxh"+tag, "mtxn"+tag
	ip(t, "netns", "add", ns)
	t.Cleanup(func() {
		_ = exec.Command("ip", "netns", "del", ns).Run()
		_ = exec.Command("ip", "link", "del", hostIf).Run()
	})
	ip(t, "link", "add", hostIf, "type", "veth", "peer", "name", nsIf)
	ip(t, "link", "set", nsIf, "netns", ns)
	ip(t, "addr", "add", fmt.Sprintf("10.214.%d.1/29", subnet), "dev", hostIf)
	ip(t, "link", "set", hostIf, "up")
	ip(t, "-n", ns, "addr", "add", fmt.Sprintf("10.214.%d.2/29", subnet), "dev", nsIf)
	ip(t, "-n", ns, "link", "set", nsIf, "up")
	ip(t, "-n", ns, "link", "set", "lo", "up")
	srv := exec.Command("ip", "netns", "exec", ns, selfExe(t))
	srv.Env = append(os.Environ(), "EXECUTOR_TEST_HELPER=http", fmt.Sprintf("EXECUTOR_TEST_ADDR=10.214.%d.2:8443", subnet))
	out, err := srv.StdoutPipe()
	assert.NilError(t, err)
	srv.Stderr = os.Stderr
	assert.NilError(t, srv.Start())
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	l, err := bufio.NewReader(out).ReadString('\n')
	assert.NilError(t, err)
	assert.Equal(t, l, "listening\n")
	return subnet
}

// The allowed path, end to end: a command, sandboxed or in mode none,
// reaches a real server through the spawned proxy, by CONNECT and by plain
// HTTP, while the host's own side of the link is refused as a host
// address. As root, the command runs as another user (exec.run_as): the
// socket is the gateway's and only the gateway's bridge dials it. In mode
// none nothing stops a process from ignoring the proxy variables: a
// --noproxy request reaches the server directly, and the proxy never sees it.
func TestSandboxedEgressAllowedPath(t *testing.T) {
	requireRootNet(t)
	t.Parallel()
	n := netnsServer(t)
	cidr := netip.MustParsePrefix(fmt.Sprintf("10.214.%d.0/29", n))
	// Every directory on the way, and the helper the sandbox's init is
	// bound from, must be reachable by the other user.
	base := t.TempDir()
	assert.NilError(t, os.Chmod(filepath.Dir(base), 0o755))
	assert.NilError(t, os.Chmod(base, 0o755))
	helper := filepath.Join(base, "init-helper")
	// cp writes it: a descriptor this process held open for writing would
	// reach children forked meanwhile, and an exec of it fail (ETXTBSY).
	out, err := exec.Command("cp", selfExe(t), helper).CombinedOutput()
	assert.NilError(t, err, string(out))
	ws := filepath.Join(base, "ws")
	assert.NilError(t, os.Mkdir(ws, 0o777))
	assert.NilError(t, os.Chmod(ws, 0o777))
	server, hostSide := fmt.Sprintf("10.214.%d.2:8443", n), fmt.Sprintf("10.214.%d.1:8443", n)
	for _, mode := range proxiedModes {
		t.Run(mode.String(), func(t *testing.T) {
			e := executorFor(t, mode, egress.Config{AllowedPrivateCIDRs: []netip.Prefix{cidr}, AllowedPorts: []uint16{8443}})
			if e.sandbox != nil {
				e.sandbox.Helper = helper
			}
			cmd := fmt.Sprintf(`id -u
curl -sS --max-time 10 http://%[1]s/plain; echo
curl -sS --max-time 10 -p http://%[1]s/tunnel; echo
curl -s -o /dev/null -w '%%{http_code}\n' --max-time 10 http://%[2]s/`, server, hostSide)
			want := "65534\nhello GET plain\nhello GET tunnel\n403\n"
			if mode == govern.SandboxNone {
				cmd += fmt.Sprintf("\ncurl -sS --max-time 10 --noproxy '*' http://%s/direct; echo", server)
				want += "hello GET direct\n"
			}
			p := newPlan(t, func(s *spec) {
				s.Cwd, s.WorkspaceRoots = ws, []string{ws}
				s.RunAs = &plan.User{UID: 65534, GID: 65534, Name: "nobody"}
				s.Egress = []string{fmt.Sprintf("10.214.%d.2", n), fmt.Sprintf("10.214.%d.1", n)}
				s.Command = cmd
			})
			r, out, errs := runIn(t, e, p, mode)
			assert.Equal(t, r.Status, govern.StatusCompleted, "%s %s", r.Message, errs)
			assert.Equal(t, out, want, errs)
			assert.Assert(t, r.Egress != nil, r.EgressError)
			assert.Equal(t, r.Egress.Allowed, 2)
			assert.Equal(t, r.Egress.Denied, 1)
			assert.Equal(t, len(r.Egress.Denials), 1)
			d := r.Egress.Denials[0]
			assert.Check(t, is.Equal(d.Target, hostSide))
			assert.Check(t, is.Equal(d.Reason, egress.ReasonRefusedAddress))
			assert.Check(t, is.Equal(d.Category, egress.CategoryHostInterface))
		})
	}
}
