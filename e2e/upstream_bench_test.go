package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// echoWorld is a world whose gateway has the hostile fixture as upstream
// "bench" (in its sandbox, a state directory its one writable root), as
// the user or as root.
func echoWorld(t testing.TB, asUser bool) *world {
	w := newWorldBackend(t, asUser, upstreamPolicy, "auto")
	state := filepath.Join(w.dir, "bench-state")
	must(t, os.MkdirAll(state, 0o777))
	must(t, os.Chmod(state, 0o777))
	w.addUpstreams(t, "  bench:\n    command: "+yamlList([]string{hostileBinary(t), "--state", state})+"\n    writable_roots: ["+state+"]\n    call_timeout_seconds: 5\n")
	return w
}

// BenchmarkUpstreamCall is one tools/call of a small result (the hostile
// fixture's echo, a Go server over stdio) made directly to the server,
// through a proxy that only forwards (e2e/nullproxy), through
// `mitrity-gateway serve --stdio` and through mitrity-sidecar: the
// difference from direct is the latency the hop and the pipeline add
// (decision, audit reservation and appended event, redaction and
// injection scan of the result). The server runs in its sandbox behind
// the gateway and the sidecar; per call that costs nothing but the pipes.
//
// Each path has its sub-benchmark (ns/op, for benchstat): calls back to
// back, every process of the path kept busy. "interleaved" calls the four
// paths in turn within each iteration, so that all of them see the same
// moments of a shared, noisy machine, and each call finds its path's
// processes idle since its last one (about 3 ms), as an agent's
// occasional calls do; it reports each path's median call
// (<path>-p50-ms) and that median's difference from direct's
// (<path>-added-p50-ms).
func BenchmarkUpstreamCall(b *testing.B) {
	hostile := hostileBinary(b)
	w := echoWorld(b, false)
	sidecar := filepath.Join(w.dir, "mitrity-sidecar")
	installBinary(b, binPath(b, "mitrity-sidecar"), sidecar)
	stdioClient := func(b *testing.B, cmd *exec.Cmd) *mcp.ClientSession {
		client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cs.Close() })
		return cs
	}
	// Each path: a session and the name the echo tool has on it.
	paths := []struct {
		name string
		open func(b *testing.B) (*mcp.ClientSession, string)
	}{
		{"direct", func(b *testing.B) (*mcp.ClientSession, string) {
			return stdioClient(b, exec.Command(hostile, "--state", b.TempDir())), "echo"
		}},
		// The least a proxy on the same SDK does: serve the tools over
		// stdio, forward each call as it is. What the gateway adds beyond
		// it is the pipeline; what it adds to direct is the second hop.
		{"nullproxy", func(b *testing.B) (*mcp.ClientSession, string) {
			return stdioClient(b, exec.Command(fixtureBinary(b, "nullproxy", "mitrity-e2e-nullproxy"), hostile, "--state", b.TempDir())), "echo"
		}},
		{"gateway", func(b *testing.B) (*mcp.ClientSession, string) {
			return w.session(b, nil, w.bin, "--log-level", "error", "serve", "--stdio", "--config", w.cfg, "--admin-dir", w.admin), "bench__echo"
		}},
		{"sidecar", func(b *testing.B) (*mcp.ClientSession, string) {
			return w.session(b, nil, sidecar, "--log-level", "error", "--config", w.cfg, "--admin-dir", w.admin), "bench__echo"
		}},
	}
	call := func(b *testing.B, cs *mcp.ClientSession, tool string) {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"text": "hello"}})
		if err != nil || res.IsError {
			b.Fatalf("%s: %v %v", tool, err, res)
		}
	}
	for _, p := range paths {
		b.Run(p.name, func(b *testing.B) {
			cs, tool := p.open(b)
			call(b, cs, tool) // warm
			b.ResetTimer()
			for range b.N {
				call(b, cs, tool)
			}
		})
	}
	b.Run("interleaved", func(b *testing.B) {
		sessions := make([]*mcp.ClientSession, len(paths))
		tools := make([]string, len(paths))
		for i, p := range paths {
			sessions[i], tools[i] = p.open(b)
			call(b, sessions[i], tools[i])
		}
		samples := make([][]time.Duration, len(paths))
		b.ResetTimer()
		for range b.N {
			for i := range paths {
				start := time.Now()
				call(b, sessions[i], tools[i])
				samples[i] = append(samples[i], time.Since(start))
			}
		}
		b.StopTimer()
		p50 := make([]float64, len(paths))
		for i, p := range paths {
			s := slices.Clone(samples[i])
			slices.Sort(s)
			p50[i] = float64(s[len(s)/2]) / 1e6
			b.ReportMetric(p50[i], p.name+"-p50-ms")
			if i > 0 {
				b.ReportMetric(p50[i]-p50[0], p.name+"-added-p50-ms")
			}
		}
		b.ReportMetric(0, "ns/op")
	})
}
