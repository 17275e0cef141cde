package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkUpstreamCall is one tools/call of a small result (the hostile
// fixture's echo, a Go server over stdio) made directly to the server,
// through a proxy that only forwards (e2e/nullproxy), through
// `mitrity-gateway serve --stdio` and through mitrity-sidecar,
// side by side in one run: the difference of the medians is the latency
// the pipeline adds (decision, audit reservation and fsynced event,
// redaction and injection scan of the result). The server runs in its
// sandbox behind the gateway and the sidecar; per call that costs nothing
// but the pipes.
func BenchmarkUpstreamCall(b *testing.B) {
	hostile := hostileBinary(b)
	w := newWorldBackend(b, false, upstreamPolicy, "auto")
	state := filepath.Join(w.dir, "bench-state")
	must(b, os.MkdirAll(state, 0o777))
	must(b, os.Chmod(state, 0o777))
	w.addUpstreams(b, "  bench:\n    command: "+yamlList([]string{hostile, "--state", state})+"\n    writable_roots: ["+state+"]\n    call_timeout_seconds: 5\n")
	sidecar := filepath.Join(w.dir, "mitrity-sidecar")
	installBinary(b, binPath(b, "mitrity-sidecar"), sidecar)
	loop := func(b *testing.B, cs *mcp.ClientSession, tool string) {
		ctx := context.Background()
		params := &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"text": "hello"}}
		if _, err := cs.CallTool(ctx, params); err != nil { // warm
			b.Fatal(err)
		}
		b.ResetTimer()
		for range b.N {
			res, err := cs.CallTool(ctx, params)
			if err != nil || res.IsError {
				b.Fatalf("%s: %v %v", tool, err, res)
			}
		}
	}
	b.Run("direct", func(b *testing.B) {
		cmd := exec.Command(hostile, "--state", b.TempDir())
		client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		loop(b, cs, "echo")
	})
	// The least a proxy on the same SDK does: serve the tools over stdio,
	// forward each call as it is. What the gateway adds beyond it is the
	// pipeline; what it adds to direct is the second hop itself.
	b.Run("nullproxy", func(b *testing.B) {
		cmd := exec.Command(fixtureBinary(b, "nullproxy", "mitrity-e2e-nullproxy"), hostile, "--state", b.TempDir())
		client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		loop(b, cs, "echo")
	})
	b.Run("gateway", func(b *testing.B) {
		cs := w.session(b, nil, w.bin, "--log-level", "error", "serve", "--stdio", "--config", w.cfg, "--admin-dir", w.admin)
		loop(b, cs, "bench__echo")
	})
	b.Run("sidecar", func(b *testing.B) {
		cs := w.session(b, nil, sidecar, "--log-level", "error", "--config", w.cfg, "--admin-dir", w.admin)
		loop(b, cs, "bench__echo")
	})
}
