package sandbox

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern"
)

// requireSandbox skips without bubblewrap, unless GOVERN_REQUIRE_SANDBOX=1
// (make test, CI), where a missing tool fails.
func requireSandbox(t *testing.T) {
	t.Helper()
	if _, err := findBwrap(""); err != nil {
		if os.Getenv("GOVERN_REQUIRE_SANDBOX") == "1" {
			t.Fatalf("GOVERN_REQUIRE_SANDBOX=1 and %v", err)
		}
		t.Skip(err)
	}
}

type runOut struct {
	Result
	stdout, stderr string
}

// workspace returns a fresh workspace root; a temp dir under /tmp, which
// the sandbox sees only because the root is bound in.
func workspace(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	assert.NilError(t, err)
	return d
}

func shellSpec(ws, script string) *Spec {
	return &Spec{
		Argv:           []string{"/bin/bash", "--noprofile", "--norc", "-c", script},
		Env:            []string{"PATH=/usr/bin:/bin"},
		Cwd:            ws,
		WorkspaceRoots: []string{ws},
		TimeoutMS:      20000,
		KillGraceMS:    500,
	}
}

func runIn(t *testing.T, ctx context.Context, s *Spec) runOut {
	t.Helper()
	return runWith(t, ctx, s, selfExe(t))
}

// runWith runs s in-process with helper as the sandbox's init.
func runWith(t *testing.T, ctx context.Context, s *Spec, helper string) runOut {
	t.Helper()
	return captured(t, func(stdio Stdio) Result { return Run(ctx, s, stdio, WithHelper(helper)) })
}

// captured runs run with files for stdout and stderr, and returns what
// they got with the result.
func captured(t *testing.T, run func(Stdio) Result) runOut {
	t.Helper()
	dir := t.TempDir()
	out, err := os.Create(filepath.Join(dir, "stdout"))
	assert.NilError(t, err)
	defer out.Close()
	errf, err := os.Create(filepath.Join(dir, "stderr"))
	assert.NilError(t, err)
	defer errf.Close()
	r := run(Stdio{Stdout: out, Stderr: errf})
	o, _ := os.ReadFile(out.Name())
	e, _ := os.ReadFile(errf.Name())
	return runOut{Result: r, stdout: string(o), stderr: string(e)}
}

func TestRunCompleted(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	ws := workspace(t)
	s := shellSpec(ws, `echo out; echo err >&2; echo "$GREETING"; pwd; echo data > made; exit 7`)
	s.Env = append(s.Env, "GREETING=hello world")
	s.Limits = Limits{FileSizeBytes: 1 << 20, Nofile: 64, TmpfsBytes: 1 << 20}
	r := runIn(t, context.Background(), s)
	assert.Check(t, is.Equal(r.Status, govern.StatusCompleted), r.Message)
	assert.Assert(t, r.ExitCode != nil)
	assert.Check(t, is.Equal(*r.ExitCode, 7))
	assert.Check(t, is.Equal(r.SandboxMode, govern.SandboxBubblewrap))
	assert.Check(t, is.Equal(r.stdout, "out\nhello world\n"+ws+"\n"))
	assert.Check(t, is.Equal(r.stderr, "err\n"), "only the command's stderr reaches the caller")
	assert.Check(t, is.DeepEqual(r.LimitsEnforced.FileSize, Limit{true, MechanismRlimit}))
	assert.Check(t, is.DeepEqual(r.LimitsEnforced.TmpfsSize, Limit{true, MechanismTmpfs}))
	assert.Check(t, is.DeepEqual(r.LimitsEnforced.DaemonKill, Limit{true, MechanismPidns}))
	b, err := os.ReadFile(filepath.Join(ws, "made"))
	assert.NilError(t, err)
	assert.Check(t, is.Equal(string(b), "data\n"))
}

