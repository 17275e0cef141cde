package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestShutdownRefusesAndReaps: SIGTERM while calls run. A call that
// arrives during the grace period is refused with shutting_down and
// audited; the running calls are killed at the end of the grace period and
// audited killed; the gateway reaps every process it started before it
// exits (none is ever a zombie of the gateway at its exit), and nothing of
// the runs outlives it.
func TestShutdownRefusesAndReaps(t *testing.T) {
	forGatewayIdentities(t, func(t *testing.T, asUser bool) {
		w := newWorldBackend(t, asUser, e2ePolicy, "bubblewrap")
		g := startHTTPGW(t, w, gwOptions{})
		tag := "sleep 43.25; true"
		if asUser {
			tag = "sleep 43.5; true"
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		running := make(chan toolResult, 2)
		for range 2 {
			cs := g.client(t)
			go func() {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "shell__execute", Arguments: map[string]any{"command": tag}})
				r := toolResult{}
				if err == nil {
					r = toolResultOf(res)
				}
				running <- r
			}()
		}
		late := g.client(t)
		for deadline := time.Now().Add(20 * time.Second); len(procsWith(tag)) < 2; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the runs did not start")
			}
		}
		must(t, g.cmd.Process.Signal(syscall.SIGTERM))
		time.Sleep(100 * time.Millisecond)
		// A call during the grace period, on a session opened before.
		res, err := late.CallTool(ctx, &mcp.CallToolParams{Name: "shell__execute", Arguments: map[string]any{"command": "touch " + filepath.Join(w.ws, "late")}})
		if err != nil {
			t.Fatalf("a call during shutdown, on a session opened before: %v", err)
		}
		{
			r := toolResultOf(res)
			if !r.isError || r.structured["reason"] != "shutting_down" || r.structured["event_id"] == nil || !strings.Contains(r.text, "nothing ran") {
				t.Errorf("a call during shutdown: %+v", r)
			}
		}
		// Until it exits, watch the gateway's children.
		var zombies []string
		for {
			select {
			case <-g.exited:
			default:
				zombies = childrenIn(g.pid, "Z")
				time.Sleep(10 * time.Millisecond)
				continue
			}
			break
		}
		if len(zombies) > 0 {
			t.Errorf("children of the gateway not reaped just before it exited: %v", zombies)
		}
		for range 2 {
			if r := <-running; r.structured != nil && r.structured["status"] != "killed" {
				t.Errorf("a run at the end of the grace period: %+v", r)
			}
		}
		if left := procsWith(tag); len(left) > 0 {
			t.Errorf("processes outlived the gateway: %v", left)
		}
		if _, err := os.Stat(filepath.Join(w.ws, "late")); err == nil {
			t.Error("a call made during shutdown ran")
		}
		var killed, refused int
		for _, ev := range w.calls(t) {
			switch {
			case field(ev, "data", "execution", "status") == "killed":
				killed++
			case field(ev, "data", "decision", "reason") == "shutting_down":
				refused++
				if field(ev, "data", "blocked_by") != "server" {
					t.Errorf("blocked_by of a shutdown refusal: %v", field(ev, "data", "blocked_by"))
				}
			}
		}
		if killed != 2 || refused != 1 {
			t.Errorf("audit: %d killed (want 2), %d refused during shutdown (want 1)", killed, refused)
		}
	})
}

// childrenIn lists the children of pid in state (a /proc status letter).
func childrenIn(pid int, state string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil {
			continue
		}
		var st, ppid string
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "State:"); ok {
				st = strings.Fields(v)[0]
			}
			if v, ok := strings.CutPrefix(l, "PPid:"); ok {
				ppid = strings.TrimSpace(v)
			}
		}
		if ppid == fmt.Sprint(pid) && st == state {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestConcurrencyLimitStampsNoSandbox: a call refused because
// max_concurrent runs are running never ran, so neither its result nor its
// audit card vouches for any isolation (no sandbox_mode).
func TestConcurrencyLimitStampsNoSandbox(t *testing.T) {
	forGatewayIdentities(t, func(t *testing.T, asUser bool) {
		w := newWorldBackend(t, asUser, e2ePolicy, "bubblewrap")
		g := startHTTPGW(t, w, gwOptions{maxConcurrent: 1})
		tag := "sleep 44.25; true"
		if asUser {
			tag = "sleep 44.5; true"
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		stopBusy := g.busy(t, ctx, tag)
		r, err := callShell(t, ctx, g.client(t), map[string]any{"command": "true"})
		must(t, err)
		if !r.isError || r.structured["reason"] != "concurrency_limit" || r.structured["status"] != "never_ran" {
			t.Fatalf("the second call: %+v", r)
		}
		if _, ok := r.structured["sandbox_mode"]; ok {
			t.Errorf("a call that never ran reports sandbox_mode %v", r.structured["sandbox_mode"])
		}
		id, _ := r.structured["event_id"].(string)
		var card map[string]any
		for _, ev := range w.events(t) {
			if ev["id"] == id {
				card = ev
			}
		}
		x, _ := field(card, "data", "execution").(map[string]any)
		if x == nil || x["status"] != "never_ran" || x["reason"] != "concurrency_limit" {
			t.Fatalf("the audit card: %v", card)
		}
		if m, ok := x["sandbox_mode"]; ok {
			t.Errorf("the audit card of a call that never ran has sandbox_mode %v", m)
		}
		stopBusy()
	})
}

// busy starts a call of command (a tag that names its processes) on a
// session of its own, waits until it runs, and returns what ends it.
func (g *httpGW) busy(t *testing.T, ctx context.Context, command string) (stop func()) {
	t.Helper()
	bctx, bcancel := context.WithCancel(ctx)
	cs := g.client(t)
	done := make(chan struct{})
	go func() {
		cs.CallTool(bctx, &mcp.CallToolParams{Name: "shell__execute", Arguments: map[string]any{"command": command}})
		close(done)
	}()
	stop = func() { bcancel(); <-done }
	for deadline := time.Now().Add(20 * time.Second); len(procsWith(command)) < 1; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			stop()
			t.Fatal("the first run did not start")
		}
	}
	return stop
}
