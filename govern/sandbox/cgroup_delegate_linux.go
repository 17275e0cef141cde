package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/opencontainers/cgroups"
)

// gatewayLeaf is the child of its delegated cgroup v2 that a serving
// gateway moves itself into. cgroup v2 enables controllers for children
// only in a cgroup without processes of its own ("no internal processes"),
// and under systemd's Delegate=yes the gateway starts in the delegated
// cgroup itself; once it is in the leaf, the delegated cgroup enables
// memory and pids and the run cgroups are made beside the leaf. The name
// has no "-<hex>" after the run cgroups' prefix, so sweepStale never takes
// it for a dead run's.
const gatewayLeaf = cgroupV2Prefix + "gateway"

// runControllers are the controllers the run cgroups use.
var runControllers = []string{"memory", "pids"}

// DelegateCgroup readies the caller's delegated cgroup v2 for run cgroups
// with memory and pids limits: when its cgroup lists them in
// cgroup.controllers but does not enable them for children, and no other
// process is in it, it moves itself into the leaf mitrity-gateway and
// enables them (those available) in the cgroup it left. A serving gateway
// calls it once, before it starts any process (a child left behind would
// make the enabling fail). Anything that fails is undone (the process moved
// back, the leaf removed), and runs then fall back as before (cgroup v1 as
// root, else rlimits); the result says what happened and never stops the
// caller.
func DelegateCgroup() CgroupDelegation {
	own, err := ownCgroupV2Dir()
	if err != nil {
		return CgroupDelegation{Detail: "no cgroup v2 to delegate: " + err.Error()}
	}
	return delegateFrom(own, runControllers)
}

// delegateFrom is DelegateCgroup from the cgroup own, for the controllers
// in want.
func delegateFrom(own string, want []string) CgroupDelegation {
	d, enable, move := delegationPlan(own, want)
	if !move {
		return d
	}
	leaf, moved, err := moveToLeaf(own, enable)
	if err != nil {
		d = CgroupDelegation{Dir: own, Detail: "not delegated (runs fall back to cgroup v1 or rlimits): " + err.Error()}
		if moved {
			d.Moved, d.Leaf = true, leaf
		}
		return d
	}
	d.Delegated, d.Moved, d.Leaf = true, true, leaf
	d.Detail = fmt.Sprintf("moved into %s and enabled %s in %s: run cgroups are made beside the leaf", leaf, strings.Join(enable, ", "), own)
	return d
}

