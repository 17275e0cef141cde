package sandbox

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/cgroups/fs"
	"github.com/opencontainers/cgroups/fs2"
	"golang.org/x/sys/unix"
)

// cgroupV1Parent is the directory, under each v1 controller's mount, that
// holds one child per running execution.
const cgroupV1Parent = "mitrity"

// cgroupV2Prefix names the per-execution children of the caller's
// delegated cgroup v2 (its own, or the one its gateway's leaf is in).
const cgroupV2Prefix = "mitrity-"

// execCgroup is one execution's cgroup: created before bubblewrap starts,
// entered by the sandbox's init (v1: initproc.Join) or given the sandbox's
// first process while bubblewrap waits on its block descriptor (v2: add),
// removed after the run. A name starts with the pid of the
// sandboxrun that made it, so a later run removes what a SIGKILLed one left.
type execCgroup struct {
	mgr     cgroups.Manager
	version int
	memory  bool
	pids    bool
	paths   map[string]string // v1: controller -> dir
	dir     string            // v2
}

// cgroupPlan is what newCgroup can do on this host, or why not.
type cgroupPlan struct {
	version int
	v2dir   string // where run cgroups are made: the caller's own cgroup v2, or its leaf's parent
	mounts  map[string]string
	reason  string // empty when usable
}

// planCgroup finds where a per-execution cgroup for memory and/or pids can
// be created: a delegated cgroup v2 subtree (the caller's own cgroup, or
// the parent of the gateway's leaf when the caller is in it, see
// DelegateCgroup; its subtree_control already enabling the controllers,
// writable), else the v1 hierarchies when root. It creates nothing.
func planCgroup(memory, pids bool) cgroupPlan {
	var want []string
	if memory {
		want = append(want, "memory")
	}
	if pids {
		want = append(want, "pids")
	}
	v2reason := ""
	if own, err := ownCgroupV2Dir(); err == nil {
		dir, r := v2Dir(own, want)
		if r == "" {
			return cgroupPlan{version: 2, v2dir: dir}
		}
		v2reason = r
	} else {
		v2reason = err.Error()
	}
	if cgroups.IsCgroup2UnifiedMode() {
		return cgroupPlan{reason: v2reason}
	}
	if os.Geteuid() != 0 {
		return cgroupPlan{reason: v2reason + "; cgroup v1 needs root"}
	}
	mounts := map[string]string{}
	for _, c := range want {
		m, err := cgroups.FindCgroupMountpoint("", c)
		if err != nil {
			return cgroupPlan{reason: fmt.Sprintf("%s; cgroup v1 %s controller: %v", v2reason, c, err)}
		}
		if err := unix.Access(m, unix.W_OK); err != nil {
			return cgroupPlan{reason: fmt.Sprintf("%s; cgroup v1 %s at %s is not writable: %v", v2reason, c, m, err)}
		}
		mounts[c] = m
	}
	return cgroupPlan{version: 1, mounts: mounts}
}

// ownCgroupV2Dir is the caller's cgroup v2 directory (unified or hybrid).
func ownCgroupV2Dir() (string, error) {
	mount := "/sys/fs/cgroup"
	if !cgroups.IsCgroup2UnifiedMode() {
		if !cgroups.IsCgroup2HybridMode() {
			return "", errors.New("no cgroup v2 hierarchy is mounted")
		}
		mount = "/sys/fs/cgroup/unified"
	}
	m, err := cgroups.ParseCgroupFile("/proc/self/cgroup")
	if err != nil {
		return "", fmt.Errorf("reading /proc/self/cgroup: %w", err)
	}
	own, ok := m[""]
	if !ok {
		return "", errors.New("/proc/self/cgroup has no cgroup v2 entry")
	}
	return filepath.Join(mount, own), nil
}

