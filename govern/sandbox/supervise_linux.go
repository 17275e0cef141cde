package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/pollfd"
	"github.com/mitrity/mitrity/govern/sandbox/initproc"
	"github.com/mitrity/mitrity/govern/secretscan"
)

// start runs bubblewrap and supervises the sandbox to the end. It reports
// separately that bubblewrap could not install the seccomp filter, so that
// the caller can apply the spec's seccomp mode.
func (e *execution) start(ctx context.Context, l Layout) (Result, bool) {
	s := e.spec
	fail := func(err error) (Result, bool) {
		return notStarted(govern.StatusFailedToStart, govern.ReasonSpawnError, "%v", err), false
	}
	// Descriptors 3, 4, 5 (and 6 with a proxy) are init's: see
	// initproc.FDConfig.
	cfgR, cfgW, err := os.Pipe()
	if err != nil {
		return fail(err)
	}
	e.parentOnly = append(e.parentOnly, cfgW)
	e.childOnly = append(e.childOnly, cfgR)
	stR, stW, err := os.Pipe()
	if err != nil {
		return fail(err)
	}
	e.parentOnly = append(e.parentOnly, stR)
	e.childOnly = append(e.childOnly, stW)
	errR, errW, err := os.Pipe()
	if err != nil {
		return fail(err)
	}
	e.parentOnly = append(e.parentOnly, errR)
	e.childOnly = append(e.childOnly, errW)
	infoR, infoW, err := os.Pipe()
	if err != nil {
		return fail(err)
	}
	e.parentOnly = append(e.parentOnly, infoR)
	e.childOnly = append(e.childOnly, infoW)
	stdin, stdout, stderr, err := e.streams()
	if err != nil {
		return fail(err)
	}
	fixed := []*os.File{cfgR, stW, stderr}
	// A socketpair to init: it hands a descriptor out on it (the egress
	// bridge's listener, the exec guard's).
	handOut := func(name string) (*os.File, error) {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("%s socketpair: %w", name, err)
		}
		// The gateway's end non-blocking, so that NewFile puts it in the
		// poller (receiveFD); init's end stays blocking.
		if err := unix.SetNonblock(fds[0], true); err != nil {
			unix.Close(fds[0])
			unix.Close(fds[1])
			return nil, fmt.Errorf("%s socketpair: %w", name, err)
		}
		end, child := os.NewFile(uintptr(fds[0]), name), os.NewFile(uintptr(fds[1]), name+"-child")
		e.parentOnly = append(e.parentOnly, end)
		e.childOnly = append(e.childOnly, child)
		fixed = append(fixed, child)
		return end, nil
	}
	var bridgeEnd *os.File
	if s.ProxySocket != "" {
		if bridgeEnd, err = handOut("bridge"); err != nil {
			return fail(err)
		}
	}
	// The exec guard, for a run that carries credentials.
	var guardEnd *os.File
	guardFD := 0
	matcher := secretscan.NewMatcher(s.Credentials)
	if !matcher.Empty() {
		if guardEnd, err = handOut("guard"); err != nil {
			return fail(err)
		}
		guardFD = 2 + len(fixed)
	}
	fixed = append(fixed, infoW)
	// The layout's descriptors were numbered from 3 on: put init's first
	// and renumber.
	shift := len(fixed)
	e.extra = append(fixed, e.extra...)
	l.InfoFD = 2 + shift
	if l.Features.BindFD {
		l.InitFD += shift
	}
	if l.SeccompFD >= 0 {
		l.SeccompFD += shift
	}
	for i := range l.Pins {
		l.Pins[i].FD += shift
	}
	for i := range l.CredFiles {
		l.CredFiles[i].FD += shift
	}
	if l.Session != nil {
		for i := range l.Session.Mounts {
			if m := &l.Session.Mounts[i]; m.DataFD > 0 {
				m.DataFD += shift
			} else if m.BindFD > 0 {
				m.BindFD += shift
			}
		}
	}
	// A v1 cgroup is entered by init itself (initproc.Join: cheap, and off
	// the critical path); a v2 one takes the sandbox's first process by
	// pid while bubblewrap waits on its block descriptor.
	var blkW *os.File
	var joins []initproc.Join
	if e.cg != nil && e.cg.version == 1 {
		for _, c := range slices.Sorted(maps.Keys(e.cg.paths)) {
			f, err := os.OpenFile(filepath.Join(e.cg.paths[c], "tasks"), os.O_WRONLY, 0)
			if err != nil {
				return fail(fmt.Errorf("cgroup %s: %w", c, err))
			}
			j := initproc.Join{FD: e.pass(f), Controller: c}
			if rl, ok := e.fallback(c); ok {
				j.Fallback = &rl
			}
			joins = append(joins, j)
		}
	} else if e.cg != nil {
		var blkR *os.File
		if blkR, blkW, err = os.Pipe(); err != nil {
			return fail(err)
		}
		e.parentOnly = append(e.parentOnly, blkW)
		l.BlockFD = e.pass(blkR)
	}
	// The lifeline: both ends go to bubblewrap only (this process closes
	// its copies once it started), the write end as its --json-status-fd,
	// which its outer process alone keeps open; init holds the read end.
	lifeR, lifeW, err := os.Pipe()
	if err != nil {
		return fail(err)
	}
	// A reader stays here: bubblewrap writes its exit status on the
	// lifeline at the end, which with no reader left would be its SIGPIPE.
	keep, err := unix.FcntlInt(lifeR.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		lifeR.Close()
		lifeW.Close()
		return fail(fmt.Errorf("lifeline: %w", err))
	}
	e.parentOnly = append(e.parentOnly, os.NewFile(uintptr(keep), "lifeline"))
	lifeline, lifelineWriter := e.pass(lifeR), e.pass(lifeW)
	l.LifelineFD = lifelineWriter

	// The options go to bwrap on a descriptor (--args), not on its command
	// line, which every local user can read in /proc: the masked paths
	// there would tell them which credential files this host has.
	opts, command := splitArgs(BuildArgs(l))
	argsFile, err := argsMemfd(opts)
	if err != nil {
		return fail(fmt.Errorf("bubblewrap arguments: %w", err))
	}
	argv := []string{"bwrap", "--args", strconv.Itoa(e.pass(argsFile))}
	if e.live != nil {
		// The mark a later run finds this one's processes by, if this
		// process dies while bubblewrap sets the sandbox up (endOrphaned).
		argv = append(argv, "--setenv", runMarkEnv, e.live.entry.ID)
	}
	argv = append(argv, command...)
	cmd := &exec.Cmd{
		Path:       e.bwrap,
		Args:       argv,
		Env:        initEnv,
		Dir:        "/",
		Stdin:      stdin,
		Stdout:     stdout,
		Stderr:     errW,
		ExtraFiles: e.extra,
		// bubblewrap dies with this process (and the sandbox with it:
		// --die-with-parent).
		SysProcAttr: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Credential: e.cred},
	}
	// Protected names that do not exist are watched from before the
	// sandbox exists: the first to appear kills it.
	guard, err := startGuard(e.prot.watches)
	if err != nil {
		return fail(fmt.Errorf("protected paths: %w", err))
	}
	// What the run changes is what changed from now (a ctime is never
	// set back by the program).
	runStart := time.Now()
	// The parent-death signal follows the thread that forks: keep it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cmd.Start(); err != nil {
		guard.close()
		return notStarted(govern.StatusFailedToStart, govern.ReasonSandboxUnavailable, "starting bubblewrap %s: %v", e.bwrap, err), false
	}
	for _, f := range e.childOnly {
		f.Close()
	}
	e.childOnly = nil

	waited := make(chan error, 1)
	go func() { waited <- pollfd.Wait(cmd) }()
	errText := make(chan string, 1)
	go func() { errText <- readCapped(errR, 16<<10) }()
	statuses := make(chan []initproc.Status, 1)
	go func() { statuses <- readStatuses(stR) }()
	bridged := make(chan *bridge, 1)
	if bridgeEnd != nil {
		go func() {
			ln, err := receiveListener(bridgeEnd)
			if err != nil {
				bridged <- nil
				return
			}
			bridged <- serveBridge(ln, s.ProxySocket)
		}()
	} else {
		bridged <- nil
	}

	guarded := make(chan *execGuard, 1)
	stopGuard := make(chan struct{})
	if guardEnd != nil {
		go func() {
			lfd, err := receiveFD(guardEnd, "the exec guard")
			if err != nil {
				guarded <- nil
				return
			}
			guarded <- serveGuard(lfd, matcher, stopGuard)
		}()
	} else {
		guarded <- nil
	}

	// The run's time starts now, bubblewrap's setup included: a setup that
	// stalls (a hung mount, a wedged file system) is the run's timeout or
	// cancellation like any other, never a wait without end.
	timer := time.NewTimer(s.Timeout())
	defer timer.Stop()
	timeout := timer.C
	if s.TimeoutMS == 0 {
		// A session without a timeout (Validate allows no other): it ends
		// with its program or its caller.
		timer.Stop()
		timeout = nil
	}
	var timedOut, cancelled bool
	info := make(chan int, 1)
	go func() { info <- readInfo(infoR) }()
	var pid int
	select {
	case pid = <-info:
	case <-timeout:
		timedOut = true
	case <-ctx.Done():
		cancelled = true
	}
	early := timedOut || cancelled
	if early {
		// Nothing of the command has started: there is nothing to give a
		// grace to. bubblewrap takes the sandbox with it (--die-with-parent).
		cmd.Process.Kill()
		grace := time.NewTimer(s.KillGrace())
		select {
		case pid = <-info:
		case <-grace.C:
		}
		grace.Stop()
	}
	sb := &sandboxProc{pid: pid, pidfd: -1}
	if sb.pid > 0 {
		if fd, err := unix.PidfdOpen(sb.pid, 0); err == nil {
			sb.pidfd = fd
			defer unix.Close(fd)
		}
		if early {
			sb.kill()
		}
	}
	guard.armed(func() {
		sb.kill()
		cmd.Process.Kill()
	})
	// In the live register before its command can start (init waits for
	// its config): a socket refuses its processes from then on, and a run
	// starting later holds what it pinned.
	var liveErr error
	if sb.pid > 0 {
		if liveErr = e.live.started(sb.pid); liveErr != nil {
			sb.kill()
		}
	}
	if blkW != nil {
		if sb.pid <= 0 {
			e.cg.destroy()
			e.cg = nil
		} else if err := e.cg.add(sb.pid); err != nil {
			e.cgReason = "joining the cgroup: " + err.Error()
			e.cg.destroy()
			e.cg = nil
		}
		blkW.Write([]byte{1})
		blkW.Close()
	}
	limits, rl := e.limitPlan(l)
	go func() {
		json.NewEncoder(cfgW).Encode(initproc.Config{
			Roots:   append(slices.Clone(l.WorkspaceRoots), l.ReadOnlyRoots...),
			Argv:    s.Argv,
			Env:     e.env(),
			Rlimits: rl,
			Bridge:  bridgeEnd != nil,
			GuardFD: guardFD,
			Join:    joins,
			// The numbers are bubblewrap's, which the sandbox keeps.
			Lifeline: lifeline, LifelineWriter: lifelineWriter,
		})
		cfgW.Close()
	}()

	var waitErr error
	var sig string
	if early {
		sig, waitErr = "SIGKILL", <-waited
	} else {
		select {
		case waitErr = <-waited:
		case <-timeout:
			timedOut = true
			sig, waitErr = e.terminate(sb, cmd, waited)
		case <-ctx.Done():
			cancelled = true
			sig, waitErr = e.terminate(sb, cmd, waited)
		}
	}
	gone := sb.reap(5 * time.Second)
	hits := guard.close()
	if bridgeEnd != nil {
		// Unblocks a receive still waiting (init never handed out).
		unix.Shutdown(int(bridgeEnd.Fd()), unix.SHUT_RDWR)
	}
	(<-bridged).close()
	if guardEnd != nil {
		unix.Shutdown(int(guardEnd.Fd()), unix.SHUT_RDWR) // a receive still waiting
	}
	close(stopGuard)
	refused, guardErr := (<-guarded).finish()
	st := summarize(<-statuses)
	bwrapErr := strings.TrimSpace(<-errText)

	res := Result{}
	if len(s.Pins) > 0 {
		res.PinMethod = "bind"
	}
	if liveErr != nil {
		return notStarted(govern.StatusFailedToStart, govern.ReasonSpawnError, "live register: %v", liveErr), false
	}
	e.reportProtected(&res, hits)
	res.ArgvRefused = refused
	if !matcher.Empty() {
		var partial bool
		e.asSandboxUser(func() {
			res.CredentialWritten, partial = findWritten(append(slices.Clone(l.WorkspaceRoots), l.WriteBinds...), runStart, matcher)
		})
		if partial {
			e.notes = append(e.notes, "the search of the workspace for credentials the run wrote stopped at its bounds: it may have missed some")
		}
	}
	if guardErr != nil {
		e.notes = append(e.notes, "exec guard: "+guardErr.Error())
	}
	if m := guardRefusalMessage(refused); m != "" {
		e.notes = append(e.notes, m)
	}
	if st.cwdOutside {
		return notStarted(govern.StatusNeverRan, govern.ReasonCwdOutsideWorkspace, "%s", st.err), false
	}
	if (!st.exec || st.execErr != "") && len(hits) == 0 {
		res.Status, res.Reason = govern.StatusFailedToStart, govern.ReasonSpawnError
		res.Message = firstNonEmpty(st.execErr, st.err, bwrapErr, fmt.Sprintf("the sandbox did not start (%v)", waitErr))
		switch {
		case early && timedOut:
			res.Message = fmt.Sprintf("the timeout (%v) expired while bubblewrap was setting the sandbox up, before the command started", s.Timeout())
		case early:
			res.Message = "the run was cancelled while bubblewrap was setting the sandbox up, before the command started"
		case timedOut:
			res.Message += "; the timeout expired before the command started"
		}
		// bubblewrap installs the filter just before it execs init: a
		// failure there is bubblewrap's, before any status from init.
		filterFailed := e.seccomp && !st.exec && st.err == "" && strings.Contains(strings.ToLower(bwrapErr), "seccomp")
		return res, filterFailed
	}
	res.SandboxMode = govern.SandboxBubblewrap
	if !e.seccomp || st.seccomp != "2" {
		res.SandboxMode = govern.SandboxBubblewrapNoSeccomp
		if e.seccomp {
			e.notes = append(e.notes, fmt.Sprintf("the filter was given to bubblewrap but init reports Seccomp: %q", st.seccomp))
		}
	}
	res.LimitsEnforced = e.joined(limits, st.notJoined)
	if !gone {
		res.LimitsEnforced.DaemonKill = Limit{}
		e.notes = append(e.notes, "a process of the sandbox was still alive 5s after the command ended")
	}
	oom := e.cg.oomKills()
	code := cmd.ProcessState.ExitCode()
	switch {
	case len(hits) > 0:
		// The guard killed it: whatever the command reported, it ended
		// for creating what no run may create.
		res.Status, res.Signal = govern.StatusKilled, "SIGKILL"
		res.Message = protectedKillMessage(hits)
	case timedOut:
		res.Status, res.Signal = govern.StatusTimedOut, sig
		res.Message = fmt.Sprintf("timed out after %v", s.Timeout())
	case cancelled:
		res.Status, res.Signal = govern.StatusKilled, sig
		res.Message = "the run was cancelled"
	case oom > 0 && code == 128+int(syscall.SIGKILL):
		res.Status, res.Signal = govern.StatusKilled, "SIGKILL"
		res.Message = fmt.Sprintf("killed by the memory limit (%d bytes)", s.Limits.MemoryBytes)
	case code < 0:
		res.Status = govern.StatusKilled
		res.Message = fmt.Sprintf("bubblewrap ended abnormally: %v", waitErr)
	default:
		res.Status, res.ExitCode = govern.StatusCompleted, &code
		if oom > 0 {
			e.notes = append(e.notes, fmt.Sprintf("the memory limit killed %d process(es)", oom))
		}
	}
	return res, false
}

