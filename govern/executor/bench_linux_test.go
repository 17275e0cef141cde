package executor

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/egress"
	"github.com/mitrity/mitrity/govern/plan"
)

// BenchmarkSandboxedStartup runs /bin/true, interleaved so that the
// machine's load falls on all alike: raw bubblewrap with the namespaces
// and mounts a run uses; a sandboxed run with an empty allowlist (no proxy,
// no bridge); and the same run with an allowlist (a proxy socket and the
// sandbox's bridge; the proxy process starts only at the first connection,
// which true never makes). It reports each median in ms, the allowlist's
// added cost (with minus without), and each run as a multiple of raw
// bubblewrap (the whole-run target is 2x at most). first_conn_ms is what a
// command's first connection waits for: the proxy's start-up and a refusal
// (a CONNECT answered 403); proxy_stop_ms what the run then waits for the
// report.
func BenchmarkSandboxedStartup(b *testing.B) {
	requireSandbox(b)
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		b.Fatal(err)
	}
	e := sandboxed(b, egress.Config{})
	ws := b.TempDir()
	mk := func(allow []string) *plan.Plan {
		p, err := plan.New(spec{
			Shell: "/bin/true", Dialect: "sh", Command: "", CommandSHA256: "x",
			Cwd: ws, WorkspaceRoots: []string{ws}, Timeout: 30 * time.Second, OutputMaxBytes: 1 << 10,
			Env: map[string]string{"PATH": "/usr/bin:/bin"}, Egress: allow,
		})
		if err != nil {
			b.Fatal(err)
		}
		return p
	}
	bare, proxied := mk(nil), mk([]string{"example.com"})
	run := func(p *plan.Plan) func() error {
		return func() error {
			r := e.Run(context.Background(), p, govern.SandboxBubblewrap, nil, nil, nil)
			if r.Status != govern.StatusCompleted || r.SandboxMode != govern.SandboxBubblewrap {
				b.Fatalf("not a full-strength run: %+v", r)
			}
			if (len(p.Egress()) > 0) != (r.Egress != nil) {
				b.Fatalf("proxy report %+v with allowlist %v: %s", r.Egress, p.Egress(), r.EgressError)
			}
			return nil
		}
	}
	var first, stop []time.Duration
	cases := []struct {
		name string
		run  func() error
	}{
		{"bwrap", func() error {
			return exec.Command(bwrap, "--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
				"--unshare-cgroup-try", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
				"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/run",
				"--bind", ws, ws, "--chdir", ws, "--", "/bin/true").Run()
		}},
		{"no_egress", run(bare)},
		{"egress", run(proxied)},
		{"first_conn", func() error {
			cfg := e.egressSettings()
			cfg.Allow = []string{"example.com"}
			px, err := egress.PrepareProcess(egress.ProcessOptions{Path: e.proxyPath, Config: cfg})
			if err != nil {
				return err
			}
			go px.Watch(func() {})
			start := time.Now()
			c, err := net.Dial("unix", px.Socket())
			if err != nil {
				return err
			}
			defer c.Close()
			if _, err := io.WriteString(c, "CONNECT denied.invalid:443 HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
				return err
			}
			resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				return fmt.Errorf("status %d", resp.StatusCode)
			}
			first = append(first, time.Since(start))
			start = time.Now()
			_, err = px.Stop()
			stop = append(stop, time.Since(start))
			return err
		}},
	}
	samples := make([][]time.Duration, len(cases))
	for _, c := range cases { // warm the page cache
		if err := c.run(); err != nil {
			b.Fatalf("%s: %v", c.name, err)
		}
	}
	first, stop = nil, nil
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
	ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
	med := make([]time.Duration, len(cases))
	for j, c := range cases {
		med[j] = median(samples[j])
		b.ReportMetric(ms(med[j]), c.name+"_ms")
	}
	b.ReportMetric(ms(med[2]-med[1]), "allowlist_added_ms")
	b.ReportMetric(float64(med[1])/float64(med[0]), "no_egress_x_bwrap")
	b.ReportMetric(float64(med[2])/float64(med[0]), "egress_x_bwrap")
	b.ReportMetric(ms(median(first)), "first_conn_ms")
	b.ReportMetric(ms(median(stop)), "proxy_stop_ms")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