func TestRunCredentials(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	ws := workspace(t)
	s := shellSpec(ws, `echo "dir=$MITRITY_CRED_DIR"; stat -c '%a %n' "$MITRITY_CRED_DIR"/*; cat "$MITRITY_CRED_DIR/gh"; echo; echo x > "$MITRITY_CRED_DIR/gh" 2>/dev/null && echo WROTE; rm -f "$MITRITY_CRED_DIR/gh" 2>/dev/null; test -e "$MITRITY_CRED_DIR/gh" && echo STILL`)
	s.CredFiles = map[string]string{"gh": "ghp_secret", "kubeconfig": "apiVersion: v1"}
	r := runIn(t, context.Background(), s)
	assert.Check(t, is.Equal(r.Status, govern.StatusCompleted), r.Message)
	want := "dir=" + govern.CredentialDir + "\n400 " + govern.CredentialDir + "/gh\n400 " + govern.CredentialDir + "/kubeconfig\nghp_secret\nSTILL\n"
	assert.Check(t, is.Equal(r.stdout, want))
}

func TestRunPinnedScriptSwapped(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	ws := workspace(t)
	script := filepath.Join(ws, "deploy.sh")
	judged := []byte("echo JUDGED\n")
	assert.NilError(t, os.WriteFile(script, judged, 0o755))
	sum := sha256.Sum256(judged)
	s := shellSpec(ws, `bash ./deploy.sh; ./deploy.sh; cat deploy.sh`)
	s.Pins = []govern.Pin{{Path: script, RealPath: script, SHA256: hex.EncodeToString(sum[:]), Bytes: judged}}
	// After the decision, the file changes on disk.
	assert.NilError(t, os.WriteFile(script, []byte("echo SWAPPED\n"), 0o755))
	r := runIn(t, context.Background(), s)
	assert.Check(t, is.Equal(r.Status, govern.StatusCompleted), r.Message)
	assert.Check(t, is.Equal(r.stdout, "JUDGED\nJUDGED\necho JUDGED\n"), r.stderr)
	assert.Check(t, is.Equal(r.PinMethod, "bind"))
	b, _ := os.ReadFile(script)
	assert.Check(t, is.Equal(string(b), "echo SWAPPED\n"), "the host file is left as it is")

	// Named through a link in the workspace, which the run could re-point
	// before running it again: nothing runs.
	link := filepath.Join(ws, "run.sh")
	assert.NilError(t, os.Symlink(script, link))
	marker := filepath.Join(ws, "RAN")
	s = shellSpec(ws, `: > RAN; bash ./run.sh`)
	s.Pins = []govern.Pin{{Path: link, RealPath: script, SHA256: hex.EncodeToString(sum[:]), Bytes: judged}}
	r = runIn(t, context.Background(), s)
	assert.Check(t, is.Equal(r.Status, govern.StatusNeverRan))
	assert.Check(t, is.Equal(r.Reason, govern.ReasonPinMismatch))
	assert.Check(t, is.Contains(r.Message, "symbolic link "+link))
	_, err := os.Stat(marker)
	assert.Check(t, os.IsNotExist(err), "the command ran")
}

func TestRunPinMismatchRunsNothing(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	ws := workspace(t)
	s := shellSpec(ws, `touch ran`)
	s.Pins = []govern.Pin{{Path: ws + "/a.sh", RealPath: ws + "/a.sh", SHA256: sum0, Bytes: []byte("echo not empty")}}
	r := runIn(t, context.Background(), s)
	assert.Check(t, is.Equal(r.Status, govern.StatusNeverRan))
	assert.Check(t, is.Equal(r.Reason, govern.ReasonPinMismatch))
	_, err := os.Stat(filepath.Join(ws, "ran"))
	assert.Check(t, os.IsNotExist(err))
}

func TestRunCwdEscapingBySymlink(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	ws := workspace(t)
	assert.NilError(t, os.Symlink("/etc", filepath.Join(ws, "etc")))
	s := shellSpec(ws, `true`)
	s.Cwd = filepath.Join(ws, "etc")
	r := runIn(t, context.Background(), s)
	assert.Check(t, is.Equal(r.Status, govern.StatusNeverRan))
	assert.Check(t, is.Equal(r.Reason, govern.ReasonCwdOutsideWorkspace))
}

