package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestGatewayDirsUnreachable: the gateway's own directories are masked in
// every run whatever they resolve to, and its sockets refuse a peer inside
// a sandbox even when one reaches them. The setting of the finding: TMPDIR
// under the home and no XDG_RUNTIME_DIR (su, cron, shared hosts), so the
// runtime directory holding the admin socket of a held call sits where the
// sandbox sees the host. A second run lists that directory (masked: empty)
// and, with the seccomp stage off (so that it can make a Unix socket at
// all), connects to a hard link of the admin socket in its workspace and
// approves the held call: refused, and the call is still held afterwards.
func TestGatewayDirsUnreachable(t *testing.T) { forGatewayIdentities(t, testGatewayDirs) }

func testGatewayDirs(t *testing.T, asUser bool) {
	policy := `default_agent:
  profile: dev
profiles:
  dev:
    sandbox_required: true
    exec_timeout_seconds: 30
    rules:
      - name: hold-deploys
        when: 'commands.exists(c, c.name == "deploy-now")'
        action: hold
        message: a person approves deploys
    hold:
      timeout_seconds: 60
`
	w := newWorldBackend(t, asUser, policy, "auto")
	uid, gid := ensureUser(t)
	// TMPDIR in the test user's home: visible inside the sandbox.
	tmp, err := os.MkdirTemp("/home/"+testUser, "mitrity-e2e-tmp-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(tmp) })
	gwUID := 0
	if asUser {
		gwUID = int(uid)
		must(t, os.Chown(tmp, int(uid), int(gid)))
	}
	runtimeDir := "/run/mitrity"
	if asUser {
		runtimeDir = filepath.Join(tmp, fmt.Sprintf("mitrity-%d", gwUID))
	}
	// A second config, the same but for the seccomp stage: only that run
	// can make a Unix socket to try the socket's own check.
	noSeccomp := filepath.Join(w.dir, "noseccomp.yaml")
	cfg := strings.Replace(readFile(t, w.cfg), "    backend: auto\n", "    backend: auto\n    seccomp: off\n", 1)
	must(t, os.WriteFile(noSeccomp, []byte(cfg), 0o644))
	if asUser {
		must(t, os.Chown(noSeccomp, int(uid), int(gid)))
	}
	gw := func(ctx context.Context, cfg string, args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, w.bin, append([]string{"--log-level", "error", "exec", "--config", cfg}, args...)...)
		cmd.Dir = w.ws
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + w.dir, "TMPDIR=" + tmp}
		if w.asUser != nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: w.asUser}
		}
		return cmd
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	held := gw(ctx, w.cfg, "--", "deploy-now")
	var heldOut bytes.Buffer
	held.Stdout, held.Stderr = &heldOut, &heldOut
	must(t, held.Start())
	t.Cleanup(func() { held.Process.Kill(); held.Wait() })
	sock := filepath.Join(runtimeDir, "admin", "exec-"+strconv.Itoa(held.Process.Pid)+".sock")
	list := func() string {
		c := exec.CommandContext(ctx, w.bin, "approvals", "list", "--admin-dir", filepath.Dir(sock))
		c.Env = []string{"PATH=/usr/bin:/bin", "TMPDIR=" + tmp}
		if w.asUser != nil {
			c.SysProcAttr = &syscall.SysProcAttr{Credential: w.asUser}
		}
		out, _ := c.CombinedOutput()
		return string(out)
	}
	var id string
	for deadline := time.Now().Add(20 * time.Second); id == "" && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if lines := strings.Split(strings.TrimSpace(list()), "\n"); len(lines) >= 2 {
			id = strings.Fields(lines[1])[0]
		}
	}
	if id == "" {
		t.Fatalf("the call was never held (%s): %s", sock, heldOut.String())
	}
	// Whatever reaches the socket: a hard link in the workspace.
	// and one whose mode someone widened, so that only the peer check
	// stands in the way.
	link := filepath.Join(w.ws, "admin.sock")
	must(t, os.Link(sock, link))
	must(t, os.Chmod(link, 0o666))

	approve := fmt.Sprintf(`perl -MSocket -e 'socket(my $s, AF_UNIX, SOCK_STREAM, 0) or die "socket: $!\n"; connect($s, pack_sockaddr_un($ARGV[0])) or die "connect: $!\n";
syswrite($s, "POST /v1/holds/$ARGV[1]/approve HTTP/1.0\r\nHost: admin\r\nContent-Length: 0\r\n\r\n"); local $/; print "ANSWER: ", <$s>;' %q %q 2>&1`, link, id)
	script := fmt.Sprintf("ls -A %q %q 2>&1 | sed 's/^/LS: /'\n%s", runtimeDir, filepath.Join(runtimeDir, "admin"), approve)
	var out bytes.Buffer
	b := gw(ctx, noSeccomp, "--", script)
	b.Stdout, b.Stderr = &out, &out
	_ = b.Run()
	if strings.Contains(out.String(), "exec-") || strings.Contains(out.String(), "probe") {
		t.Errorf("the gateway's runtime directory is visible in the sandbox:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "ANSWER: HTTP/1.0 403") {
		t.Errorf("the admin socket answered a sandboxed peer:\n%s", out.String())
	}
	if l := list(); !strings.Contains(l, id) {
		t.Errorf("the held call %s was answered from inside a sandbox:\n%s\n%s", id, l, out.String())
	}
	// The control: the same request from the host is served.
	ctl := exec.CommandContext(ctx, "perl", "-MSocket", "-e", `socket(my $s, AF_UNIX, SOCK_STREAM, 0) or die; connect($s, pack_sockaddr_un($ARGV[0])) or die "connect: $!"; syswrite($s, "GET /v1/holds HTTP/1.0\r\nHost: admin\r\n\r\n"); local $/; print <$s>;`, link)
	if w.asUser != nil {
		ctl.SysProcAttr = &syscall.SysProcAttr{Credential: w.asUser}
	}
	if o, err := ctl.CombinedOutput(); err != nil || !strings.Contains(string(o), "200 OK") || !strings.Contains(string(o), id) {
		t.Errorf("control: the host's request through the same link was not served: %v\n%s", err, o)
	}
}
