package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// threadWaits is what each of pid's threads sleeps in (its wchan).
func threadWaits(pid int) []string {
	paths, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/wchan")
	var out []string
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			out = append(out, string(b))
		}
	}
	return out
}

// blockingWait names a wait that holds a thread in a system call that
// can last as long as a peer pleases: read(2) of a pipe, waitid(2).
func blockingWait(waits []string) string {
	for _, w := range waits {
		if strings.HasSuffix(w, "pipe_read") || w == "do_wait" {
			return w
		}
	}
	return ""
}

// TestGatewayWaitsInPoller: a gateway serving stdio, with its stdin idle,
// a sandboxed upstream server running and a command running, and a
// sidecar beside it with its server, have no thread asleep in read(2) on
// a pipe or in waitid(2). Those waits are in
// the runtime's poller (govern/pollfd): since Go 1.26 a garbage
// collection's stop-the-world can wait on a thread that entered such a
// call at the wrong moment, and the gateway then stands still until the
// agent's next message or the child's exit. A cat reading a pipe shows
// the probe sees such a thread.
func TestGatewayWaitsInPoller(t *testing.T) {
	cat := exec.Command("cat")
	in, err := cat.StdinPipe()
	must(t, err)
	must(t, cat.Start())
	t.Cleanup(func() { in.Close(); cat.Wait() })
	deadline := time.Now().Add(10 * time.Second)
	for blockingWait(threadWaits(cat.Process.Pid)) == "" {
		if time.Now().After(deadline) {
			t.Fatalf("the probe does not see cat blocked in read(2): %q", threadWaits(cat.Process.Pid))
		}
		time.Sleep(10 * time.Millisecond)
	}

	for _, asUser := range []bool{false, true} {
		t.Run(map[bool]string{false: "root", true: "user"}[asUser], func(t *testing.T) { gatewayWaitsInPoller(t, asUser) })
	}
}

func gatewayWaitsInPoller(t *testing.T, asUser bool) {
	w := echoWorld(t, asUser)
	sidecar := filepath.Join(w.dir, "mitrity-sidecar")
	installBinary(t, binPath(t, "mitrity-sidecar"), sidecar)
	cs := w.session(t, nil, w.bin, "serve", "--stdio", "--config", w.cfg, "--admin-dir", w.admin)
	side := w.session(t, nil, sidecar, "--config", w.cfg, "--admin-dir", w.admin)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var serving []int // the gateway's and the sidecar's pids
	for _, c := range []struct {
		cs  *mcp.ClientSession
		bin string
	}{{cs, w.bin}, {side, sidecar}} {
		if _, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "bench__echo", Arguments: map[string]any{"text": "up"}}); err != nil {
			t.Fatal(err)
		}
		pids := procsWithArg0(c.bin)
		if len(pids) != 1 {
			t.Fatalf("%s processes %v", filepath.Base(c.bin), pids)
		}
		serving = append(serving, pids[0])
	}
	done := make(chan error, 1)
	go func() {
		res, err := callShell(t, ctx, cs, map[string]any{"command": "sleep 2 && echo slept"})
		if err == nil && (res.isError || !strings.Contains(res.stdout, "slept")) {
			t.Errorf("the command: %+v", res)
		}
		done <- err
	}()
	deadline := time.Now().Add(20 * time.Second)
	for len(procsWithArgv("sleep", "2")) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the command did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Sampled for a second: stdin idle, the server and the command running.
	for range 20 {
		for _, pid := range serving {
			if waits := threadWaits(pid); blockingWait(waits) != "" {
				t.Fatalf("a thread of pid %d (gateway %d, sidecar %d) sleeps in %s (threads: %q)", pid, serving[0], serving[1], blockingWait(waits), waits)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