// initEnv is bubblewrap's environment, which only the sandbox's init
// inherits (init gives the command the spec's). One processor is all init
// needs: named, the Go runtime sets up one and starts no GOMAXPROCS
// updater, a little less work at every start.
var initEnv = []string{"GOMAXPROCS=1"}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// streams returns the command's stdin, stdout and stderr, /dev/null for
// those not given.
func (e *execution) streams() (in, out, errf *os.File, err error) {
	get := func(f *os.File, flag int) (*os.File, error) {
		if f != nil {
			return f, nil
		}
		n, err := os.OpenFile(os.DevNull, flag, 0)
		if err == nil {
			e.parentOnly = append(e.parentOnly, n)
		}
		return n, err
	}
	if in, err = get(e.stdio.Stdin, os.O_RDONLY); err != nil {
		return
	}
	if out, err = get(e.stdio.Stdout, os.O_WRONLY); err != nil {
		return
	}
	errf, err = get(e.stdio.Stderr, os.O_WRONLY)
	return
}

// env is the command's environment: the spec's, plus $MITRITY_CRED_DIR
// when there are credential files.
func (e *execution) env() []string {
	env := slices.Clone(e.spec.Env)
	if len(e.spec.CredFiles) > 0 {
		env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "MITRITY_CRED_DIR=") })
		env = append(env, "MITRITY_CRED_DIR="+govern.CredentialDir)
	}
	return env
}

