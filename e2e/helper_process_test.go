package e2e

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHelperKilledGatewayServes: every run's supervisor is a
// mitrity-sandboxrun of its own, a child of the gateway started for that
// run. SIGKILL it mid-run (what a supervisor crash or a command that found
// a way to take its supervisor down would do): the gateway answers the call
// (killed, the helper ended without a result), audits it, leaves no process
// of the run on the host, and serves the next call.
func TestHelperKilledGatewayServes(t *testing.T) {
	forGatewayIdentities(t, func(t *testing.T, asUser bool) {
		w := newWorldBackend(t, asUser, sandboxPolicy, "bubblewrap")
		g := startHTTPGW(t, w, gwOptions{})
		cs := g.client(t)
		m := marker(t)
		type answer struct {
			r   toolResult
			err error
		}
		done := make(chan answer, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			r, err := callShell(t, ctx, cs, map[string]any{"command": "exec -a " + m + " sleep 50"})
			done <- answer{r, err}
		}()
		deadline := time.Now().Add(20 * time.Second)
		for len(procsWithArg0(m)) == 0 {
			if time.Now().After(deadline) {
				t.Fatal("the command never started")
			}
			time.Sleep(20 * time.Millisecond)
		}
		helpers := 0
		for _, pid := range procsWithArg0("mitrity-sandboxrun") {
			if ppidOf(pid) == g.pid {
				must(t, syscall.Kill(pid, syscall.SIGKILL))
				helpers++
			}
		}
		if helpers != 1 {
			t.Fatalf("%d helpers under the gateway (pid %d), want 1", helpers, g.pid)
		}
		a := <-done
		if a.err != nil {
			t.Fatalf("the call got no answer: %v", a.err)
		}
		if s := a.r.structured["status"]; s != "killed" || !strings.Contains(a.r.text, "ended without a result") {
			t.Errorf("status %v: %s", s, a.r.text)
		}
		for end := time.Now().Add(5 * time.Second); len(procsWithArg0(m)) > 0 && time.Now().Before(end); {
			time.Sleep(20 * time.Millisecond)
		}
		if p := procsWithArg0(m); len(p) > 0 {
			t.Errorf("the run outlived its helper: %v", p)
		}
		r, err := callShell(t, context.Background(), cs, map[string]any{"command": "echo next"})
		if err != nil || r.stdout != "next\n" {
			t.Fatalf("the next call: %v %+v", err, r)
		}
		calls := w.calls(t)
		if len(calls) != 2 || field(calls[0], "data", "execution", "status") != "killed" ||
			field(calls[1], "data", "execution", "status") != "completed" {
			t.Fatalf("audit: %v", calls)
		}
	})
}

// procsWithArg0 lists the host's processes whose argv[0] is name.
func procsWithArg0(name string) []int {
	var out []int
	for pid, b := range procCmdlines() {
		if a0, _, _ := bytes.Cut(b, []byte{0}); string(a0) == name {
			out = append(out, pid)
		}
	}
	return out
}

// ppidOf is pid's parent, 0 when it is gone.
func ppidOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(f[1])
	return n
}
