package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BenchmarkMaskCover measures what hiding a masked file through its
// directory adds to a run's start (sandbox.Run in-process, running
// /bin/true at full strength, as the gateway's executor does), beside the
// sandbox's other benchmarks (sandboxrun's BenchmarkStartup), with
// mitrity-sandboxinit as the sandbox's first process. For
// directories of 8, 32 (the bound, maxCoverEntries) and 128 entries, one
// of them the gateway's config, the cases run interleaved, so that the
// machine's load falls on all alike: no deny path there ("none"), the
// config masked by a bind of /dev/null over it as before ("mask"), and its
// directory covered with every other entry put back ("cover"). It reports
// the medians in ms and cover/mask and cover/none for each size.
func BenchmarkMaskCover(b *testing.B) {
	if _, err := findBwrap(""); err != nil {
		b.Skip(err)
	}
	base, err := os.MkdirTemp("/var/tmp", "mitrity-bench-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(base)
	ws := filepath.Join(base, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		b.Fatal(err)
	}
	self, _ := os.Executable()
	// The sandbox's init as make build installs it (a small static
	// program): the test binary's own init would weigh on every case.
	init := filepath.Join(base, InitName)
	build := exec.Command("go", "build", "-o", init, "github.com/mitrity/mitrity/sandboxrun/sandboxinit")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("building %s: %v\n%s", InitName, err, out)
	}
	type bcase struct {
		name   string
		spec   Spec
		covers int // coverEntries for the run
	}
	var cases []bcase
	for _, n := range []int{8, maxCoverEntries, 128} {
		dir := filepath.Join(base, fmt.Sprintf("etc%d", n))
		if err := os.Mkdir(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for i := range n - 1 {
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d", i)), []byte("x"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		cfg := filepath.Join(dir, "gateway.yaml")
		if err := os.WriteFile(cfg, []byte("secret"), 0o600); err != nil {
			b.Fatal(err)
		}
		spec := Spec{Argv: []string{"/bin/true"}, Env: []string{"PATH=/usr/bin:/bin"}, Cwd: ws, WorkspaceRoots: []string{ws}, TimeoutMS: 30000}
		masked := spec
		masked.DenyPaths = []string{cfg}
		cases = append(cases,
			bcase{fmt.Sprintf("none%d", n), spec, n},
			bcase{fmt.Sprintf("mask%d", n), masked, -1},
			bcase{fmt.Sprintf("cover%d", n), masked, n},
		)
	}
	run := func(c bcase) error {
		coverEntries = c.covers
		defer func() { coverEntries = maxCoverEntries }()
		s := c.spec
		r := Run(context.Background(), &s, Stdio{}, WithHelper(self), WithInit(init))
		if r.Status.String() != "completed" || r.SandboxMode.String() != "bubblewrap" {
			return fmt.Errorf("%s: not a full-strength run: %+v", c.name, r)
		}
		return nil
	}
	samples := make([][]time.Duration, len(cases))
	for _, c := range cases { // warm the page cache
		if err := run(c); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		for j, c := range cases {
			start := time.Now()
			if err := run(c); err != nil {
				b.Fatal(err)
			}
			samples[j] = append(samples[j], time.Since(start))
		}
	}
	b.StopTimer()
	med := make([]float64, len(cases))
	for j, c := range cases {
		s := slices.Clone(samples[j])
		slices.Sort(s)
		med[j] = float64(s[len(s)/2].Microseconds()) / 1000
		b.ReportMetric(med[j], c.name+"-ms")
	}
	for j := 0; j < len(cases); j += 3 {
		n := cases[j].covers
		b.ReportMetric(med[j+2]/med[j+1], fmt.Sprintf("cover%d/mask%d", n, n))
		b.ReportMetric(med[j+2]/med[j], fmt.Sprintf("cover%d/none%d", n, n))
	}
	b.ReportMetric(0, "ns/op")
}