// limitPlan decides which mechanism holds each bound, with the cgroup as
// planned (joined, or for v1 to be joined by init: see joined), and the
// rlimits init sets on the command.
func (e *execution) limitPlan(l Layout) (LimitsEnforced, []initproc.Rlimit) {
	lim := e.spec.Limits
	le := LimitsEnforced{DaemonKill: enforced(MechanismPidns)}
	rl := []initproc.Rlimit{{Resource: unix.RLIMIT_CORE, Value: 0}}
	if lim.FileSizeBytes > 0 {
		rl = append(rl, initproc.Rlimit{Resource: unix.RLIMIT_FSIZE, Value: uint64(lim.FileSizeBytes)})
		le.FileSize = enforced(MechanismRlimit)
	}
	if lim.Nofile > 0 {
		rl = append(rl, initproc.Rlimit{Resource: unix.RLIMIT_NOFILE, Value: uint64(lim.Nofile)})
	}
	if lim.TmpfsBytes > 0 && l.Features.TmpfsSize {
		le.TmpfsSize = enforced(MechanismTmpfs)
	} else if lim.TmpfsBytes > 0 {
		e.notes = append(e.notes, "tmpfs size not enforced: bubblewrap older than 0.8.0 has no --size")
	}
	bound := func(controller string, inCgroup bool) Limit {
		if inCgroup {
			return enforced(MechanismCgroup)
		}
		if r, ok := e.fallback(controller); ok {
			rl = append(rl, r)
			return enforced(MechanismRlimit)
		}
		return Limit{}
	}
	if lim.MemoryBytes > 0 {
		le.Memory = bound("memory", e.cg != nil && e.cg.memory)
	}
	if lim.Pids > 0 {
		le.ProcessCount = bound("pids", e.cg != nil && e.cg.pids)
		if !le.ProcessCount.Enforced {
			e.notes = append(e.notes, "process count not enforced: no cgroup ("+e.cgReason+") and RLIMIT_NPROC does not bind uid 0")
		}
	}
	if e.cgReason != "" && ((lim.MemoryBytes > 0 && le.Memory.Mechanism != MechanismCgroup) || (lim.Pids > 0 && le.ProcessCount.Mechanism == MechanismRlimit)) {
		e.notes = append(e.notes, "no cgroup, rlimits instead: "+e.cgReason)
	}
	return le, rl
}

