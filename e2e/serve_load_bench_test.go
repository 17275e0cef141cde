package e2e

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkServeLoad is what a served gateway sustains: `true` called as
// shell__execute by 1, 4 and 16 clients at once, each waiting for its
// answer before the next call, over a real `serve --http` (a session per
// client) and over `serve --stdio` (one session, the calls concurrent on
// it), beside the same number of workers each starting raw bubblewrap
// with the namespaces a run uses. Each served call is the whole pipeline,
// a sandboxed run (bubblewrap, seccomp) and an audit event. Cases and
// concurrencies are interleaved, round after round, so load falls on all
// alike. It reports, per case and concurrency, the median over rounds of
// the calls per second, the p50 and p99 latency over all calls, and the
// served cases' throughput as a fraction of raw bubblewrap's.
func BenchmarkServeLoad(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("the worlds run root gateways with run_as")
	}
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		b.Fatal(err)
	}
	concs := []int{1, 4, 16}
	maxConc := slices.Max(concs)
	hw := newWorldBackend(b, false, sandboxPolicy, "auto")
	g := startHTTPGW(b, hw, gwOptions{maxConcurrent: maxConc})
	var httpSessions []*mcp.ClientSession
	for range maxConc {
		httpSessions = append(httpSessions, g.client(b))
	}
	sw := newWorldBackend(b, false, sandboxPolicy, "auto")
	limitConcurrency(b, sw, maxConc)
	stdio := sw.mcpStdio(b, "local")

	served := func(cs *mcp.ClientSession) error {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		r, err := callShell(b, ctx, cs, map[string]any{"command": "true"})
		if err != nil || r.isError || r.structured["exit_code"] != float64(0) || r.structured["sandbox_mode"] != "bubblewrap" {
			return fmt.Errorf("shell__execute: %+v, %v", r, err)
		}
		return nil
	}
	cases := []struct {
		name string
		run  func(worker int) error
	}{
		{"bwrap", func(int) error {
			return exec.Command(bwrap, "--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
				"--unshare-cgroup-try", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
				"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/run",
				"--bind", hw.ws, hw.ws, "--chdir", hw.ws, "--", "/bin/true").Run()
		}},
		{"http", func(worker int) error { return served(httpSessions[worker]) }},
		{"stdio", func(int) error { return served(stdio) }},
	}
	for _, c := range cases {
		if err := c.run(0); err != nil {
			b.Fatalf("%s: %v", c.name, err)
		}
	}
	type key struct {
		c    string
		conc int
	}
	rates := map[key][]float64{}
	lat := map[key][]time.Duration{}
	// A batch: conc workers share calls, each call after its worker's
	// previous one returned.
	batch := func(run func(int) error, conc int) (float64, []time.Duration) {
		calls := max(32, 4*conc)
		var mu sync.Mutex
		var times []time.Duration
		var firstErr error
		next := make(chan struct{}, calls)
		for range calls {
			next <- struct{}{}
		}
		close(next)
		var wg sync.WaitGroup
		start := time.Now()
		for wk := range conc {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range next {
					t0 := time.Now()
					err := run(wk)
					d := time.Since(t0)
					mu.Lock()
					times = append(times, d)
					if err != nil && firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		wall := time.Since(start)
		if firstErr != nil {
			b.Fatal(firstErr)
		}
		return float64(calls) / wall.Seconds(), times
	}
	rounds := max(b.N, 3)
	b.ResetTimer()
	for range rounds {
		for _, conc := range concs {
			for _, c := range cases {
				rate, times := batch(c.run, conc)
				k := key{c.name, conc}
				rates[k] = append(rates[k], rate)
				lat[k] = append(lat[k], times...)
			}
		}
	}
	b.StopTimer()
	median := func(v []float64) float64 {
		s := slices.Clone(v)
		slices.Sort(s)
		return s[len(s)/2]
	}
	quantile := func(d []time.Duration, q float64) float64 {
		s := slices.Clone(d)
		slices.Sort(s)
		i := int(math.Ceil(q*float64(len(s)))) - 1
		return float64(s[max(i, 0)].Microseconds()) / 1000
	}
	for _, conc := range concs {
		for _, c := range cases {
			k := key{c.name, conc}
			b.ReportMetric(median(rates[k]), fmt.Sprintf("%s-c%d-calls/s", c.name, conc))
			b.ReportMetric(quantile(lat[k], 0.50), fmt.Sprintf("%s-c%d-p50-ms", c.name, conc))
			b.ReportMetric(quantile(lat[k], 0.99), fmt.Sprintf("%s-c%d-p99-ms", c.name, conc))
		}
		raw := median(rates[key{"bwrap", conc}])
		for _, c := range cases[1:] {
			b.ReportMetric(median(rates[key{c.name, conc}])/raw, fmt.Sprintf("%s/bwrap-c%d", c.name, conc))
		}
	}
	b.ReportMetric(0, "ns/op")
}

// limitConcurrency sets exec.limits.max_concurrent in w's configuration.
func limitConcurrency(t testing.TB, w *world, n int) {
	t.Helper()
	cfg, err := os.ReadFile(w.cfg)
	must(t, err)
	s := strings.Replace(string(cfg), "  sandbox:\n", fmt.Sprintf("  limits:\n    max_concurrent: %d\n  sandbox:\n", n), 1)
	must(t, os.WriteFile(w.cfg, []byte(s), 0o644))
}
