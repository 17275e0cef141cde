package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The systemd side of the host service (docs/install.md), driven without
// systemd as PID 1: a harness that speaks systemd's own protocols to the
// real gateway. NOTIFY_SOCKET is a datagram socket the test reads (the
// sender's pid checked, as NotifyAccess=main does); LISTEN_FDS passes a
// socket the test made, as fd 3, with LISTEN_PID set by a shell that then
// execs the gateway (the pid stays the same, which is what go-systemd's
// activation checks).

// notifySocket listens for sd_notify datagrams at dir/notify.sock,
// writable by uid (the gateway's user), with the senders' credentials.
type notifySocket struct {
	path string
	conn *net.UnixConn
}

func newNotifySocket(t testing.TB, dir string, uid, gid int) *notifySocket {
	t.Helper()
	path := filepath.Join(dir, "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	must(t, err)
	t.Cleanup(func() { conn.Close() })
	must(t, os.Chown(path, uid, gid))
	raw, err := conn.SyscallConn()
	must(t, err)
	must(t, raw.Control(func(fd uintptr) {
		err = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PASSCRED, 1)
	}))
	must(t, err)
	return &notifySocket{path: path, conn: conn}
}

// next returns the next datagram and its sender's pid, or ok false when
// none came within d.
func (n *notifySocket) next(t testing.TB, d time.Duration) (msg string, pid int, ok bool) {
	t.Helper()
	must(t, n.conn.SetReadDeadline(time.Now().Add(d)))
	buf, oob := make([]byte, 4096), make([]byte, 1024)
	nb, noob, _, _, err := n.conn.ReadMsgUnix(buf, oob)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "", 0, false
	}
	must(t, err)
	msgs, err := unix.ParseSocketControlMessage(oob[:noob])
	must(t, err)
	for _, m := range msgs {
		if cred, err := unix.ParseUnixCredentials(&m); err == nil {
			pid = int(cred.Pid)
		}
	}
	return string(buf[:nb]), pid, true
}

// activatedGateway is a gateway started as systemd starts a unit.
type activatedGateway struct {
	cmd  *exec.Cmd
	log  *lockedBuffer
	done chan struct{}
	err  error
}

// startActivated runs the world's gateway with args, NOTIFY_SOCKET set
// and, when ln is not nil, ln passed as fd 3 named "admission".
func startActivated(t testing.TB, w *world, notify string, ln *os.File, args ...string) *activatedGateway {
	t.Helper()
	// sh execs the gateway, so LISTEN_PID=$$ is the gateway's pid.
	argv := append([]string{"-c", `LISTEN_PID=$$ exec "$0" "$@"`, w.bin}, args...)
	cmd := exec.Command("/bin/sh", argv...)
	cmd.Dir = w.ws
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + w.dir, "NOTIFY_SOCKET=" + notify}
	if ln != nil {
		cmd.ExtraFiles = []*os.File{ln}
		cmd.Env = append(cmd.Env, "LISTEN_FDS=1", "LISTEN_FDNAMES=admission")
	}
	if w.asUser != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: w.asUser}
	}
	g := &activatedGateway{cmd: cmd, log: &lockedBuffer{}, done: make(chan struct{})}
	cmd.Stderr = g.log
	must(t, cmd.Start())
	go func() { g.err = cmd.Wait(); close(g.done) }()
	t.Cleanup(func() { g.stop(t) })
	return g
}

// stop sends SIGTERM and waits for the exit.
func (g *activatedGateway) stop(t testing.TB) {
	select {
	case <-g.done:
		return
	default:
	}
	g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.done:
	case <-time.After(20 * time.Second):
		g.cmd.Process.Kill()
		t.Errorf("the gateway did not stop on SIGTERM")
	}
}

// exitCode waits up to d for the exit; -1 when it still runs.
func (g *activatedGateway) exitCode(d time.Duration) int {
	select {
	case <-g.done:
	case <-time.After(d):
		select {
		case <-g.done:
		default:
			return -1
		}
	}
	var ee *exec.ExitError
	if errors.As(g.err, &ee) {
		return ee.ExitCode()
	}
	return 0
}