// fallback is the rlimit that bounds what a cgroup controller would when
// there is no cgroup: RLIMIT_AS for memory (per process); RLIMIT_NPROC for
// processes, counted per user namespace, so that the sandbox's uid, which
// has no other task in its namespace, is bound to the run's own (never for
// uid 0, which it does not bind).
func (e *execution) fallback(controller string) (initproc.Rlimit, bool) {
	lim := e.spec.Limits
	switch controller {
	case "memory":
		return initproc.Rlimit{Resource: unix.RLIMIT_AS, Value: uint64(lim.MemoryBytes)}, lim.MemoryBytes > 0
	case "pids":
		return initproc.Rlimit{Resource: unix.RLIMIT_NPROC, Value: uint64(lim.Pids)}, lim.Pids > 0 && e.uid != 0
	}
	return initproc.Rlimit{}, false
}

// joined corrects the plan with what init reported: a v1 controller it
// could not enter holds by its fallback rlimit (which init then set), or
// not at all.
func (e *execution) joined(le LimitsEnforced, notJoined map[string]string) LimitsEnforced {
	for _, c := range slices.Sorted(maps.Keys(notJoined)) {
		e.notes = append(e.notes, fmt.Sprintf("joining the %s cgroup: %s", c, notJoined[c]))
		l := Limit{}
		if _, ok := e.fallback(c); ok {
			l = enforced(MechanismRlimit)
		}
		switch c {
		case "memory":
			le.Memory = l
		case "pids":
			le.ProcessCount = l
		}
	}
	return le
}

