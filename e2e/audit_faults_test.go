package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tests of this file fault the audit trail from outside, as a full
// disk, an operator's chattr, logrotate, an rm and a SIGKILL do, and check
// the promise of docs/audit.md: a call whose decision cannot be recorded
// does not run (audit_unavailable; a marker the command would write stays
// absent), the decision is on disk before the command starts, and every
// event id an agent is given is in the file (`audit show` finds it).

// auditOnTmpfs puts w's audit directory on a tmpfs of size bytes that w's
// gateway user owns, and returns a function that fills it to the last
// byte and one that frees it again.
func auditOnTmpfs(t *testing.T, w *world, size int) (fill, free func()) {
	t.Helper()
	dir := filepath.Dir(w.audit)
	must(t, os.MkdirAll(dir, 0o700))
	opts := fmt.Sprintf("size=%d,mode=0700", size)
	if w.asUser != nil {
		opts += fmt.Sprintf(",uid=%d,gid=%d", w.asUser.Uid, w.asUser.Gid)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", opts, "mitrity-e2e-audit", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	filler := filepath.Join(dir, "filler")
	fill = func() {
		exhaust := func(path string, chunks ...int) {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
			must(t, err)
			defer f.Close()
			for _, chunk := range chunks {
				b := make([]byte, chunk)
				for i := range b {
					b[i] = '\n'
				}
				for {
					if _, err := f.Write(b); err != nil {
						if !errors.Is(err, syscall.ENOSPC) {
							t.Fatal(err)
						}
						break
					}
				}
			}
		}
		exhaust(filler, 64<<10, 4<<10, 1)
		// The audit file's last page has room of its own: blank lines
		// (which readers skip) take it.
		exhaust(w.audit, 1)
	}
	free = func() { must(t, os.Remove(filler)) }
	return fill, free
}

// auditShow runs `audit show id` and fails the test when the event is not
// in the file.
func (w *world) auditShow(t *testing.T, id string) string {
	t.Helper()
	if id == "" {
		t.Fatal("no event id")
	}
	r := w.gw(t, context.Background(), "", "audit", "show", "--config", w.cfg, id)
	if r.code != 0 || !strings.Contains(r.stdout, id) {
		t.Fatalf("audit show %s: %+v", id, r)
	}
	return r.stdout
}

// lastEventID is the id of the last event in w's audit file (the exec
// subcommand prints no id at --log-level error).
func lastEventID(t *testing.T, w *world) string {
	t.Helper()
	evs := w.events(t)
	if len(evs) == 0 {
		t.Fatal("no events")
	}
	id, _ := evs[len(evs)-1]["id"].(string)
	return id
}

// TestNoAuditNoRun: with the audit log's filesystem full, a call through
// `exec` and through `serve --http` is refused audit_unavailable and its
// command never runs, and the file is left as it was; once there is room
// the next call runs and its event id is in the file. With the file
// immutable (chattr +i), a gateway that must open it (`exec`, a new
// `serve`) refuses to run anything; one that holds it open still records
// every call (the kernel checks immutability at open), so it keeps
// running them.
func TestNoAuditNoRun(t *testing.T) {
	forGatewayIdentities(t, func(t *testing.T, asUser bool) {
		t.Run("full filesystem", func(t *testing.T) {
			w := newWorld(t, asUser, e2ePolicy)
			fill, free := auditOnTmpfs(t, w, 1<<20)
			if r := w.exec(t, "--", "true"); r.code != 0 {
				t.Fatalf("before the fault: %+v", r)
			}
			g := startHTTPGW(t, w, gwOptions{})
			cs := g.client(t)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			fill()
			before, err := os.ReadFile(w.audit)
			must(t, err)

			marker := filepath.Join(w.ws, "ran-exec")
			r := w.exec(t, "--", "touch "+marker)
			if r.code != 126 || !strings.Contains(r.stderr+r.stdout, "audit_unavailable") {
				t.Errorf("exec with the audit log's filesystem full: %+v", r)
			}
			mcpMarker := filepath.Join(w.ws, "ran-mcp")
			res, err := callShell(t, ctx, cs, map[string]any{"command": "touch " + mcpMarker})
			must(t, err)
			if !res.isError || res.structured["reason"] != "audit_unavailable" || res.structured["event_id"] != nil && res.structured["event_id"] != "" {
				t.Errorf("MCP call with the audit log's filesystem full: %+v", res)
			}
			if !strings.Contains(res.text, "nothing ran") || strings.Contains(res.text, w.audit) || strings.Contains(res.text, filepath.Dir(w.audit)) {
				t.Errorf("the refusal says nothing ran, and not where the audit log is: %s", res.text)
			}
			time.Sleep(300 * time.Millisecond)
			for _, m := range []string{marker, mcpMarker} {
				if _, err := os.Stat(m); err == nil {
					t.Errorf("%s: the command ran although its decision could not be recorded", m)
				}
			}
			if n := g.metric(t, "mitrity_audit_write_errors_total"); n < 1 {
				t.Errorf("mitrity_audit_write_errors_total = %v after a refused call", n)
			}
			// Nothing of the refused calls is in the file, not even the
			// part of a line the full disk took.
			if after, err := os.ReadFile(w.audit); err != nil || string(after) != string(before) {
				t.Errorf("the refused calls changed the audit file (%v): %q", err, after[min(len(before), len(after)):])
			}

			free()
			res, err = callShell(t, ctx, cs, map[string]any{"command": "touch " + mcpMarker + "; echo ok"})
			must(t, err)
			id, _ := res.structured["event_id"].(string)
			if res.isError || !strings.Contains(res.text, "ok") {
				t.Fatalf("after the fault: %+v", res)
			}
			if card := w.auditShow(t, id); !strings.Contains(card, "completed") {
				t.Errorf("audit show %s: %s", id, card)
			}
			if r := w.exec(t, "--", "touch "+marker); r.code != 0 {
				t.Errorf("exec after the fault: %+v", r)
			}
			w.auditShow(t, lastEventID(t, w))
			// Every call the file holds was decided before it ran.
			w.calls(t)
		})
		t.Run("immutable file", func(t *testing.T) {
			w := newWorld(t, asUser, e2ePolicy)
			if r := w.exec(t, "--", "true"); r.code != 0 {
				t.Fatalf("before the fault: %+v", r)
			}
			g := startHTTPGW(t, w, gwOptions{})
			cs := g.client(t)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if out, err := exec.Command("chattr", "+i", w.audit).CombinedOutput(); err != nil {
				t.Fatalf("chattr +i: %v\n%s", err, out)
			}
			t.Cleanup(func() { exec.Command("chattr", "-i", w.audit).Run() })
			marker := filepath.Join(w.ws, "ran-exec")
			if r := w.exec(t, "--", "touch "+marker); r.code != 126 || !strings.Contains(r.stderr, "audit log") {
				t.Errorf("exec with the audit log immutable: %+v", r)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Error("exec ran a command it could not audit")
			}
			sctx, scancel := context.WithTimeout(ctx, 20*time.Second)
			defer scancel()
			if r := w.gw(t, sctx, "", "--log-level", "error", "serve", "--stdio", "--config", w.cfg, "--admin-dir", w.admin+"2"); r.code == 0 || !strings.Contains(r.stderr, "audit log") {
				t.Errorf("serve with the audit log immutable: %+v", r)
			}
			// A gateway that holds the file open: whether the kernel lets
			// a descriptor opened before chattr append (tmpfs does, ext4
			// does not), a call runs only if it is recorded.
			heldMarker := filepath.Join(w.ws, "ran-held")
			res, err := callShell(t, ctx, cs, map[string]any{"command": "touch " + heldMarker + "; echo held"})
			must(t, err)
			id, _ := res.structured["event_id"].(string)
			_, statErr := os.Stat(heldMarker)
			switch {
			case res.isError && res.structured["reason"] == "audit_unavailable":
				if statErr == nil {
					t.Error("refused audit_unavailable, yet the command ran")
				}
				if n := g.metric(t, "mitrity_audit_write_errors_total"); n < 1 {
					t.Errorf("audit write errors = %v", n)
				}
				must(t, exec.Command("chattr", "-i", w.audit).Run())
				res, err = callShell(t, ctx, cs, map[string]any{"command": "echo again"})
				must(t, err)
				if id, _ = res.structured["event_id"].(string); res.isError {
					t.Fatalf("after chattr -i: %+v", res)
				}
			case !res.isError && strings.Contains(res.text, "held"):
				if statErr != nil {
					t.Error("the call succeeded, yet its command did not run")
				}
			default:
				t.Fatalf("the serving gateway: %+v", res)
			}
			w.auditShow(t, id)
		})
	})
}

// TestHookNoAuditNoRun: a framework's shell call whose decision cannot be
// recorded is denied at admission, whether the framework would run it or
// the governed shell would (no ticket is issued).
func TestHookNoAuditNoRun(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the hook world runs a root gateway with run_as")
	}
	t.Parallel()
	hw := newHookWorld(t, 300)
	// One allowed call creates the file.
	a := parseClaude(t, hw.runHook(t, nil, nil, claudePayload(hw.ws, "true"), "claude"))
	if a.HookSpecificOutput.PermissionDecision != "allow" {
		t.Fatalf("before the fault: %+v", a)
	}
	if out, err := exec.Command("chattr", "+i", hw.audit).CombinedOutput(); err != nil {
		t.Fatalf("chattr +i: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("chattr", "-i", hw.audit).Run() })
	for _, agent := range []string{"", "routed-claude"} {
		var env []string
		if agent != "" {
			env = []string{"MITRITY_AGENT=" + agent}
		}
		a := parseClaude(t, hw.runHook(t, nil, env, claudePayload(hw.ws, "echo hi"), "claude"))
		h := a.HookSpecificOutput
		if h.PermissionDecision != "deny" || !strings.Contains(h.PermissionDecisionReason, "audit_unavailable") && !strings.Contains(h.PermissionDecisionReason, "audit log") || h.UpdatedInput != nil {
			t.Errorf("agent %q with the audit log immutable: %+v", agent, h)
		}
		if strings.Contains(h.PermissionDecisionReason, hw.audit) {
			t.Errorf("the reason shows the audit log's path: %s", h.PermissionDecisionReason)
		}
	}
	must(t, exec.Command("chattr", "-i", hw.audit).Run())
	relay := hw.admitRouted(t, "routed-claude", "echo back")
	if r := hw.relay(t, []string{"MITRITY_AGENT=routed-claude"}, relay); r.code != 0 || r.stdout != "back\n" {
		t.Fatalf("after the fault: %+v", r)
	}
}

// TestAuditFileFollowed: the audit file deleted while serving, renamed by
// logrotate with the shipped configuration (SIGHUP in postrotate), and
// renamed with no signal at all: every later event is in the file at
// audit.path, none is lost, the reopens are counted by cause, and every
// event id the agent was given is found by `audit show` in the file it is
// in.
func TestAuditFileFollowed(t *testing.T) {
	forGatewayIdentities(t, func(t *testing.T, asUser bool) {
		w := newWorld(t, asUser, e2ePolicy)
		g := startHTTPGW(t, w, gwOptions{})
		cs := g.client(t)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var ids []string
		call := func(cmd string) {
			t.Helper()
			res, err := callShell(t, ctx, cs, map[string]any{"command": cmd})
			must(t, err)
			id, _ := res.structured["event_id"].(string)
			if res.isError || id == "" {
				t.Fatalf("%s: %+v", cmd, res)
			}
			ids = append(ids, id)
		}
		call("echo one")
		call("echo two")

		// Deleted.
		must(t, os.Remove(w.audit))
		call("echo three")
		if n := g.metric(t, "mitrity_audit_reopens_total", `cause="missing"`); n != 1 {
			t.Errorf("reopens (missing) = %v, want 1", n)
		}
		if evs := w.calls(t); len(evs) != 1 || field(evs[0], "id") != ids[2] {
			t.Fatalf("after the delete the file holds the next call only: %v", evs)
		}
		if fi, err := os.Stat(w.audit); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("the new file: %v %v", fi, err)
		}

		// logrotate with the shipped configuration.
		conf, err := os.ReadFile(filepath.Join(workspaceRootT(t), "packaging", "logrotate", "mitrity-gateway"))
		must(t, err)
		c := strings.Replace(string(conf), "/var/lib/mitrity/audit.jsonl", w.audit, 1)
		c = strings.Replace(c, "systemctl kill --signal=HUP --kill-whom=main mitrity-gateway.service", fmt.Sprintf("kill -HUP %d", g.pid), 1)
		if c == string(conf) || !strings.Contains(c, "kill -HUP") {
			t.Fatal("the shipped logrotate configuration changed shape; update this test")
		}
		confPath := filepath.Join(w.dir, "logrotate.conf")
		must(t, os.WriteFile(confPath, []byte(c), 0o644))
		out, err := exec.Command("logrotate", "-f", "-s", filepath.Join(w.dir, "logrotate.state"), confPath).CombinedOutput()
		if err != nil {
			t.Fatalf("logrotate: %v\n%s", err, out)
		}
		// SIGHUP makes the new file at once, before any event.
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat(w.audit); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("no new audit file after logrotate's SIGHUP")
			}
		}
		// (The counter follows the open.)
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			n := g.metric(t, "mitrity_audit_reopens_total", `cause="requested"`)
			if n == 1 {
				break
			}
			if n > 1 || time.Now().After(deadline) {
				t.Fatalf("reopens (requested) = %v, want 1", n)
			}
		}
		call("echo four")
		rotated := w.audit + ".1"
		if b, err := os.ReadFile(rotated); err != nil || !strings.Contains(string(b), ids[2]) || strings.Contains(string(b), ids[3]) {
			t.Errorf("the rotated file holds the events before the rotation only: %v", err)
		}

		// Renamed with no signal: the next event starts the new file.
		must(t, os.Rename(w.audit, w.audit+".moved"))
		call("echo five")
		if n := g.metric(t, "mitrity_audit_reopens_total", `cause="missing"`); n != 2 {
			t.Errorf("reopens (missing) = %v, want 2", n)
		}
		for i, id := range ids[3:] {
			if i == 0 {
				if b, _ := os.ReadFile(w.audit + ".moved"); !strings.Contains(string(b), id) {
					t.Errorf("event %s is not in the file it was written to", id)
				}
				continue
			}
			w.auditShow(t, id)
		}
		if evs := w.calls(t); len(evs) != 1 || field(evs[0], "id") != ids[4] {
			t.Errorf("the file at audit.path: %v", evs)
		}
		if n := g.metric(t, "mitrity_audit_write_errors_total"); n != 0 {
			t.Errorf("audit write errors: %v", n)
		}
	})
}