func TestRunFailures(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	ws := workspace(t)
	for _, tc := range []struct {
		name   string
		mutate func(*Spec)
		status govern.Status
		reason govern.Reason
		msg    string
	}{
		{"invalid spec", func(s *Spec) { s.TimeoutMS = 0 }, govern.StatusFailedToStart, govern.ReasonSpawnError, "timeout_ms"},
		{"no such shell", func(s *Spec) { s.Argv[0] = "/nonexistent/bash" }, govern.StatusFailedToStart, govern.ReasonSpawnError, "exec /nonexistent/bash"},
		{"no bubblewrap", func(s *Spec) { s.Bwrap.Path = "/nonexistent/bwrap" }, govern.StatusFailedToStart, govern.ReasonSandboxUnavailable, "/nonexistent/bwrap"},
		{"old bubblewrap", func(s *Spec) { s.Bwrap.Version = "0.4.1" }, govern.StatusFailedToStart, govern.ReasonSandboxUnavailable, "older than 0.5.0"},
		{"proxy not a socket", func(s *Spec) { s.ProxySocket = "/etc/passwd" }, govern.StatusFailedToStart, govern.ReasonSpawnError, "not a Unix socket"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := shellSpec(ws, `true`)
			tc.mutate(s)
			r := runIn(t, context.Background(), s)
			assert.Check(t, is.Equal(r.Status, tc.status), r.Message)
			assert.Check(t, is.Equal(r.Reason, tc.reason))
			assert.Check(t, is.Contains(r.Message, tc.msg))
			assert.Check(t, r.ExitCode == nil)
		})
	}
}

func TestRunTimeout(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	for _, tc := range []struct {
		name, script, signal string
	}{
		{"SIGTERM ends it", `sleep 30`, "SIGTERM"},
		{"SIGKILL after the grace", `trap '' TERM; sleep 30 & wait; sleep 30`, "SIGKILL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := shellSpec(workspace(t), tc.script)
			s.TimeoutMS, s.KillGraceMS = 300, 300
			start := time.Now()
			r := runIn(t, context.Background(), s)
			assert.Check(t, is.Equal(r.Status, govern.StatusTimedOut), r.Message)
			assert.Check(t, is.Equal(r.Signal, tc.signal))
			assert.Check(t, r.ExitCode == nil)
			assert.Check(t, time.Since(start) < 10*time.Second)
		})
	}
}

func TestRunCancelled(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	r := runIn(t, ctx, shellSpec(workspace(t), `sleep 30`))
	assert.Check(t, is.Equal(r.Status, govern.StatusKilled), r.Message)
	assert.Check(t, is.Equal(r.Signal, "SIGTERM"))
}

func TestRunSeccompModes(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	for _, tc := range []struct {
		mode SeccompMode
		want govern.SandboxMode
		out  string
	}{
		{SeccompRequired, govern.SandboxBubblewrap, "2\n"},
		{SeccompPreferred, govern.SandboxBubblewrap, "2\n"},
		{SeccompOff, govern.SandboxBubblewrapNoSeccomp, "0\n"},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			t.Parallel()
			s := shellSpec(workspace(t), `awk '/^Seccomp:/ {print $2}' /proc/self/status`)
			s.Seccomp = tc.mode
			r := runIn(t, context.Background(), s)
			assert.Check(t, is.Equal(r.Status, govern.StatusCompleted), r.Message)
			assert.Check(t, is.Equal(r.SandboxMode, tc.want))
			assert.Check(t, is.Equal(r.stdout, tc.out))
		})
	}
}