// systemdWorld is a world whose config serves the admission socket at
// sock, with the gateway's uid and gid.
func systemdWorld(t *testing.T, asUser bool) (w *world, sock string, uid, gid int) {
	t.Helper()
	w = newWorldBackend(t, asUser, hookPolicy, "auto")
	run := filepath.Join(w.dir, "run")
	sock = filepath.Join(run, "admission.sock")
	cfg, err := os.ReadFile(w.cfg)
	must(t, err)
	must(t, os.WriteFile(w.cfg, append(cfg, fmt.Sprintf("admission:\n  socket: %s\n", sock)...), 0o644))
	if w.asUser != nil {
		uid, gid = int(w.asUser.Uid), int(w.asUser.Gid)
	}
	return w, sock, uid, gid
}

// admissionListener makes what mitrity-admission.socket makes: the
// directory (0711, root's) and a listening socket with mode, owned by uid.
func admissionListener(t testing.TB, sock string, mode os.FileMode, uid, gid int) *os.File {
	t.Helper()
	must(t, os.MkdirAll(filepath.Dir(sock), 0o711))
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	must(t, err)
	ln.SetUnlinkOnClose(false) // systemd's socket outlives the test's copy
	f, err := ln.File()
	must(t, err)
	ln.Close() // f holds the socket
	t.Cleanup(func() { f.Close() })
	must(t, os.Chmod(sock, mode))
	must(t, os.Chown(sock, uid, gid))
	return f
}

// hookAs runs the Claude Code hook against sock: as the gateway's user,
// or with the setpriv command line given (another user, a capability).
func hookAs(t testing.TB, w *world, sock string, setpriv []string, command string) result {
	t.Helper()
	if setpriv == nil && w.asUser != nil {
		// The per-user deployment: the user's own hooks.
		setpriv = []string{"setpriv", fmt.Sprintf("--reuid=%d", w.asUser.Uid), fmt.Sprintf("--regid=%d", w.asUser.Gid), "--clear-groups", "--"}
	}
	argv := append(append([]string{}, setpriv...), binPath(t, "mitrity-hook"), "claude")
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + w.dir, "MITRITY_ADMISSION_SOCKET=" + sock}
	return runAs(t, runSpec{dir: w.ws, env: env, stdin: claudePayload(w.ws, command)}, argv...)
}

// waitReady reads notify until READY=1 from pid, failing when the
// gateway exits first.
func waitReady(t testing.TB, n *notifySocket, g *activatedGateway) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		msg, pid, ok := n.next(t, 200*time.Millisecond)
		if !ok {
			if code := g.exitCode(0); code != -1 {
				t.Fatalf("the gateway exited %d before READY=1: %s", code, g.log)
			}
			continue
		}
		if pid != g.cmd.Process.Pid {
			t.Fatalf("a notification from pid %d, not the gateway's %d (NotifyAccess=main would drop it): %q", pid, g.cmd.Process.Pid, msg)
		}
		if strings.Contains("\n"+msg+"\n", "\nREADY=1\n") {
			return msg
		}
	}
	t.Fatalf("no READY=1 within 30s: %s", g.log)
	return ""
}

