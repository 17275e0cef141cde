package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/mitrity/mitrity/govern/sandbox"
)

// BenchmarkStartup runs, interleaved so that the machine's load falls on
// all alike: bash -c true; raw bubblewrap with the namespaces and mounts a
// run uses, running true; and mitrity-sandboxrun running true at full
// strength (seccomp installed; spec in and result out on pipes, as the
// executor does), without and with memory and process limits, and with an
// egress bridge; and sandbox.Run called in-process (what an executor that
// links the library pays: no sandboxrun process to start). It reports each
// median in ms and each sandboxed median as a multiple of raw bubblewrap's
// (the target is 2x at most).
func BenchmarkStartup(b *testing.B) {
	requireSandbox(b)
	bin := sandboxrunBin(b)
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		bwrap = "/usr/bin/bwrap"
	}
	ws := scratch(b)
	v, err := exec.Command(bwrap, "--version").Output()
	if err != nil {
		b.Fatal(err)
	}
	version, _ := sandbox.ParseVersion(string(v))
	base := sandbox.Spec{
		Argv: []string{"/bin/true"}, Env: []string{"PATH=/usr/bin:/bin"}, Cwd: ws, WorkspaceRoots: []string{ws},
		Seccomp: sandbox.SeccompRequired, TimeoutMS: 30000, Bwrap: sandbox.Bwrap{Path: bwrap, Version: version.String()},
	}
	limited := base
	limited.Limits = sandbox.Limits{MemoryBytes: 512 << 20, Pids: 256, TmpfsBytes: 64 << 20, FileSizeBytes: 1 << 30, Nofile: 1024}
	proxied := base
	sock, _ := fakeProxyTB(b, scratch(b))
	proxied.ProxySocket = sock

	cases := []struct {
		name string
		run  func() error
	}{
		{"bash", func() error { return exec.Command("/bin/bash", "-c", "true").Run() }},
		{"bwrap", func() error {
			return exec.Command(bwrap, "--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
				"--unshare-cgroup-try", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
				"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/run",
				"--bind", ws, ws, "--chdir", ws, "--", "/bin/true").Run()
		}},
		{"sandboxrun", func() error { return runSpecOnce(bin, &base) }},
		{"inprocess", func() error {
			r := sandbox.Run(context.Background(), &base, sandbox.Stdio{}, sandbox.WithHelper(bin))
			if r.SandboxMode.String() != "bubblewrap" {
				return fmt.Errorf("not a full-strength run: %+v", r)
			}
			return nil
		}},
		{"sandboxrun_limits", func() error { return runSpecOnce(bin, &limited) }},
		{"sandboxrun_bridge", func() error { return runSpecOnce(bin, &proxied) }},
	}
	samples := make([][]time.Duration, len(cases))
	for _, c := range cases { // warm the page cache and the cgroup parents
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
	medians := make([]float64, len(cases))
	for j, c := range cases {
		medians[j] = median(samples[j])
		b.ReportMetric(medians[j], c.name+"-ms")
	}
	for j, c := range cases[2:] {
		b.ReportMetric(medians[j+2]/medians[1], c.name+"/bwrap")
	}
	b.ReportMetric(0, "ns/op") // the per-op mean mixes all five: meaningless here
}

func median(d []time.Duration) float64 {
	s := slices.Clone(d)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return float64(s[len(s)/2].Microseconds()) / 1000
}

// runSpecOnce runs one spec through the binary, as the executor would.
func runSpecOnce(bin string, spec *sandbox.Spec) error {
	specR, specW, err := os.Pipe()
	if err != nil {
		return err
	}
	resR, resW, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, "run", "--spec-fd", "3", "--result-fd", "4")
	cmd.Env = []string{}
	cmd.ExtraFiles = []*os.File{specR, resW}
	if err := cmd.Start(); err != nil {
		return err
	}
	specR.Close()
	resW.Close()
	go func() {
		json.NewEncoder(specW).Encode(spec)
		specW.Close()
	}()
	out, _ := io.ReadAll(resR)
	resR.Close()
	if err := cmd.Wait(); err != nil {
		return err
	}
	var r sandbox.Result
	if err := json.Unmarshal(out, &r); err != nil {
		return fmt.Errorf("result %q: %w", out, err)
	}
	if r.Status.String() != "completed" || r.SandboxMode.String() != "bubblewrap" {
		return fmt.Errorf("not a full-strength run: %+v", r)
	}
	return nil
}