// TestSIGKILLMidRunLeavesDecisions: a gateway killed with SIGKILL while
// its calls run leaves each call's decision on disk (written before the
// command started), no completion, no torn line, and no process behind;
// `audit list` shows each call.
func TestSIGKILLMidRunLeavesDecisions(t *testing.T) {
	forGatewayIdentities(t, func(t *testing.T, asUser bool) {
		w := newWorldBackend(t, asUser, e2ePolicy, "bubblewrap")
		g := startHTTPGW(t, w, gwOptions{})
		const n = 4
		// A sleep no other test runs, one per identity.
		tag := "sleep 41.25"
		if asUser {
			tag = "sleep 41.5"
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		for i := range n {
			cs := g.client(t)
			go cs.CallTool(ctx, &mcp.CallToolParams{Name: "shell__execute", Arguments: map[string]any{"command": fmt.Sprintf("%s; touch %s/ran-%d", tag, w.ws, i)}})
		}
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if len(w.events(t)) == n && len(procsWith(tag)) >= n {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d events, %d sleeps", len(w.events(t)), len(procsWith(tag)))
			}
		}
		must(t, g.cmd.Process.Signal(syscall.SIGKILL))
		<-g.exited
		evs := w.events(t)
		if len(evs) != n {
			t.Fatalf("%d events for %d calls killed mid-run", len(evs), n)
		}
		for _, ev := range evs {
			if ev["type"] != "dev.mitrity.decision" || field(ev, "data", "decision", "outcome") != "allow" || field(ev, "data", "execution") != nil {
				t.Errorf("a call killed mid-run left %v", ev)
			}
		}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			left := procsWith(tag)
			if len(left) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("processes outlived the gateway: %v", left)
			}
		}
		if ents, _ := filepath.Glob(filepath.Join(w.ws, "ran-*")); len(ents) > 0 {
			t.Errorf("commands finished after their gateway died: %v", ents)
		}
		r := w.gw(t, context.Background(), "", "audit", "list", "--config", w.cfg)
		if r.code != 0 || strings.Count(r.stdout, "\n") != n+1 {
			t.Errorf("audit list: %+v", r)
		}
	})
}

// workspaceRootT is the repository root, for files the packages ship.
func workspaceRootT(t *testing.T) string {
	t.Helper()
	root, err := workspaceRoot()
	must(t, err)
	return root
}
