package e2e

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"
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

// TestStdioHandedBackBlocking: the gateway and the sidecar read their
// stdin through the poller, which needs the pipe non-blocking; the flag
// belongs to the pipe's open description, which whoever started them may
// share (a shell script whose next command reads the same pipe). When they
// exit, the description is blocking again.
func TestStdioHandedBackBlocking(t *testing.T) {
	w := echoWorld(t, false)
	sidecar := filepath.Join(w.dir, "mitrity-sidecar")
	installBinary(t, binPath(t, "mitrity-sidecar"), sidecar)
	for _, tc := range []struct {
		name string
		argv []string
	}{
		{"gateway", []string{w.bin, "serve", "--stdio", "--config", w.cfg, "--admin-dir", w.admin}},
		{"sidecar", []string{sidecar, "--config", w.cfg, "--admin-dir", w.admin}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p [2]int
			must(t, unix.Pipe2(p[:], unix.O_CLOEXEC)) // blocking, as a shell's pipe is
			in, feed := os.NewFile(uintptr(p[0]), "stdin"), os.NewFile(uintptr(p[1]), "feed")
			defer in.Close()
			nonblocking := func() bool {
				fl, err := unix.FcntlInt(in.Fd(), unix.F_GETFL, 0)
				must(t, err)
				return fl&unix.O_NONBLOCK != 0
			}
			cmd := exec.Command(tc.argv[0], tc.argv[1:]...)
			cmd.Dir, cmd.Env = w.ws, []string{"PATH=/usr/bin:/bin", "HOME=" + w.dir}
			cmd.Stdin = in // this test keeps its own descriptor for the same description
			out, err := cmd.StdoutPipe()
			must(t, err)
			var stderr syncBuffer
			cmd.Stderr = &stderr
			must(t, cmd.Start())
			defer cmd.Process.Kill()
			_, err = feed.WriteString(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}` + "\n")
			must(t, err)
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil || !strings.Contains(line, `"id":1`) {
				t.Fatalf("initialize: %q, %v\n%s", line, err, stderr.String())
			}
			if !nonblocking() {
				t.Fatal("serving, stdin's description is blocking: the check below cannot tell")
			}
			feed.Close() // end of input: it exits
			if err := cmd.Wait(); err != nil {
				t.Fatalf("exit: %v\n%s", err, stderr.String())
			}
			if nonblocking() {
				t.Error("stdin's description is still non-blocking after the exit")
			}
		})
	}
}