// readInfo returns the pid bubblewrap reports on its info descriptor, or
// 0 when it wrote none (it failed before creating the sandbox).
func readInfo(r io.Reader) int {
	var info struct {
		ChildPid int `json:"child-pid"`
	}
	if err := json.NewDecoder(r).Decode(&info); err != nil {
		return 0
	}
	return info.ChildPid
}

func readCapped(r io.Reader, n int64) string {
	var b bytes.Buffer
	io.Copy(&b, io.LimitReader(r, n))
	io.Copy(io.Discard, r)
	return b.String()
}

func readStatuses(r io.Reader) []initproc.Status {
	var out []initproc.Status
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var s initproc.Status
		if json.Unmarshal(sc.Bytes(), &s) == nil {
			out = append(out, s)
		}
	}
	return out
}

// statusSummary is what init reported.
type statusSummary struct {
	exec       bool
	execErr    string // an error after the exec line: execve failed
	err        string // an error before it
	seccomp    string
	notJoined  map[string]string // cgroup controllers init could not enter
	cwdOutside bool              // init found the working directory outside every root
}

func summarize(ss []initproc.Status) statusSummary {
	var out statusSummary
	for _, s := range ss {
		switch {
		case s.Exec:
			out.exec, out.seccomp, out.notJoined = true, s.Seccomp, s.NotJoined
		case s.Error != "" && out.exec:
			out.execErr = s.Error
		case s.Error != "":
			out.err, out.cwdOutside = s.Error, s.CwdOutside
		}
	}
	return out
}