// TestSystemdReadiness: READY=1 arrives once the gateway serves (a hook
// call made the moment it arrives is judged), from the gateway's own pid;
// a config or policy that does not load sends none and exits non-zero.
func TestSystemdReadiness(t *testing.T) {
	forGatewayIdentities(t, func(t *testing.T, asUser bool) {
		w, sock, uid, gid := systemdWorld(t, asUser)
		n := newNotifySocket(t, w.dir, uid, gid)
		g := startActivated(t, w, n.path, nil, "serve", "--admission-only", "--config", w.cfg, "--admin-dir", w.admin)
		msg := waitReady(t, n, g)
		if !strings.Contains(msg, "STATUS=serving the admission socket") {
			t.Errorf("READY without the status line: %q", msg)
		}
		// Nothing may wait: the socket answers now.
		a := parseClaude(t, hookAs(t, w, sock, nil, "ls -la"))
		if a.HookSpecificOutput.PermissionDecision != "allow" {
			t.Fatalf("a hook call right after READY=1: %+v", a)
		}
		if _, _, ok := n.next(t, 300*time.Millisecond); ok {
			t.Errorf("a second notification: READY=1 is sent once")
		}

		for name, mutate := range map[string]func(){
			"bad config": func() {
				must(t, os.WriteFile(w.cfg, []byte("exec:\n  enabled: true\n  limts: {}\n"), 0o644))
			},
			"bad policy": func() {
				must(t, os.WriteFile(w.policy, []byte("profiles:\n  default:\n    rules:\n      - {name: x, when: 'nosuch(', action: deny}\n"), 0o644))
			},
		} {
			t.Run(name, func(t *testing.T) {
				g.stop(t)
				mutate()
				bad := startActivated(t, w, n.path, nil, "serve", "--admission-only", "--config", w.cfg, "--admin-dir", w.admin)
				code := bad.exitCode(30 * time.Second)
				if code <= 0 {
					t.Fatalf("want a non-zero exit, got %d: %s", code, bad.log)
				}
				if msg, _, ok := n.next(t, 100*time.Millisecond); ok {
					t.Fatalf("a gateway that did not start notified %q", msg)
				}
			})
		}
	})
}

// TestSystemdSocketActivation: the gateway serves the admission socket
// systemd passes (fd 3, LISTEN_FDNAMES=admission) instead of making one;
// every peer is still checked by uid, so a process of another user that
// gets past the file mode (CAP_DAC_OVERRIDE) is refused; the socket file
// outlives the gateway, and a restarted gateway serves it again; a passed
// socket with the wrong mode, owner or path refuses to start.
func TestSystemdSocketActivation(t *testing.T) {
	forGatewayIdentities(t, func(t *testing.T, asUser bool) {
		w, sock, uid, gid := systemdWorld(t, asUser)
		n := newNotifySocket(t, w.dir, uid, gid)
		ln := admissionListener(t, sock, 0o600, uid, gid)
		args := []string{"serve", "--admission-only", "--config", w.cfg, "--admin-dir", w.admin}

		for run := 1; run <= 2; run++ {
			g := startActivated(t, w, n.path, ln, args...)
			waitReady(t, n, g)
			before := len(w.events(t))
			a := parseClaude(t, hookAs(t, w, sock, nil, "cat ~/.ssh/id_ed25519"))
			if a.HookSpecificOutput.PermissionDecision != "deny" || !strings.Contains(a.HookSpecificOutput.PermissionDecisionReason, "keys stay on the host") {
				t.Fatalf("run %d: a hook call through the passed socket was not judged: %+v", run, a)
			}
			if evs := w.events(t); len(evs) != before+1 {
				t.Fatalf("run %d: want one audit event for the call, got %d", run, len(evs)-before)
			}

			// Another user, past the 0600 mode with CAP_DAC_OVERRIDE: the
			// peer check refuses it.
			tu, tg := ensureUser(t)
			other := fmt.Sprintf("--reuid=%d --regid=%d", tu, tg)
			if asUser {
				other = "--reuid=65534 --regid=65534"
			}
			r := hookAs(t, w, sock, append(append([]string{"setpriv"}, strings.Fields(other)...), "--clear-groups",
				"--inh-caps=+dac_override", "--ambient-caps=+dac_override", "--"), "ls")
			if r.code == 0 || !strings.Contains(r.stdout+r.stderr, "serves other users") {
				t.Fatalf("run %d: a peer of another uid was not refused: exit %d\n%s\n%s", run, r.code, r.stdout, r.stderr)
			}

			g.stop(t)
			if g.exitCode(0) != 0 {
				t.Fatalf("run %d: exit %v: %s", run, g.err, g.log)
			}
			if fi, err := os.Lstat(sock); err != nil || fi.Mode()&os.ModeSocket == 0 {
				t.Fatalf("run %d: the gateway removed the socket systemd owns: %v", run, err)
			}
		}

		// A socket unit that does not match the config is refused.
		for _, c := range []struct {
			name     string
			path     string
			mode     os.FileMode
			uid, gid int
			want     string
		}{
			{"mode 0666", sock + ".b", 0o666, uid, gid, "set SocketMode=0600"},
			{"another owner", sock + ".c", 0o600, 65534, 65534, "set SocketUser="},
			{"another path", filepath.Join(w.dir, "run", "other.sock"), 0o600, uid, gid, "ListenStream= and admission.socket the same"},
		} {
			t.Run(c.name, func(t *testing.T) {
				bad := admissionListener(t, c.path, c.mode, c.uid, c.gid)
				cfgArgs := args
				if c.path != filepath.Join(w.dir, "run", "other.sock") {
					// The config names this path: only the mode or owner differ.
					cfg := filepath.Join(w.dir, "cfg-"+filepath.Ext(c.path)[1:]+".yaml")
					body, err := os.ReadFile(w.cfg)
					must(t, err)
					must(t, os.WriteFile(cfg, bytes.Replace(body, []byte("socket: "+sock+"\n"), []byte("socket: "+c.path+"\n"), 1), 0o644))
					if asUser {
						must(t, os.Chown(cfg, uid, gid))
					}
					cfgArgs = []string{"serve", "--admission-only", "--config", cfg, "--admin-dir", w.admin}
				}
				g := startActivated(t, w, n.path, bad, cfgArgs...)
				if code := g.exitCode(30 * time.Second); code <= 0 {
					t.Fatalf("want a refusal to start, got exit %d: %s", code, g.log)
				}
				if !strings.Contains(g.log.String(), c.want) {
					t.Fatalf("the refusal does not say %q: %s", c.want, g.log)
				}
				if msg, _, ok := n.next(t, 100*time.Millisecond); ok {
					t.Fatalf("a gateway that refused to start notified %q", msg)
				}
			})
		}
	})
}