// v2Delegated returns "" when dir delegates the wanted controllers to
// children the caller may create, else why not.
func v2Delegated(dir string, want []string) string {
	sub, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return fmt.Sprintf("cgroup v2 %s: %v", dir, err)
	}
	enabled := strings.Fields(string(sub))
	for _, c := range want {
		if !contains(enabled, c) {
			return fmt.Sprintf("cgroup v2 %s does not delegate the %s controller to its children (cgroup.subtree_control: %q)", dir, c, strings.TrimSpace(string(sub)))
		}
	}
	if err := unix.Access(dir, unix.W_OK); err != nil {
		return fmt.Sprintf("cgroup v2 %s is not writable by uid %d", dir, os.Geteuid())
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// newCgroup creates the execution's cgroup with its limits set. It first
// removes the cgroups of sandboxruns that no longer exist.
func newCgroup(p cgroupPlan, l Limits) (*execCgroup, error) {
	var rb [4]byte
	if _, err := rand.Read(rb[:]); err != nil {
		return nil, err
	}
	name := strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(rb[:])
	res := &cgroups.Resources{Memory: l.MemoryBytes}
	if l.Pids > 0 {
		res.PidsLimit = &l.Pids
	}
	cg := &execCgroup{version: p.version, memory: l.MemoryBytes > 0, pids: l.Pids > 0}
	switch p.version {
	case 1:
		cg.paths = map[string]string{}
		for c, m := range p.mounts {
			parent := filepath.Join(m, cgroupV1Parent)
			sweepStale(parent, "")
			cg.paths[c] = filepath.Join(parent, name)
		}
		if m, ok := p.mounts["memory"]; ok && cgroups.PathExists(filepath.Join(m, "memory.memsw.limit_in_bytes")) {
			res.MemorySwap = l.MemoryBytes // memory plus swap: no swap
		}
		mgr, err := fs.NewManager(&cgroups.Cgroup{Resources: res}, cg.paths)
		if err != nil {
			return nil, err
		}
		cg.mgr = mgr
		if err := mgr.Apply(-1); err != nil {
			cg.destroy()
			return nil, fmt.Errorf("creating cgroup: %w", err)
		}
	case 2:
		sweepStale(p.v2dir, cgroupV2Prefix)
		cg.dir = filepath.Join(p.v2dir, cgroupV2Prefix+name)
		if err := os.Mkdir(cg.dir, 0o755); err != nil {
			return nil, fmt.Errorf("creating cgroup: %w", err)
		}
		if cg.memory {
			res.MemorySwap = l.MemoryBytes
		}
		mgr, err := fs2.NewManager(&cgroups.Cgroup{Resources: res}, cg.dir)
		if err != nil {
			cg.destroy()
			return nil, err
		}
		cg.mgr = mgr
	default:
		return nil, errors.New("no usable cgroup")
	}
	if err := cg.mgr.Set(res); err != nil {
		cg.destroy()
		return nil, fmt.Errorf("setting cgroup limits: %w", err)
	}
	return cg, nil
}

// sweepStale removes children of parent named prefix<pid>-<hex> whose
// sandboxrun is gone. A child still holding processes cannot be removed and
// stays.
func sweepStale(parent, prefix string) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		n, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidStr, _, ok := strings.Cut(n, "-")
		pid, err := strconv.Atoi(pidStr)
		if !ok || err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if !alive(pid) {
			removeStale(filepath.Join(parent, e.Name()))
		}
	}
}

// removeStale removes a dead sandboxrun's cgroup. Right after a SIGKILL
// its tasks may still be exiting (EBUSY), so it retries briefly; a cgroup
// still busy after that is left for the next run.
func removeStale(dir string) {
	delay := 200 * time.Microsecond
	for tries := 0; tries < 10; tries++ {
		if err := unix.Rmdir(dir); !errors.Is(err, unix.EBUSY) {
			return
		}
		time.Sleep(delay)
		delay *= 2
	}
}

// alive reports whether pid is a process that has not exited: a zombie
// (exited, not yet reaped) is not alive.
func alive(pid int) bool {
	if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !os.IsNotExist(err)
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

// add moves pid (the sandbox's first process, blocked) into a v2 cgroup.
// It waits for an RCU grace period (the kernel's global threadgroup lock),
// which v1 avoids by having init enter by itself.
func (cg *execCgroup) add(pid int) error {
	if cg.version == 1 {
		return cg.mgr.Apply(pid)
	}
	return cg.mgr.AddPid("", pid)
}

// oomKills returns how many processes the memory limit killed.
func (cg *execCgroup) oomKills() int {
	if cg == nil || !cg.memory {
		return 0
	}
	file := filepath.Join(cg.dir, "memory.events")
	if cg.version == 1 {
		file = filepath.Join(cg.paths["memory"], "memory.oom_control")
	}
	f, err := os.Open(file)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), " "); ok && k == "oom_kill" {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// destroy removes the cgroup (retrying while the last processes exit).
func (cg *execCgroup) destroy() error {
	if cg == nil {
		return nil
	}
	if cg.version == 2 {
		return cgroups.RemovePath(cg.dir)
	}
	paths := map[string]string{}
	for k, v := range cg.paths {
		paths[k] = v
	}
	return cgroups.RemovePaths(paths)
}