// sandboxProc is the sandbox's first process (pid 1 of its namespace):
// while it lives, the sandbox does.
type sandboxProc struct {
	pid   int
	pidfd int
}

func (p *sandboxProc) kill() {
	if p.pidfd >= 0 {
		unix.PidfdSendSignal(p.pidfd, unix.SIGKILL, nil, 0)
	} else if p.pid > 0 {
		unix.Kill(p.pid, unix.SIGKILL)
	}
}

// reap kills what is left of the sandbox and waits until its pid 1 is gone:
// the kernel has then killed and reaped every process of the namespace. It
// reports whether that happened within d.
func (p *sandboxProc) reap(d time.Duration) bool {
	if p.pid <= 0 {
		return true
	}
	p.kill()
	if p.pidfd >= 0 {
		fds := []unix.PollFd{{Fd: int32(p.pidfd), Events: unix.POLLIN}}
		deadline := time.Now().Add(d)
		for {
			n, err := unix.Poll(fds, int(time.Until(deadline).Milliseconds()))
			if err == unix.EINTR {
				continue
			}
			return err == nil && n > 0
		}
	}
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if err := unix.Kill(p.pid, 0); errors.Is(err, unix.ESRCH) {
			return true
		}
	}
	return false
}

// terminate sends SIGTERM to every process of the sandbox but its pid 1,
// waits the grace period for bubblewrap to report the command's end, then
// kills the sandbox. It returns the signal that ended the run.
func (e *execution) terminate(p *sandboxProc, cmd *exec.Cmd, waited <-chan error) (string, error) {
	for _, pid := range descendants(p.pid) {
		unix.Kill(pid, unix.SIGTERM)
	}
	grace := time.NewTimer(e.spec.KillGrace())
	defer grace.Stop()
	select {
	case err := <-waited:
		return "SIGTERM", err
	case <-grace.C:
	}
	p.kill()
	cmd.Process.Kill()
	return "SIGKILL", <-waited
}

// descendants lists every process below pid on the host, from /proc.
func descendants(root int) []int {
	if root <= 0 {
		return nil
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	for _, en := range entries {
		pid, err := strconv.Atoi(en.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + en.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			continue
		}
		if ppid, err := strconv.Atoi(f[1]); err == nil {
			children[ppid] = append(children[ppid], pid)
		}
	}
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// splitArgs separates bwrap's options from "--" and the command after it.
func splitArgs(a []string) (opts, command []string) {
	for i, v := range a {
		if v == "--" {
			return a[:i], a[i:]
		}
	}
	return a, nil
}

// argsMemfd holds NUL-terminated arguments for bwrap --args, read from the
// start.
func argsMemfd(args []string) (*os.File, error) {
	fd, err := unix.MemfdCreate("mitrity-bwrap-args", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "bwrap-args")
	var b []byte
	for _, a := range args {
		b = append(append(b, a...), 0)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(0, 0); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