// delegationPlan says, without changing anything, what delegateFrom would
// do: nothing (d says why, or that own is delegated already), or move
// (into own's leaf, then enable the controllers in enable).
func delegationPlan(own string, want []string) (d CgroupDelegation, enable []string, move bool) {
	d.Dir = own
	dir, reason := v2Dir(own, want)
	if reason == "" {
		d.Dir, d.Delegated, d.Controllers = dir, true, want
		d.Detail = fmt.Sprintf("cgroup v2 %s already delegates %s to run cgroups", dir, strings.Join(want, ", "))
		return d, nil, false
	}
	if filepath.Base(own) == gatewayLeaf {
		d.Detail = "not delegating from inside the gateway's leaf: " + reason
		return d, nil, false
	}
	sub, err := cgroups.ReadFile(own, "cgroup.subtree_control")
	if err != nil {
		d.Detail = fmt.Sprintf("not delegating: cgroup v2 %s: %v", own, err)
		return d, nil, false
	}
	if enabled := strings.Fields(sub); !missingAny(enabled, want) {
		d.Detail = "not delegating: " + reason // enabled already; moving would not help
		return d, nil, false
	}
	pids, err := cgroups.GetPids(own)
	if err != nil {
		d.Detail = fmt.Sprintf("not delegating: cgroup v2 %s: %v", own, err)
		return d, nil, false
	}
	var others []int
	for _, p := range pids {
		if p != os.Getpid() { // 0: a process outside this pid namespace
			others = append(others, p)
		}
	}
	if len(others) > 0 {
		shown := others
		if len(shown) > 5 {
			shown = shown[:5]
		}
		d.Detail = fmt.Sprintf("not delegating: cgroup v2 %s holds %d other process(es) (pids %v): only a cgroup with the gateway alone in it is delegated, since no other process is ever moved", own, len(others), shown)
		return d, nil, false
	}
	ctl, err := cgroups.ReadFile(own, "cgroup.controllers")
	if err != nil {
		d.Detail = fmt.Sprintf("not delegating: cgroup v2 %s: %v", own, err)
		return d, nil, false
	}
	available := strings.Fields(ctl)
	var missing []string
	for _, c := range want {
		if contains(available, c) {
			enable = append(enable, c)
		} else {
			missing = append(missing, c)
		}
	}
	if len(enable) == 0 {
		d.Detail = fmt.Sprintf("not delegating: cgroup v2 %s has no %s controller to delegate (cgroup.controllers: %q)", own, strings.Join(missing, " and no "), strings.TrimSpace(ctl))
		return d, nil, false
	}
	d.Controllers = enable
	d.Detail = fmt.Sprintf("would move into %s and enable %s in %s", filepath.Join(own, gatewayLeaf), strings.Join(enable, ", "), own)
	if len(missing) > 0 {
		d.Detail += fmt.Sprintf(" (no %s in its cgroup.controllers)", strings.Join(missing, ", "))
	}
	return d, enable, true
}

// missingAny reports whether some of want is not in have.
func missingAny(have, want []string) bool {
	for _, c := range want {
		if !contains(have, c) {
			return true
		}
	}
	return false
}

// moveToLeaf moves this process (all its threads) from own into own's
// gateway leaf, then enables the controllers in enable for own's
// children. On a failure it moves the process back and removes the leaf
// it made; moved says it is still in the leaf (moving back failed).
func moveToLeaf(own string, enable []string) (leaf string, moved bool, err error) {
	leaf = filepath.Join(own, gatewayLeaf)
	made := true
	if err := os.Mkdir(leaf, 0o755); errors.Is(err, fs.ErrExist) {
		made = false // a gateway before this one made it: used as it is
	} else if err != nil {
		return "", false, fmt.Errorf("creating %s: %w", leaf, err)
	}
	undo := func() {
		if made {
			cgroups.RemovePath(leaf)
		}
	}
	if err := cgroups.WriteCgroupProc(leaf, os.Getpid()); err != nil {
		undo()
		return "", false, fmt.Errorf("moving into %s: %w", leaf, err)
	}
	if len(enable) == 0 {
		return leaf, true, nil
	}
	if err := cgroups.WriteFile(own, "cgroup.subtree_control", "+"+strings.Join(enable, " +")); err != nil {
		err = fmt.Errorf("enabling %s in %s/cgroup.subtree_control: %w", strings.Join(enable, ", "), own, err)
		if back := cgroups.WriteCgroupProc(own, os.Getpid()); back != nil {
			return leaf, true, fmt.Errorf("%w; moving back to %s: %v (the gateway stays in %s)", err, own, back, leaf)
		}
		undo()
		return "", false, err
	}
	return leaf, true, nil
}

// v2Dir is the cgroup v2 directory under which run cgroups are made for
// the controllers in want, or why there is none: the delegated parent
// when the caller is in the gateway's leaf (the run cgroups are the leaf's
// siblings; only that exact name makes a parent eligible), else the
// caller's own cgroup.
func v2Dir(own string, want []string) (dir, reason string) {
	if filepath.Base(own) == gatewayLeaf {
		parent := filepath.Dir(own)
		if r := v2Delegated(parent, want); r != "" {
			return "", "in the gateway's leaf " + own + ", and its parent: " + r
		}
		return parent, ""
	}
	if r := v2Delegated(own, want); r != "" {
		return "", r
	}
	return own, ""
}
