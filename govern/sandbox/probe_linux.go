package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Probe checks what this host can enforce: bubblewrap and its version,
// unprivileged user namespaces (by running bubblewrap), the seccomp stage
// (installed in a child process, then exercised) and cgroup delegation. It
// never runs an agent's command.
func Probe(ctx context.Context, opts ...Option) ProbeReport {
	o := collect(opts)
	var r ProbeReport
	// Before any child: one still exiting (bubblewrap's, reparented) would
	// count as another process in this cgroup.
	cg := cgroupCheck()
	bw := Check{Name: CheckBubblewrap}
	path, err := findBwrap("")
	if err == nil {
		r.BwrapPath = path
		var v Version
		v, err = bwrapVersion(path)
		if err == nil {
			r.BwrapVersion = v.String()
			if !v.AtLeast(MinVersion) {
				err = fmt.Errorf("bubblewrap %s is older than %s", v, MinVersion)
			} else {
				bw.OK, bw.Detail = true, fmt.Sprintf("%s %s", path, v)
				if !FeaturesOf(v).TmpfsSize {
					bw.Detail += " (before 0.8.0: no tmpfs size, no --disable-userns)"
				}
			}
		}
	}
	if err != nil {
		bw.Reason, bw.Remedy = err.Error(), "install bubblewrap >= 0.5.0 (Debian/Ubuntu: apt-get install bubblewrap)"
	}
	r.Checks = append(r.Checks, bw)

	us := Check{Name: CheckUserNamespaces}
	if bw.OK {
		if err := tryUserns(ctx, path, false); err != nil {
			us.Reason = err.Error()
			us.Remedy = usernsRemedy()
		} else {
			us.OK, us.Detail = true, "bwrap --unshare-user --unshare-pid --unshare-net ran"
		}
	} else {
		us.Reason = "not checked: no usable bubblewrap"
	}
	r.Checks = append(r.Checks, us)

	sc := Check{Name: CheckSeccomp}
	detail, err := trySeccomp(ctx, o.helper)
	if err == nil && us.OK {
		err = tryUserns(ctx, path, true)
	}
	if err != nil {
		sc.Reason = err.Error()
		sc.Remedy = "a kernel with CONFIG_SECCOMP_FILTER, and no outer seccomp profile denying seccomp(2) (container runtimes: allow it, or set exec.sandbox.seccomp: preferred to run degraded)"
	} else {
		sc.OK, sc.Detail = true, detail+"; bubblewrap installs it on every process of the sandbox"
	}
	r.Checks = append(r.Checks, sc)

	r.Checks = append(r.Checks, cg)
	r.FullStrength = bw.OK && us.OK && sc.OK
	return r
}

// cgroupCheck says how run limits (memory, pids) would be held from this
// process: cgroup v2 delegated, cgroup v1 as root, or rlimits; and, for the
// last, what a serving gateway in this cgroup would do (DelegateCgroup).
func cgroupCheck() Check {
	cg := Check{Name: CheckCgroups}
	switch p := planCgroup(true, true); p.version {
	case 2:
		cg.OK, cg.Detail = true, "run limits by cgroup v2, delegated: run cgroups under "+p.v2dir
		if own, err := ownCgroupV2Dir(); err == nil && filepath.Base(own) == gatewayLeaf {
			cg.Detail += ", beside the gateway's leaf " + gatewayLeaf
		}
	case 1:
		cg.OK, cg.Detail = true, "run limits by cgroup v1 as root: memory and pids under <controller>/"+cgroupV1Parent
	default:
		cg.Reason = "run limits by rlimit: " + p.reason
		if own, err := ownCgroupV2Dir(); err == nil {
			if d, _, move := delegationPlan(own, runControllers); move {
				cg.Reason += "; serving, the gateway " + d.Detail + " (run limits by cgroup v2, delegated)"
			} else {
				cg.Reason += "; serving, the gateway would not delegate its cgroup: " + strings.TrimPrefix(d.Detail, "not delegating: ")
			}
		}
		cg.Remedy = "run the gateway under systemd with Delegate=yes (cgroup v2: serving, it moves itself into the leaf " + gatewayLeaf + " of its cgroup and enables memory and pids for run cgroups beside it), or as root on cgroup v1; until then memory is bounded per process (RLIMIT_AS) and the process count by RLIMIT_NPROC (not for uid 0)"
	}
	return cg
}

