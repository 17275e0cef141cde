package sandbox

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/opencontainers/cgroups"
	"golang.org/x/sys/unix"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern"
)

// helperCgroup is the test binary's mode that runs one cgroup operation
// from the cgroup it was started in (os.Args[2] names it), prints what it
// saw as one JSON line, then waits for stdin to close: the cgroup tests
// look at the process from outside while it is still there.
const helperCgroup = "cgroup-op"

// cgroupOut is what the helper prints.
type cgroupOut struct {
	Delegation CgroupDelegation `json:"delegation"`
	Leaf       string           `json:"leaf"`
	Moved      bool             `json:"moved"`
	Err        string           `json:"err"`
	Dir        string           `json:"dir"`
	Reason     string           `json:"reason"`
	Cgroup     string           `json:"cgroup"` // its own cgroup v2 after the operation
	// The full test's runs: a counted fork, then a fork bomb.
	Count    *Result  `json:"count,omitempty"`
	CountOut string   `json:"count_out"`
	Bomb     *Result  `json:"bomb,omitempty"`
	BombOut  string   `json:"bomb_out"`
	Siblings []string `json:"siblings"` // run cgroups seen beside the leaf during the runs
	After    []string `json:"after"`    // the delegated cgroup's children after them
}

// The helper's mode is picked before TestMain, which lists the others:
// this one exists on Linux only.
func init() {
	if len(os.Args) > 2 && os.Args[1] == helperCgroup {
		cgroupChild(os.Args[2:])
	}
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func cgroupChild(args []string) {
	var out cgroupOut
	own, err := ownCgroupV2Dir()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	switch args[0] {
	case "delegate": // what serving does
		out.Delegation = DelegateCgroup()
	case "move": // move [CONTROLLER,...]
		var err error
		out.Leaf, out.Moved, err = moveToLeaf(own, splitList(args[1]))
		if err != nil {
			out.Err = err.Error()
		}
	case "plan": // plan [CONTROLLER,...]
		out.Dir, out.Reason = v2Dir(own, splitList(args[1]))
	case "full": // full SPEC-JSON
		out.Delegation = DelegateCgroup()
		fullRuns(&out, args[1])
	default:
		os.Exit(2)
	}
	out.Cgroup, _ = ownCgroupV2Dir()
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	bufio.NewReader(os.Stdin).ReadString('\n') // until the test closes stdin
	os.Exit(0)
}

// fullRuns runs spec twice from the leaf: a counted fork (how many
// children the pids limit lets it start), then a fork bomb; meanwhile it
// notes the run cgroups made beside the leaf.
func fullRuns(out *cgroupOut, specJSON string) {
	var s Spec
	if err := json.Unmarshal([]byte(specJSON), &s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	dir := out.Delegation.Dir
	stop := make(chan struct{})
	var wg sync.WaitGroup
	seen := map[string]bool{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if e.IsDir() && e.Name() != gatewayLeaf {
					seen[e.Name()] = true
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	self, _ := os.Executable()
	run := func(script string) (*Result, string) {
		f, _ := os.CreateTemp("", "cgroup-run-")
		defer os.Remove(f.Name())
		defer f.Close()
		s := s
		s.Argv = []string{"/bin/bash", "--noprofile", "--norc", "-c", script}
		r := Run(context.Background(), &s, Stdio{Stdout: f, Stderr: f}, WithHelper(self))
		b, _ := os.ReadFile(f.Name())
		return &r, string(b)
	}
	out.Count, out.CountOut = run(`perl -e 'my $n = 0; for (1..200) { my $p = fork; last unless defined $p; if ($p == 0) { sleep 4; exit } $n++ } print "forked=$n\n"'`)
	out.Bomb, out.BombOut = run(`bomb() { bomb | bomb & }; bomb; exec sleep 2`)
	close(stop)
	wg.Wait()
	for n := range seen {
		out.Siblings = append(out.Siblings, n)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			out.After = append(out.After, e.Name())
		}
	}
}

// cgroupV2Mount returns the cgroup2 mount the tests make their cgroups
// under, skipping when the test cannot.
func cgroupV2Mount(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the test makes cgroups under the cgroup2 mount")
	}
	switch {
	case cgroups.IsCgroup2UnifiedMode():
		return "/sys/fs/cgroup"
	case cgroups.IsCgroup2HybridMode():
		return "/sys/fs/cgroup/unified"
	}
	t.Skip("no cgroup2 mount")
	return ""
}

// freshCgroup makes a new, empty cgroup under the mount, removed (with
// whatever the test made in it) at the end.
func freshCgroup(t *testing.T, mount string) string {
	t.Helper()
	var b [4]byte
	rand.Read(b[:])
	dir := filepath.Join(mount, "mitrity-test-"+hex.EncodeToString(b[:]))
	assert.NilError(t, os.Mkdir(dir, 0o755))
	t.Cleanup(func() {
		if err := cgroups.RemovePath(dir); err != nil {
			t.Errorf("removing the test's cgroup: %v", err)
		}
	})
	return dir
}

// freshLeaf is a fresh cgroup with an empty gateway leaf in it.
func freshLeaf(t *testing.T, mount string) (dir, leaf string) {
	t.Helper()
	dir = freshCgroup(t, mount)
	leaf = filepath.Join(dir, gatewayLeaf)
	assert.NilError(t, os.Mkdir(leaf, 0o755))
	return dir, leaf
}

// startIn starts a process in the cgroup dir (CLONE_INTO_CGROUP: it runs
// nothing before it is there), killed at the end.
func startIn(t *testing.T, dir string, cmd *exec.Cmd) {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	assert.NilError(t, err)
	defer unix.Close(fd)
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	assert.NilError(t, cmd.Start())
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
}

// helperIn runs the helper's op in the cgroup dir and returns what it
// printed and its pid; it is still there (in whatever cgroup the op left
// it) until the test ends.
func helperIn(t *testing.T, dir string, args ...string) (cgroupOut, int) {
	t.Helper()
	cmd := exec.Command(selfExe(t), append([]string{helperCgroup}, args...)...)
	stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	assert.NilError(t, err)
	defer stderr.Close()
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	assert.NilError(t, err)
	stdout, err := cmd.StdoutPipe()
	assert.NilError(t, err)
	startIn(t, dir, cmd)
	t.Cleanup(func() { stdin.Close() })
	// A helper that hangs fails the test, not the whole binary's timeout.
	timer := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
	defer timer.Stop()
	line, err := bufio.NewReader(stdout).ReadBytes('\n')
	var out cgroupOut
	if err == nil {
		err = json.Unmarshal(line, &out)
	}
	if err != nil {
		b, _ := os.ReadFile(stderr.Name())
		t.Fatalf("the helper printed nothing usable (%v): %s", err, b)
	}
	return out, cmd.Process.Pid
}

// cgroupOf is pid's cgroup v2 directory, read from outside.
func cgroupOf(t *testing.T, mount string, pid int) string {
	t.Helper()
	m, err := cgroups.ParseCgroupFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	assert.NilError(t, err)
	return filepath.Join(mount, m[""])
}

func procsOf(t *testing.T, dir string) []int {
	t.Helper()
	pids, err := cgroups.GetPids(dir)
	assert.NilError(t, err)
	return pids
}

func controllersOf(t *testing.T, dir string) []string {
	t.Helper()
	s, err := cgroups.ReadFile(dir, "cgroup.controllers")
	assert.NilError(t, err)
	return strings.Fields(s)
}

func assertGone(t *testing.T, path string) {
	t.Helper()
	_, err := os.Stat(path)
	assert.Check(t, os.IsNotExist(err), "%s is still there", path)
}

// Alone in a cgroup without the memory and pids controllers (every cgroup
// under this host's cgroup2 mount: they are bound to v1), serving
// delegates nothing and leaves the process where it was.
func TestDelegateCgroupNoControllers(t *testing.T) {
	mount := cgroupV2Mount(t)
	t.Parallel()
	dir := freshCgroup(t, mount)
	if c := controllersOf(t, dir); contains(c, "memory") || contains(c, "pids") {
		t.Skipf("%s has %v: TestDelegateCgroupFull covers delegation with controllers", dir, c)
	}
	out, pid := helperIn(t, dir, "delegate")
	d := out.Delegation
	assert.Check(t, !d.Delegated && !d.Moved, "%+v", d)
	assert.Check(t, is.Contains(d.Detail, dir+" has no memory and no pids controller to delegate"))
	assert.Check(t, is.Equal(out.Cgroup, dir))
	assert.Check(t, is.Equal(cgroupOf(t, mount, pid), dir))
	assertGone(t, filepath.Join(dir, gatewayLeaf))
}

// Another process in the cgroup: nothing is moved, and the reason says
// whose cgroup it is.
func TestDelegateCgroupOtherProcess(t *testing.T) {
	mount := cgroupV2Mount(t)
	t.Parallel()
	dir := freshCgroup(t, mount)
	sleep := exec.Command("sleep", "60")
	startIn(t, dir, sleep)
	out, pid := helperIn(t, dir, "delegate")
	d := out.Delegation
	assert.Check(t, !d.Delegated && !d.Moved, "%+v", d)
	assert.Check(t, is.Contains(d.Detail, fmt.Sprintf("%s holds 1 other process(es) (pids [%d])", dir, sleep.Process.Pid)))
	assert.Check(t, is.Contains(d.Detail, "no other process is ever moved"))
	assert.Check(t, is.Equal(cgroupOf(t, mount, pid), dir))
	assert.Check(t, is.Equal(cgroupOf(t, mount, sleep.Process.Pid), dir))
	assertGone(t, filepath.Join(dir, gatewayLeaf))
}

// unavailable is a controller dir's cgroup.controllers does not list.
func unavailable(t *testing.T, dir string) string {
	t.Helper()
	have := controllersOf(t, dir)
	for _, c := range []string{"pids", "memory", "cpu", "io", "hugetlb", "rdma", "misc"} {
		if !contains(have, c) {
			return c
		}
	}
	t.Skipf("%s has every controller", dir)
	return ""
}

// The move and its undoing, on the real cgroup2 mount: with nothing to
// enable the process ends in the leaf; when enabling fails it is moved
// back and the leaf it made is removed, while a leaf it did not make stays.
func TestDelegateCgroupMoveAndRestore(t *testing.T) {
	mount := cgroupV2Mount(t)
	t.Parallel()
	t.Run("moved", func(t *testing.T) {
		t.Parallel()
		dir := freshCgroup(t, mount)
		leaf := filepath.Join(dir, gatewayLeaf)
		out, pid := helperIn(t, dir, "move", "")
		assert.Check(t, out.Moved && out.Err == "", "%+v", out)
		assert.Check(t, is.Equal(out.Leaf, leaf))
		assert.Check(t, is.Equal(out.Cgroup, leaf))
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		assert.NilError(t, err)
		assert.Check(t, is.Contains(string(b), "0::/"+strings.TrimPrefix(leaf, mount+"/")+"\n"))
		assert.Check(t, is.DeepEqual(procsOf(t, leaf), []int{pid}))
		assert.Check(t, is.Len(procsOf(t, dir), 0))
	})
	t.Run("restored", func(t *testing.T) {
		t.Parallel()
		dir := freshCgroup(t, mount)
		c := unavailable(t, dir)
		out, pid := helperIn(t, dir, "move", c)
		assert.Check(t, !out.Moved && out.Leaf == "", "%+v", out)
		assert.Check(t, is.Contains(out.Err, "enabling "+c+" in "+dir+"/cgroup.subtree_control"))
		assert.Check(t, is.Equal(out.Cgroup, dir))
		assert.Check(t, is.Equal(cgroupOf(t, mount, pid), dir))
		assert.Check(t, is.DeepEqual(procsOf(t, dir), []int{pid}))
		assertGone(t, filepath.Join(dir, gatewayLeaf))
	})
	t.Run("restored, a leaf made before stays", func(t *testing.T) {
		t.Parallel()
		dir, leaf := freshLeaf(t, mount)
		out, pid := helperIn(t, dir, "move", unavailable(t, dir))
		assert.Check(t, !out.Moved && out.Err != "", "%+v", out)
		assert.Check(t, is.Equal(cgroupOf(t, mount, pid), dir))
		_, err := os.Stat(leaf)
		assert.Check(t, err, "a leaf this process did not make is not removed")
		assert.Check(t, is.Len(procsOf(t, leaf), 0))
	})
}

// From the gateway's leaf the run cgroups go to its parent, and only when
// the parent enables the controllers; a cgroup of any other name never
// makes its parent eligible.
func TestPlanCgroupFromLeaf(t *testing.T) {
	mount := cgroupV2Mount(t)
	t.Parallel()
	t.Run("leaf: parent, nothing wanted", func(t *testing.T) {
		t.Parallel()
		dir, leaf := freshLeaf(t, mount)
		out, _ := helperIn(t, leaf, "plan", "")
		assert.Check(t, is.Equal(out.Cgroup, leaf))
		assert.Check(t, is.Equal(out.Reason, ""))
		assert.Check(t, is.Equal(out.Dir, dir), "the leaf's parent")
	})
	t.Run("leaf: parent does not enable pids", func(t *testing.T) {
		t.Parallel()
		dir, leaf := freshLeaf(t, mount)
		out, _ := helperIn(t, leaf, "plan", "pids")
		assert.Check(t, is.Equal(out.Dir, ""))
		assert.Check(t, is.Contains(out.Reason, "in the gateway's leaf "+leaf+", and its parent: cgroup v2 "+dir+" does not delegate the pids controller"))
	})
	t.Run("leaf: parent enables pids", func(t *testing.T) {
		t.Parallel()
		dir, leaf := freshLeaf(t, mount)
		if !contains(controllersOf(t, dir), "pids") {
			t.Skipf("no pids controller in %s/cgroup.controllers (this host binds it to cgroup v1)", dir)
		}
		assert.NilError(t, cgroups.WriteFile(dir, "cgroup.subtree_control", "+pids"))
		out, _ := helperIn(t, leaf, "plan", "pids")
		assert.Check(t, is.Equal(out.Reason, ""))
		assert.Check(t, is.Equal(out.Dir, dir))
	})
	t.Run("other name: own cgroup only", func(t *testing.T) {
		t.Parallel()
		dir := freshCgroup(t, mount)
		other := filepath.Join(dir, "mitrity-gateway2")
		assert.NilError(t, os.Mkdir(other, 0o755))
		out, _ := helperIn(t, other, "plan", "")
		assert.Check(t, is.Equal(out.Dir, other))
		out, _ = helperIn(t, other, "plan", "pids")
		assert.Check(t, is.Equal(out.Dir, ""))
		assert.Check(t, is.Contains(out.Reason, "cgroup v2 "+other+" does not delegate the pids controller"))
		assert.Check(t, !strings.Contains(out.Reason, "parent"), out.Reason)
	})
}

// The leaf's name never parses as a dead run's cgroup.
func TestSweepStaleKeepsGatewayLeaf(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	leaf := filepath.Join(dir, gatewayLeaf)
	stale := filepath.Join(dir, cgroupV2Prefix+strconv.Itoa(deadPid(t))+"-deadbeef")
	assert.NilError(t, os.Mkdir(leaf, 0o755))
	assert.NilError(t, os.Mkdir(stale, 0o755))
	sweepStale(dir, cgroupV2Prefix)
	_, err := os.Stat(leaf)
	assert.Check(t, err, "the gateway's leaf was swept")
	assertGone(t, stale) // the negative control: the sweep ran
}

// Delegation end to end, where the cgroup2 mount has the pids controller
// (not on this build host: run by hand where it does): serving enables
// pids, a run with a pids limit lands in a cgroup beside the leaf, the
// limit stops a fork bomb, and the run cgroup is removed afterwards.
func TestDelegateCgroupFull(t *testing.T) {
	mount := cgroupV2Mount(t)
	if !contains(controllersOf(t, mount), "pids") {
		t.Skipf("pids is not in %s/cgroup.controllers: no pids controller on the cgroup2 mount here (it is bound to cgroup v1)", mount)
	}
	requireSandbox(t)
	if sub, err := cgroups.ReadFile(mount, "cgroup.subtree_control"); err == nil && !contains(strings.Fields(sub), "pids") {
		// The mount's root may enable controllers with processes in it.
		assert.NilError(t, cgroups.WriteFile(mount, "cgroup.subtree_control", "+pids"))
		t.Cleanup(func() { cgroups.WriteFile(mount, "cgroup.subtree_control", "-pids") })
	}
	dir := freshCgroup(t, mount)
	const limit = 32
	s := shellSpec(workspace(t), "")
	s.Limits.Pids = limit
	s.TimeoutMS = 10000
	spec, err := json.Marshal(s)
	assert.NilError(t, err)
	out, pid := helperIn(t, dir, "full", string(spec))

	d := out.Delegation
	assert.Assert(t, out.Count != nil && out.Bomb != nil)
	assert.Check(t, d.Delegated && d.Moved, "%+v", d)
	assert.Check(t, is.Equal(d.Dir, dir))
	assert.Check(t, is.Equal(d.Leaf, filepath.Join(dir, gatewayLeaf)))
	assert.Check(t, is.Contains(d.Controllers, "pids"))
	assert.Check(t, is.Equal(cgroupOf(t, mount, pid), filepath.Join(dir, gatewayLeaf)))
	sub, err := cgroups.ReadFile(dir, "cgroup.subtree_control")
	assert.NilError(t, err)
	assert.Check(t, is.Contains(strings.Fields(sub), "pids"))

	assert.Check(t, is.DeepEqual(out.Count.LimitsEnforced.ProcessCount, Limit{true, MechanismCgroup}), out.Count.Message)
	var n int
	if _, err := fmt.Sscanf(out.CountOut, "forked=%d", &n); err != nil || n <= 0 || n >= limit {
		t.Errorf("forked %d with pids %d: %q (%s)", n, limit, out.CountOut, out.Count.Message)
	}
	assert.Check(t, out.Bomb.Status == govern.StatusCompleted || out.Bomb.Status == govern.StatusTimedOut, "fork bomb: %+v", out.Bomb)
	assert.Check(t, out.Bomb.DurationMS < 20000, "the fork bomb's run took %d ms", out.Bomb.DurationMS)
	assert.Check(t, len(out.Siblings) > 0, "no run cgroup seen beside the leaf")
	for _, name := range out.Siblings {
		assert.Check(t, strings.HasPrefix(name, fmt.Sprintf("%s%d-", cgroupV2Prefix, pid)), "%s beside the leaf", name)
	}
	assert.Check(t, is.DeepEqual(out.After, []string{gatewayLeaf}), "the run cgroups are removed")
}
