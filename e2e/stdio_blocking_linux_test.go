package e2e

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

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