// tryUserns runs `true` under bubblewrap with the namespaces a run uses,
// and with the filter on every process when withFilter.
func tryUserns(ctx context.Context, bwrap string, withFilter bool) error {
	truePath := "/bin/true"
	if p, err := exec.LookPath("true"); err == nil {
		truePath = p
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	args := []string{"--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
		"--die-with-parent", "--cap-drop", "ALL", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev"}
	var extra []*os.File
	if withFilter {
		prog, err := programBytes()
		if err != nil {
			return err
		}
		m, err := sealedMemfd("mitrity-seccomp-probe", prog)
		if err != nil {
			return err
		}
		defer m.Close()
		r, err := reopen(m)
		if err != nil {
			return err
		}
		defer r.Close()
		extra = append(extra, r)
		args = append(args, "--seccomp", "3")
	}
	cmd := exec.CommandContext(ctx, bwrap, append(args, "--", truePath)...)
	cmd.ExtraFiles = extra
	cmd.Env = []string{}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		if withFilter {
			return fmt.Errorf("bubblewrap could not install the filter: %s", msg)
		}
		return fmt.Errorf("bubblewrap could not create the sandbox's namespaces: %s", msg)
	}
	return nil
}

// usernsRemedy names the host setting that most likely blocks user
// namespaces, from what the kernel exposes.
func usernsRemedy() string {
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(b))
	}
	var out []string
	if read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1" {
		out = append(out, "AppArmor restricts unprivileged user namespaces (Ubuntu 24.04+): add an AppArmor profile for bwrap that allows userns (abi <abi/4.0>, profile bwrap /usr/bin/bwrap flags=(unconfined) { userns, }) or set sysctl kernel.apparmor_restrict_unprivileged_userns=0")
	}
	if read("/proc/sys/user/max_user_namespaces") == "0" {
		out = append(out, "user namespaces are disabled: sysctl -w user.max_user_namespaces=15000 (persist it in /etc/sysctl.d)")
	}
	if read("/proc/sys/kernel/unprivileged_userns_clone") == "0" {
		out = append(out, "unprivileged user namespaces are disabled: sysctl -w kernel.unprivileged_userns_clone=1")
	}
	if os.Geteuid() == 0 && !hasCapability(unix.CAP_SETFCAP) {
		out = append(out, "a root caller needs CAP_SETFCAP to map uid 0 into a user namespace (Linux >= 5.12): keep it in the gateway's capability set, or set exec.run_as to an unprivileged user")
	}
	if len(out) == 0 {
		out = append(out, "check that user namespaces are enabled (user.max_user_namespaces > 0) and that no LSM or container seccomp profile blocks unshare(CLONE_NEWUSER)")
	}
	return strings.Join(out, "; ")
}

// hasCapability reads the effective set from /proc/self/status.
func hasCapability(c int) bool {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CapEff:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && n&(1<<uint(c)) != 0
		}
	}
	return false
}

// seccompProbe is what the probe's child prints.
type seccompProbe struct {
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// trySeccomp runs the helper's probe-seccomp in a child process.
func trySeccomp(ctx context.Context, helper string) (string, error) {
	if helper == "" {
		var err error
		if helper, err = os.Executable(); err != nil {
			return "", err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, helper, HelperProbeSeccomp)
	cmd.Env = []string{}
	out, err := cmd.Output()
	var p seccompProbe
	if jerr := json.Unmarshal(bytes.TrimSpace(out), &p); jerr != nil {
		return "", fmt.Errorf("the seccomp probe failed: %v (%s)", err, strings.TrimSpace(string(out)))
	}
	if !p.OK {
		return "", errors.New(p.Detail)
	}
	return p.Detail, nil
}

// ProbeSeccompChild is the helper's probe-seccomp subcommand: it installs
// the command's filter on itself, checks that the filter denies what it
// must and allows what it must, and prints the outcome as JSON on stdout.
func ProbeSeccompChild() error {
	out := seccompProbe{}
	defer func() {
		b, _ := json.Marshal(out)
		os.Stdout.Write(append(b, '\n'))
	}()
	prog, err := filterProgram()
	if err == nil {
		err = loadFilter(prog)
	}
	if err != nil {
		out.Detail = "the filter does not install: " + err.Error()
		return err
	}
	var bad []string
	for _, c := range filterChecks {
		switch err := c.call(); {
		case c.want == 0 && err != nil:
			bad = append(bad, fmt.Sprintf("%s refused: %v", c.name, err))
		case c.want != 0 && err == nil:
			bad = append(bad, fmt.Sprintf("%s allowed, want %v", c.name, c.want))
		case c.want != 0 && err != c.want:
			bad = append(bad, fmt.Sprintf("%s: %v, want %v", c.name, err, c.want))
		}
	}
	if len(bad) > 0 {
		out.Detail = "the filter installed but does not hold: " + strings.Join(bad, ", ")
		return errors.New(out.Detail)
	}
	out.OK, out.Detail = true, fmt.Sprintf("filter of %d instructions installed; %d checks hold, with high argument bits (socket(AF_UNIX), AF_VSOCK, unshare(CLONE_NEWUSER), pidfd_getfd denied, clone3 ENOSYS)", len(prog), len(filterChecks))
	return nil
}
