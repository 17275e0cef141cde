package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mitrity/mitrity/govern/sandbox"
	"github.com/mitrity/mitrity/govern/secretscan"
)

// BenchmarkStartup runs, interleaved so that the machine's load falls on
// all alike: bash -c true; raw bubblewrap running true with the run's
// namespaces and the basic mounts ("bwrap": /, /dev, /proc, /tmp, /run,
// the root), and with exactly the mounts a run makes ("bwrap_same": the
// deny-set masks, /dev/shm, the init binary and the read-only remounts
// too, read from a real run's bubblewrap command line); sandbox.Run called
// in-process (what the gateway's
// executor does: no sandboxrun process to start), with mitrity-sandboxinit
// as the sandbox's init and, for comparison, with mitrity-sandboxrun's own
// init subcommand instead; and mitrity-sandboxrun running true at full
// strength (seccomp installed; spec in and result out on pipes), without
// and with memory and process limits, and with an egress bridge. It reports
// each median in ms and each sandboxed median as a multiple of both raw
// bubblewraps' (the target is 2x at most).
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
	same := sameMounts(b, bin, &base)
	// The helper alone, without mitrity-sandboxinit beside it.
	alone := filepath.Join(scratch(b), "mitrity-sandboxrun")
	if out, err := exec.Command("cp", bin, alone).CombinedOutput(); err != nil {
		b.Fatalf("cp: %v: %s", err, out)
	}
	inProcess := func(helper string) func() error {
		return func() error {
			r := sandbox.Run(context.Background(), &base, sandbox.Stdio{}, sandbox.WithHelper(helper))
			if r.Status.String() != "completed" || r.SandboxMode.String() != "bubblewrap" {
				return fmt.Errorf("not a full-strength run: %+v", r)
			}
			return nil
		}
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
				"--bind", ws, ws, "--chdir", ws, "--", "/bin/true").Run()
		}},
		{"bwrap_same", func() error { return exec.Command(bwrap, same...).Run() }},
		{"inprocess", inProcess(bin)},
		{"inprocess_helperinit", inProcess(alone)},
		{"sandboxrun", func() error { return runSpecOnce(bin, &base) }},
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
	for j, c := range cases[3:] {
		b.ReportMetric(medians[j+3]/medians[1], c.name+"/bwrap")
		b.ReportMetric(medians[j+3]/medians[2], c.name+"/bwrap_same")
	}
	b.ReportMetric(0, "ns/op") // the per-op mean mixes every case: meaningless here
}

func median(d []time.Duration) float64 {
	s := slices.Clone(d)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return float64(s[len(s)/2].Microseconds()) / 1000
}

// runSpecOnce runs one spec through the binary as the executor does
// (sandbox.Spawn: a helper of its own, the spec in and the result out on
// pipes).
func runSpecOnce(bin string, spec *sandbox.Spec) error {
	r := sandbox.Spawn(context.Background(), bin, spec, sandbox.Stdio{})
	if r.Status.String() != "completed" || r.SandboxMode.String() != "bubblewrap" {
		return fmt.Errorf("not a full-strength run: %+v", r)
	}
	return nil
}

// sameMounts returns bubblewrap's arguments for spec's run, captured from a
// real run through a stand-in bwrap that copies the options bubblewrap is
// given on its --args descriptor (reopened through /proc, so bubblewrap
// still reads them all) and then runs the real one; with everything that
// is not a namespace or a mount taken out (the seccomp filter, the info
// and block descriptors) and true run directly instead of the init: the
// raw cost of the same sandbox.
func sameMounts(b *testing.B, helper string, spec *sandbox.Spec) []string {
	b.Helper()
	dir := b.TempDir()
	capture := filepath.Join(dir, "args")
	wrapper := filepath.Join(dir, "bwrap")
	script := "#!/bin/sh\n[ \"$1\" = --args ] && cp /proc/self/fd/$2 " + capture + "\nexec " + spec.Bwrap.Path + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		b.Fatal(err)
	}
	s := *spec
	s.Bwrap.Path = wrapper
	if r := sandbox.Run(context.Background(), &s, sandbox.Stdio{}, sandbox.WithHelper(helper)); r.Status.String() != "completed" {
		b.Fatalf("capturing the run's arguments: %+v", r)
	}
	raw, err := os.ReadFile(capture)
	if err != nil {
		b.Fatal(err)
	}
	argv := strings.Split(strings.TrimSuffix(string(raw), "\x00"), "\x00")
	var args []string
	for i := 0; i < len(argv); i++ {
		switch a := argv[i]; a {
		case "--seccomp", "--info-fd", "--block-fd":
			i++
		case "--ro-bind-fd":
			// The same mount, from the path rather than a descriptor.
			args = append(args, "--ro-bind", filepath.Join(filepath.Dir(helper), sandbox.InitName), argv[i+2])
			i += 2
		default:
			args = append(args, a)
		}
	}
	return append(args, "--", "/bin/true")
}

// BenchmarkExecGuard is the exec guard's cost on a build-like workload,
// many short program starts: bash running /bin/true 500 times in one
// sandboxed run, with a credential injected (every execve waits for the
// supervisor's check of its command line) and without, interleaved. It
// reports each median and their ratio (the target is 1.10 at most).
func BenchmarkExecGuard(b *testing.B) {
	requireSandbox(b)
	bin := sandboxrunBin(b)
	ws := scratch(b)
	plain := sandbox.Spec{
		Argv: []string{"/bin/bash", "--noprofile", "--norc", "-c", "for i in $(seq 500); do /bin/true; done"},
		Env:  []string{"PATH=/usr/bin:/bin"}, Cwd: ws, WorkspaceRoots: []string{ws},
		Seccomp: sandbox.SeccompRequired, TimeoutMS: 60000,
	}
	guarded := plain
	guarded.Env = append(slices.Clone(plain.Env), "TOKEN=ghp_benchToken0123456789abcdefABCDEF")
	guarded.Credentials = []secretscan.Secret{{ID: "tok", Value: "ghp_benchToken0123456789abcdefABCDEF"}}
	cases := []struct {
		name string
		spec *sandbox.Spec
	}{{"plain", &plain}, {"guarded", &guarded}}
	samples := make([][]time.Duration, len(cases))
	for _, c := range cases {
		if err := runSpecOnce(bin, c.spec); err != nil {
			b.Fatalf("%s: %v", c.name, err)
		}
	}
	b.ResetTimer()
	// At least 8 interleaved rounds whatever b.N: one run takes about half
	// a second, so the default benchtime settles on b.N = 1, and the ratio
	// of one pair on a shared machine is noise.
	for range max(b.N, 8) {
		for j, c := range cases {
			start := time.Now()
			if err := runSpecOnce(bin, c.spec); err != nil {
				b.Fatalf("%s: %v", c.name, err)
			}
			samples[j] = append(samples[j], time.Since(start))
		}
	}
	b.StopTimer()
	p, g := median(samples[0]), median(samples[1])
	b.ReportMetric(p, "plain-ms")
	b.ReportMetric(g, "guarded-ms")
	b.ReportMetric(g/p, "guarded/plain")
	b.ReportMetric(0, "ns/op")
}