// systemUnits are the system units the gateway package ships, by their
// place in a root tree; userUnit is its user unit.
var (
	systemUnits = map[string]string{
		"packaging/systemd/mitrity-gateway.service":  "lib/systemd/system/mitrity-gateway.service",
		"packaging/systemd/mitrity-admission.socket": "lib/systemd/system/mitrity-admission.socket",
	}
	userUnit = "packaging/systemd/user/mitrity-gateway.service"
)

// verifyRoot is a root tree for systemd-analyze verify --root: the gateway
// and the system units where the package installs them, /bin/kill
// (ExecReload), and this host's targets, which the units order against.
// edit may change a unit's text first.
func verifyRoot(t *testing.T, edit func(unit, body string) string) string {
	t.Helper()
	root, dir := repoRoot(t), t.TempDir()
	for _, d := range []string{"usr/bin", "bin", "lib/systemd/system"} {
		must(t, os.MkdirAll(filepath.Join(dir, d), 0o755))
	}
	installBinary(t, binPath(t, "mitrity-gateway"), filepath.Join(dir, "usr/bin/mitrity-gateway"))
	installBinary(t, "/bin/kill", filepath.Join(dir, "bin/kill"))
	targets, err := filepath.Glob("/lib/systemd/system/*.target")
	must(t, err)
	for _, tg := range targets {
		if out, err := exec.Command("cp", "-P", tg, filepath.Join(dir, "lib/systemd/system")).CombinedOutput(); err != nil {
			t.Fatalf("cp %s: %v %s", tg, err, out)
		}
	}
	for src, dst := range systemUnits {
		body, err := os.ReadFile(filepath.Join(root, src))
		must(t, err)
		must(t, os.WriteFile(filepath.Join(dir, dst), []byte(edit(src, string(body))), 0o644))
	}
	return dir
}

