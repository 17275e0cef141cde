package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

// BenchmarkGatewayExec is what a user pays per command, side by side and
// interleaved so load falls on all alike: bash -c true; raw bubblewrap
// with the namespaces a run uses, running true; the whole
// `mitrity-gateway exec -- true` at full strength (a fresh process: config,
// policy and rules loaded, the call analysed, decided, planned, run in the
// sandbox with seccomp, audited); and the same command the way an agent's
// framework runs it against a gateway that is already serving: the
// PreToolUse hook admits it (a process, the pipeline over the admission
// socket, a ticket) and the rewritten command, `mitrity-hook exec TICKET`
// under bash -c, redeems it (the sandboxed run, streamed back, audited).
// "served" is both together, "relay" the second alone (what the command
// itself now takes; the hook ran before the framework started it). "mcp"
// is the tool call an MCP client makes to `serve --stdio` (shell__execute:
// the whole pipeline, the sandboxed run, the audit; no process started
// but the sandbox's). It reports each median and each as a multiple of raw
// bubblewrap's.
func BenchmarkGatewayExec(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("the world runs a root gateway with run_as")
	}
	w := newWorldBackend(b, false, sandboxPolicy, "auto")
	hw := newHookWorld(b, 300)
	routed := []string{"MITRITY_AGENT=routed-claude"}
	var relayTimes []time.Duration
	cs := w.mcpStdio(b, "local")
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		b.Fatal(err)
	}
	cases := []struct {
		name string
		run  func() error
	}{
		{"bash", func() error { return exec.Command("/bin/bash", "-c", "true").Run() }},
		{"bwrap", func() error {
			return exec.Command(bwrap, "--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
				"--unshare-cgroup-try", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
				"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/run",
				"--bind", w.ws, w.ws, "--chdir", w.ws, "--", "/bin/true").Run()
		}},
		{"gateway", func() error {
			cmd := exec.Command(w.bin, "--log-level", "error", "exec", "--config", w.cfg, "--admin-dir", w.admin, "--", "true")
			cmd.Dir = w.ws
			cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + w.dir}
			return cmd.Run()
		}},
		{"mcp", func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			r, err := callShell(b, ctx, cs, map[string]any{"command": "true"})
			if err != nil || r.isError || r.structured["sandbox_mode"] != "bubblewrap" {
				return fmt.Errorf("shell__execute: %+v, %v", r, err)
			}
			return nil
		}},
		{"served", func() error {
			relay := hw.admitRouted(b, "routed-claude", "true")
			start := time.Now()
			r := hw.relay(b, routed, relay)
			relayTimes = append(relayTimes, time.Since(start))
			if r.code != 0 {
				return fmt.Errorf("relay: %+v", r)
			}
			return nil
		}},
	}
	samples := make([][]time.Duration, len(cases))
	for _, c := range cases {
		if err := c.run(); err != nil {
			b.Fatalf("%s: %v", c.name, err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j, c := range cases {
			start := time.Now()
			if err := c.run(); err != nil {
				b.Fatalf("%s: %v", c.name, err)
			}
			samples[j] = append(samples[j], time.Since(start))
		}
	}
	b.StopTimer()
	med := func(d []time.Duration) float64 {
		s := slices.Clone(d)
		slices.Sort(s)
		return float64(s[len(s)/2].Microseconds()) / 1000
	}
	for j, c := range cases {
		b.ReportMetric(med(samples[j]), c.name+"-ms")
	}
	b.ReportMetric(med(relayTimes), "relay-ms")
	b.ReportMetric(med(samples[2])/med(samples[1]), "gateway/bwrap")
	b.ReportMetric(med(samples[3])/med(samples[1]), "mcp/bwrap")
	b.ReportMetric(med(samples[4])/med(samples[1]), "served/bwrap")
	b.ReportMetric(med(relayTimes)/med(samples[1]), "relay/bwrap")
	b.ReportMetric(0, "ns/op")
}