// A cgroup left by a sandboxrun that no longer exists (SIGKILLed before
// its cleanup) is removed by the next run that creates one.
func TestRunSweepsStaleCgroups(t *testing.T) {
	requireSandbox(t)
	if os.Geteuid() != 0 {
		t.Skip("cgroup v1 needs root")
	}
	p := planCgroup(false, true)
	if p.version != 1 {
		t.Skipf("no cgroup v1 here: %s", p.reason)
	}
	parent := filepath.Join(p.mounts["pids"], cgroupV1Parent)
	assert.NilError(t, os.MkdirAll(parent, 0o755))
	stale := filepath.Join(parent, fmt.Sprintf("%d-deadbeef", deadPid(t)))
	if err := os.Mkdir(stale, 0o755); !os.IsExist(err) { // left by an earlier run that failed
		assert.NilError(t, err)
	}
	s := shellSpec(workspace(t), `cat /proc/self/cgroup | grep pids`)
	s.Limits.Pids = 64
	r := runIn(t, context.Background(), s)
	assert.Check(t, is.Equal(r.Status, govern.StatusCompleted), r.Message)
	assert.Check(t, is.DeepEqual(r.LimitsEnforced.ProcessCount, Limit{true, MechanismCgroup}))
	assert.Check(t, is.Contains(r.stdout, "/"+cgroupV1Parent+"/"))
	_, err := os.Stat(stale)
	assert.Check(t, os.IsNotExist(err), "stale cgroup %s was not swept", stale)
	entries, _ := os.ReadDir(parent)
	for _, e := range entries {
		if e.IsDir() && strings.HasPrefix(e.Name(), fmt.Sprint(os.Getpid())+"-") {
			t.Errorf("this run's cgroup %s was not removed", e.Name())
		}
	}
}

// deadPid returns a pid no process has now.
func deadPid(t *testing.T) int {
	for pid := 4000000; pid > 3000000; pid-- {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); os.IsNotExist(err) {
			return pid
		}
	}
	t.Fatal("no free pid")
	return 0
}

func TestProbe(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	r := Probe(context.Background(), WithHelper(selfExe(t)))
	for _, name := range []string{CheckBubblewrap, CheckUserNamespaces, CheckSeccomp} {
		c, ok := r.Check(name)
		assert.Check(t, ok && c.OK, "%s: %+v", name, c)
	}
	_, ok := r.Check(CheckCgroups)
	assert.Check(t, ok)
	assert.Check(t, r.FullStrength)
	assert.Check(t, r.BwrapVersion != "")
}

// The egress bridge runs in this process (outside the sandbox): under the
// race detector here, the accept loop, the forwarding and the shutdown.
func TestRunEgressBridge(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	sock := filepath.Join(t.TempDir(), "egress.sock")
	ln, err := net.Listen("unix", sock)
	assert.NilError(t, err)
	defer ln.Close()
	var served atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			served.Add(1)
			go func() {
				defer c.Close()
				line, _ := bufio.NewReader(c).ReadString('\n')
				fmt.Fprintf(c, "HTTP/1.0 200 OK\r\n\r\nproxied %s", line)
			}()
		}
	}()
	ws := workspace(t)
	// Several connections at once, one left open when the command ends.
	s := shellSpec(ws, `for i in 1 2 3; do curl -s -m 5 "http://example.com/$i" & done; wait
exec 3<>/dev/tcp/127.0.0.1/${HTTP_PROXY##*:}; echo open`)
	s.ProxySocket = sock
	r := runIn(t, context.Background(), s)
	assert.Check(t, is.Equal(r.Status, govern.StatusCompleted), r.Message)
	for i := 1; i <= 3; i++ {
		assert.Check(t, is.Contains(r.stdout, fmt.Sprintf("proxied GET http://example.com/%d HTTP/1.1", i)))
	}
	assert.Check(t, served.Load() >= 3)
}

// A run whose command never connects, and one whose init dies before it
// hands the listener out, both end cleanly.
func TestRunEgressBridgeUnused(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	sock := filepath.Join(t.TempDir(), "egress.sock")
	ln, err := net.Listen("unix", sock)
	assert.NilError(t, err)
	defer ln.Close()
	s := shellSpec(workspace(t), `true`)
	s.ProxySocket = sock
	r := runIn(t, context.Background(), s)
	assert.Check(t, is.Equal(r.Status, govern.StatusCompleted), r.Message)
	s.Argv[0] = "/nonexistent"
	r = runIn(t, context.Background(), s)
	assert.Check(t, is.Equal(r.Status, govern.StatusFailedToStart), r.Message)
}