// systemdAnalyze runs systemd-analyze verify on the system units of a
// root tree. Without systemd as PID 1 it still loads each unit as the
// manager would: every directive and its value, the dependencies, the
// socket's service, that the programs of ExecStart= and ExecReload= exist;
// it starts nothing. --man=no: the man pages are checked in the package,
// not on this host.
func systemdAnalyze(t *testing.T, dir string, units ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("systemd-analyze", append([]string{"verify", "--man=no", "--generators=no", "--root=" + dir}, units...)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin:/usr/sbin:/sbin", "SYSTEMD_LOG_TARGET=console"}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// systemdAnalyzeUser verifies the user unit. A user manager cannot take
// --root, so the unit is verified from a copy whose programs point at
// the binaries under test (/usr/bin/mitrity-gateway is not installed
// here); every other line is the shipped unit's.
func systemdAnalyzeUser(t *testing.T, edit func(string) string) (string, error) {
	t.Helper()
	body, err := os.ReadFile(filepath.Join(repoRoot(t), userUnit))
	must(t, err)
	dir := t.TempDir()
	unit := filepath.Join(dir, "mitrity-gateway.service")
	text := strings.ReplaceAll(edit(string(body)), "/usr/bin/mitrity-gateway", binPath(t, "mitrity-gateway"))
	must(t, os.WriteFile(unit, []byte(text), 0o644))
	rt := filepath.Join(dir, "rt") // the user manager wants a runtime directory
	must(t, os.Mkdir(rt, 0o700))
	cmd := exec.Command("systemd-analyze", "--user", "verify", "--man=no", "--generators=no", unit)
	// Logged to the console, not a journal: the test reads what it says.
	cmd.Env = []string{"PATH=/usr/bin:/bin:/usr/sbin:/sbin", "XDG_RUNTIME_DIR=" + rt, "HOME=" + t.TempDir(), "SYSTEMD_LOG_TARGET=console"}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestSystemdUnitsVerify: systemd-analyze verify passes every unit, and
// fails a unit broken on purpose (so a pass means something); the socket
// unit agrees with the gateway's defaults.
func TestSystemdUnitsVerify(t *testing.T) {
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		if os.Getenv("GOVERN_REQUIRE_SANDBOX") == "1" {
			t.Fatal("systemd-analyze is required (apt-get install systemd)")
		}
		t.Skip("systemd-analyze not installed")
	}
	t.Parallel()
	keep := func(_, body string) string { return body }
	dir := verifyRoot(t, keep)
	if out, err := systemdAnalyze(t, dir, "mitrity-gateway.service", "mitrity-admission.socket"); err != nil || out != "" {
		t.Errorf("system units: %v\n%s", err, out)
	}
	if out, err := systemdAnalyzeUser(t, func(b string) string { return b }); err != nil || out != "" {
		t.Errorf("user unit: %v\n%s", err, out)
	}
	// A unit verify warns about is a failure here: output means a problem.
	if out, _ := systemdAnalyzeUser(t, func(b string) string { return strings.Replace(b, "\nDelegate=yes", "\nDelegat=yes", 1) }); !strings.Contains(out, "Unknown key 'Delegat'") {
		t.Errorf("user unit: verify did not catch an unknown key: %q", out)
	}

	for _, c := range []struct{ name, unit, from, to, want string }{
		{"unknown directive", "packaging/systemd/mitrity-gateway.service", "Delegate=yes", "Delegat=yes", "Unknown key 'Delegat'"},
		{"missing program", "packaging/systemd/mitrity-gateway.service", "ExecStart=/usr/bin/mitrity-gateway", "ExecStart=/usr/bin/mitrity-gatewa", "is not executable"},
		{"bad socket mode", "packaging/systemd/mitrity-admission.socket", "SocketMode=0600", "SocketMode=0x600", "Failed to parse mode"},
	} {
		broken := verifyRoot(t, func(unit, body string) string {
			if unit != c.unit {
				return body
			}
			if !strings.Contains(body, "\n"+c.from) {
				t.Fatalf("%s has no line %q", unit, c.from)
			}
			return strings.Replace(body, "\n"+c.from, "\n"+c.to, 1)
		})
		out, err := systemdAnalyze(t, broken, "mitrity-gateway.service", "mitrity-admission.socket")
		if err == nil && out == "" || !strings.Contains(out, c.want) {
			t.Errorf("%s: verify did not catch it (%v): %s", c.name, err, out)
		}
	}

	// The socket unit and the gateway agree: root's admission socket,
	// the descriptor name the gateway takes, mode 0600.
	sock := unitKeys(t, filepath.Join(repoRoot(t), "packaging/systemd/mitrity-admission.socket"))
	for k, want := range map[string]string{"ListenStream": "/run/mitrity/admission.sock", "FileDescriptorName": "admission",
		"SocketMode": "0600", "SocketUser": "root", "Service": "mitrity-gateway.service"} {
		if sock[k] != want {
			t.Errorf("mitrity-admission.socket: %s=%q, want %q", k, sock[k], want)
		}
	}
	svc := unitKeys(t, filepath.Join(repoRoot(t), "packaging/systemd/mitrity-gateway.service"))
	for k, want := range map[string]string{"Type": "notify", "Delegate": "yes", "KillMode": "mixed",
		"RuntimeDirectory": "mitrity", "StateDirectory": "mitrity", "ExecReload": "/bin/kill -HUP $MAINPID"} {
		if svc[k] != want {
			t.Errorf("mitrity-gateway.service: %s=%q, want %q", k, svc[k], want)
		}
	}
}

// unitKeys reads a unit's last value of each key (comments skipped).
func unitKeys(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	must(t, err)
	defer f.Close()
	keys := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "[") {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			keys[k] = v
		}
	}
	must(t, sc.Err())
	return keys
}

// hardening are the service's sandboxing directives, each as this host
// can reproduce it without systemd (the same kernel mechanism systemd
// uses): a shell prefix run as root in a new mount namespace before the
// gateway. A directive here that the unit does not set, or the reverse,
// fails the test, so the list and the unit stay one.
var hardening = []struct {
	directive string // as written in the unit
	setup     string // sh run in the private mount namespace, then exec
	wrap      []string
}{
	{directive: "NoNewPrivileges=yes", wrap: []string{"setpriv", "--no-new-privs", "--"}},
	{directive: "ProtectSystem=full", setup: `for d in /usr /boot /efi /etc; do [ -d $d ] || continue; mount --bind $d $d && mount -o remount,bind,ro $d; done`},
	// systemd makes a private /tmp and /var/tmp; the test's own files
	// (config, workspace) live under /tmp, so they are bound back in.
	{directive: "PrivateTmp=yes", setup: `mkdir -p /run/mitrity-e2e-hold && mount -t tmpfs -o size=1m tmpfs /run/mitrity-e2e-hold && mkdir /run/mitrity-e2e-hold/w && mount --bind "$MITRITY_E2E_WORLD" /run/mitrity-e2e-hold/w && mount -t tmpfs tmpfs /tmp && mount -t tmpfs tmpfs /var/tmp && mkdir -p "$MITRITY_E2E_WORLD" && mount --bind /run/mitrity-e2e-hold/w "$MITRITY_E2E_WORLD"`},
	{directive: "ProtectKernelModules=yes", setup: `for d in /usr/lib/modules /lib/modules; do [ -d $d ] && mount -t tmpfs -o ro,mode=000 tmpfs $d; done`,
		wrap: []string{"setpriv", "--bounding-set", "-sys_module", "--"}},
}