// Without mitrity-sandboxinit beside it (as here: the helper is the test
// binary), the helper's own init subcommand starts the command; a named
// init that is not there runs nothing.
func TestRunInitBinary(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	ws := workspace(t)
	s := shellSpec(ws, `grep -F ' `+InsideInit+` ' /proc/self/mountinfo | cut -d' ' -f4`)
	r := runIn(t, context.Background(), s)
	assert.Check(t, is.Equal(r.Status, govern.StatusCompleted), r.Message)
	assert.Check(t, strings.HasSuffix(strings.TrimSpace(r.stdout), "/"+filepath.Base(selfExe(t))), "the helper itself is the init: %q", r.stdout)

	dir := t.TempDir()
	out, err := os.Create(filepath.Join(dir, "stdout"))
	assert.NilError(t, err)
	defer out.Close()
	res := Run(context.Background(), shellSpec(ws, `touch ran`), Stdio{Stdout: out}, WithHelper(selfExe(t)), WithInit(filepath.Join(dir, InitName)))
	assert.Check(t, is.Equal(res.Status, govern.StatusFailedToStart))
	assert.Check(t, is.Contains(res.Message, InitName))
	_, err = os.Stat(filepath.Join(ws, "ran"))
	assert.Check(t, os.IsNotExist(err))
}

// TestBwrapCommandLineNamesNoPath: bubblewrap takes its options on a
// descriptor, so its command line, readable by every local user, names no
// masked path, workspace or mount. The run's mark on it (for the sweep of
// orphans) is not in the command's environment.
func TestBwrapCommandLineNamesNoPath(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	ws := workspace(t)
	s := shellSpec(ws, `tr '\0' ' ' </proc/1/cmdline; echo; env | grep -c "^`+runMarkEnv+`=" || true`)
	s.DenyPaths = []string{"/etc/mitrity-test-secret-path"}
	o := runIn(t, context.Background(), s)
	assert.Equal(t, o.Status, govern.StatusCompleted, o.Message)
	assert.Check(t, is.Contains(o.stdout, "--args"))
	assert.Check(t, is.Contains(o.stdout, "--setenv "+runMarkEnv+" "))
	assert.Check(t, strings.HasSuffix(o.stdout, "\n0\n"), "the mark is in the command's environment: %s", o.stdout)
	for _, leak := range []string{ws, "--ro-bind", "--tmpfs", "mitrity-test-secret-path", ".ssh"} {
		assert.Check(t, !strings.Contains(o.stdout, leak), "bwrap's command line names %q: %s", leak, o.stdout)
	}
}

// TestJoinedFallback: a v1 controller init could not enter holds by the
// rlimit init then set instead (RLIMIT_NPROC only binds a non-root uid),
// and the run says why.
func TestJoinedFallback(t *testing.T) {
	planned := LimitsEnforced{Memory: enforced(MechanismCgroup), ProcessCount: enforced(MechanismCgroup)}
	for _, tc := range []struct {
		name      string
		uid       int
		notJoined map[string]string
		want      LimitsEnforced
	}{
		{"joined", 1000, nil, planned},
		{"memory not joined", 1000, map[string]string{"memory": "EACCES"},
			LimitsEnforced{Memory: enforced(MechanismRlimit), ProcessCount: enforced(MechanismCgroup)}},
		{"neither, as a user", 1000, map[string]string{"memory": "EACCES", "pids": "EACCES"},
			LimitsEnforced{Memory: enforced(MechanismRlimit), ProcessCount: enforced(MechanismRlimit)}},
		{"pids, as uid 0", 0, map[string]string{"pids": "EACCES"},
			LimitsEnforced{Memory: enforced(MechanismCgroup), ProcessCount: Limit{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &execution{spec: &Spec{Limits: Limits{MemoryBytes: 64 << 20, Pids: 32}}, uid: tc.uid}
			assert.Check(t, is.DeepEqual(e.joined(planned, tc.notJoined), tc.want))
			assert.Check(t, is.Len(e.notes, len(tc.notJoined)))
			for c := range tc.notJoined {
				assert.Check(t, is.Contains(strings.Join(e.notes, "; "), "joining the "+c+" cgroup"))
			}
		})
	}
}