// TestSystemdHardeningKeepsBubblewrap: under each sandboxing directive
// the service sets (reproduced by the kernel mechanism systemd uses), and
// under all of them at once, a root gateway with run_as still runs a
// command in bubblewrap at full strength. A directive left out of the
// unit because it breaks the sandbox (docs/install.md) is shown to break
// it here too, so the harness can tell.
func TestSystemdHardeningKeepsBubblewrap(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the host service runs as root")
	}
	t.Parallel()
	w := newWorldBackend(t, false, e2ePolicy, "bubblewrap")
	// e2ePolicy lets a profile run without a sandbox: require it here.
	must(t, os.WriteFile(w.policy, []byte(strings.Replace(e2ePolicy, "sandbox_required: false", "sandbox_required: true", 1)), 0o644))

	unit, err := os.ReadFile(filepath.Join(repoRoot(t), "packaging/systemd/mitrity-gateway.service"))
	must(t, err)
	svc := string(unit)
	set := map[string]bool{}
	for _, line := range strings.Split(svc, "\n") {
		for _, h := range hardening {
			if strings.TrimSpace(line) == h.directive {
				set[h.directive] = true
			}
		}
	}
	for _, h := range hardening {
		if !set[h.directive] {
			t.Errorf("the test reproduces %s but the unit does not set it", h.directive)
		}
	}
	for _, d := range []string{"ProtectHome", "ProtectKernelTunables", "ProtectControlGroups", "RestrictNamespaces", "PrivateUsers",
		"SystemCallFilter", "MemoryDenyWriteExecute", "CapabilityBoundingSet", "PrivateDevices", "ProtectProc", "RestrictAddressFamilies"} {
		if strings.Contains(svc, "\n"+d+"=") {
			t.Errorf("the unit sets %s, which this test does not reproduce with bubblewrap", d)
		}
	}

	run := func(t *testing.T, setup string, wrap []string) (map[string]any, string) {
		t.Helper()
		script := "set -e; " + setup + "\nexec \"$@\""
		argv := append([]string{"--mount", "--propagation", "private", "--", "/bin/sh", "-c", script, "sh"}, wrap...)
		argv = append(argv, w.bin, "--log-level", "error", "exec", "--json", "--config", w.cfg, "--admin-dir", w.admin, "--", "id -un; echo in-sandbox")
		cmd := exec.Command("unshare", argv...)
		cmd.Dir = w.ws
		cmd.Env = []string{"PATH=/usr/bin:/bin:/usr/sbin:/sbin", "HOME=" + w.dir, "MITRITY_E2E_WORLD=" + w.dir}
		out, err := cmd.Output()
		var stderr string
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			stderr = string(ee.Stderr)
		}
		var res struct {
			StructuredContent map[string]any
		}
		if json.Unmarshal(out, &res) != nil {
			return nil, fmt.Sprintf("%v: %s%s", err, out, stderr)
		}
		return res.StructuredContent, stderr
	}
	ok := func(t *testing.T, sc map[string]any, why string) {
		t.Helper()
		if sc == nil || sc["sandbox_mode"] != "bubblewrap" || strings.TrimSpace(fmt.Sprint(sc["stdout"])) != testUser+"\nin-sandbox" || sc["exit_code"] != float64(0) {
			t.Fatalf("not a full-strength run as %s: %v %s", testUser, sc, why)
		}
	}
	var all []string
	var allWrap []string
	for _, h := range hardening {
		t.Run(h.directive, func(t *testing.T) {
			sc, why := run(t, h.setup, h.wrap)
			ok(t, sc, why)
		})
		if h.setup != "" {
			all = append(all, h.setup)
		}
		allWrap = append(allWrap, h.wrap...)
	}
	t.Run("all at once", func(t *testing.T) {
		// setpriv's "--" ends each wrapper's options: chain them whole.
		sc, why := run(t, strings.Join(all, "\n"), allWrap)
		ok(t, sc, why)
	})
	t.Run("an empty CapabilityBoundingSet breaks it", func(t *testing.T) {
		// Left out of the unit: a root gateway with no capabilities
		// cannot become run_as. The harness must see that.
		sc, why := run(t, "", []string{"setpriv", "--bounding-set", "-all", "--"})
		if sc != nil && sc["sandbox_mode"] == "bubblewrap" && sc["exit_code"] == float64(0) {
			t.Fatalf("ran at full strength with no capabilities: the harness cannot tell a broken sandbox: %v %s", sc, why)
		}
	})
}
