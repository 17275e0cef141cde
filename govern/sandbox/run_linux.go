package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/mitrity/mitrity/govern"
)

// Run builds the sandbox for spec and runs the command in it, with
// stdio as its standard streams, until it exits, the spec's timeout expires
// (SIGTERM to every process of the sandbox, SIGKILL after the grace) or ctx
// is cancelled (the same, status killed). It returns when no process of the
// sandbox is left.
func Run(ctx context.Context, spec *Spec, stdio Stdio, opts ...Option) Result {
	started := time.Now()
	e := &execution{spec: spec, stdio: stdio, opts: collect(opts)}
	defer e.closeAll()
	res := e.run(ctx)
	res.DurationMS = time.Since(started).Milliseconds()
	return res
}

// execution is the state of one Run.
type execution struct {
	spec  *Spec
	stdio Stdio
	opts  options

	bwrap    string
	features Features
	seccomp  bool // this attempt gives bubblewrap the filter
	uid      int  // the sandbox's uid on the host
	cred     *syscall.Credential
	cg       *execCgroup
	cgReason string
	prot     protection // what the run must not change, rename away or create
	live     *live      // this run in the live register
	// othersHeld are what other live runs pinned: held here too.
	othersHeld []string

	extra      []*os.File // bwrap's descriptors from 3 on
	childOnly  []*os.File // closed here once bwrap has them
	parentOnly []*os.File // closed at the end
	notes      []string
}

func (e *execution) closeAll() {
	for _, f := range append(e.childOnly, e.parentOnly...) {
		f.Close()
	}
	e.childOnly, e.parentOnly = nil, nil
}

// pass adds f to bwrap's descriptors and returns its number there.
func (e *execution) pass(f *os.File) int {
	e.extra = append(e.extra, f)
	e.childOnly = append(e.childOnly, f)
	return 2 + len(e.extra)
}

func (e *execution) run(ctx context.Context) Result {
	s := e.spec
	if err := s.Validate(); err != nil {
		return notStarted(govern.StatusFailedToStart, govern.ReasonSpawnError, "%v", err)
	}
	if err := verifyPins(s.Pins); err != nil {
		return notStarted(govern.StatusNeverRan, govern.ReasonPinMismatch, "%v", err)
	}
	if err := pinLinks(s.Pins, s.WorkspaceRoots); err != nil {
		return notStarted(govern.StatusNeverRan, govern.ReasonPinMismatch, "%v", err)
	}
	if err := verifyCwd(s); err != nil {
		return notStarted(govern.StatusNeverRan, govern.ReasonCwdOutsideWorkspace, "%v", err)
	}
	for _, r := range s.WorkspaceRoots {
		if st, err := os.Stat(r); err != nil || !st.IsDir() {
			return notStarted(govern.StatusFailedToStart, govern.ReasonSpawnError, "workspace root %s is not a directory", r)
		}
	}
	if err := e.resolveBwrap(); err != nil {
		return notStarted(govern.StatusFailedToStart, govern.ReasonSandboxUnavailable, "%v", err)
	}
	if err := e.identity(); err != nil {
		return notStarted(govern.StatusFailedToStart, govern.ReasonSpawnError, "%v", err)
	}
	if err := e.prepareSession(); err != nil {
		return notStarted(govern.StatusFailedToStart, govern.ReasonSpawnError, "%v", err)
	}
	if err := e.register(); err != nil {
		return notStarted(govern.StatusFailedToStart, govern.ReasonSpawnError, "%v", err)
	}
	defer e.live.done()
	if s.Limits.MemoryBytes > 0 || s.Limits.Pids > 0 {
		plan := planCgroup(s.Limits.MemoryBytes > 0, s.Limits.Pids > 0)
		if plan.reason != "" {
			e.cgReason = plan.reason
		} else if cg, err := newCgroup(plan, s.Limits); err != nil {
			e.cgReason = err.Error()
		} else {
			e.cg = cg
		}
	}
	res := e.attempts(ctx)
	if err := e.cg.destroy(); err != nil {
		e.notes = append(e.notes, "cgroup not removed (a later run will): "+err.Error())
	}
	if len(e.notes) > 0 {
		var notes []string
		for _, n := range e.notes { // an attempt retried repeats its notes
			if !slices.Contains(notes, n) {
				notes = append(notes, n)
			}
		}
		res.Message = strings.Join(append(nonEmpty(res.Message), notes...), "; ")
	}
	return res
}

// attempts runs the sandbox with the seccomp filter unless the spec says
// off. When bubblewrap cannot install the filter, preferred runs again
// without it (bubblewrap_no_seccomp) and required runs nothing.
func (e *execution) attempts(ctx context.Context) Result {
	mode := e.spec.Seccomp.effective()
	e.seccomp = mode != SeccompOff
	for {
		layout, err := e.layout()
		if err != nil {
			return notStarted(govern.StatusFailedToStart, govern.ReasonSpawnError, "%v", err)
		}
		res, filterFailed := e.start(ctx, layout)
		e.closeAll()
		switch {
		case !filterFailed:
			return res
		case mode == SeccompPreferred:
			e.notes = append(e.notes, "seccomp preferred but not installed: "+res.Message)
			e.seccomp = false
		default:
			res.Reason = govern.ReasonSandboxUnavailable
			res.Message = "seccomp is required and the filter could not be installed: " + res.Message
			return res
		}
	}
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// verifyPins re-hashes every pin's bytes: what is bound over the path is
// exactly what was judged, or nothing runs.
func verifyPins(pins []govern.Pin) error {
	for _, p := range pins {
		sum := sha256.Sum256(p.Bytes)
		if hex.EncodeToString(sum[:]) != strings.ToLower(p.SHA256) {
			return fmt.Errorf("pinned script %s: the bytes to bind do not hash to the judged %s", p.Path, p.SHA256)
		}
	}
	return nil
}

// pinLinks refuses a pin whose path, as the command names it, goes through
// a symbolic link inside a workspace root. The judged bytes are bound over
// what the path resolves to when the sandbox is set up, and the directories
// on the way are anchored; a link in a writable place is not: the run
// itself could re-point it (ln -sfn elsewhere L) and then run bytes nobody
// judged through the same name. A link elsewhere (the read-only host) stays
// as it was for the whole run.
func pinLinks(pins []govern.Pin, roots []string) error {
	var real []string
	for _, r := range roots {
		if rr, err := filepath.EvalSymlinks(r); err == nil {
			real = append(real, rr)
		}
	}
	inRoot := func(dir string) string {
		for _, r := range real {
			if within(r, dir) {
				return r
			}
		}
		return ""
	}
	for _, p := range pins {
		if !filepath.IsAbs(p.Path) {
			continue // Validate refuses it
		}
		dir := "/"
		for _, name := range strings.Split(strings.TrimPrefix(filepath.Clean(p.Path), "/"), "/") {
			next := filepath.Join(dir, name)
			fi, err := os.Lstat(next)
			if err != nil {
				break // gone: nothing is bound, the command cannot run it
			}
			if fi.Mode()&os.ModeSymlink == 0 {
				dir = next
				continue
			}
			if root := inRoot(dir); root != "" {
				return fmt.Errorf("pinned script %s is named through the symbolic link %s, inside the workspace root %s: the command could re-point the link and run bytes that were not judged, so nothing was run; name the script by its real path (%s)", p.Path, next, root, p.RealPath)
			}
			if dir, err = filepath.EvalSymlinks(next); err != nil {
				break
			}
		}
	}
	return nil
}

// verifyCwd: after symlinks, the working directory is a directory inside a
// workspace root.
func verifyCwd(s *Spec) error {
	real, err := filepath.EvalSymlinks(s.Cwd)
	if err != nil {
		return fmt.Errorf("working directory %s: %w", s.Cwd, err)
	}
	if st, err := os.Stat(real); err != nil || !st.IsDir() {
		return fmt.Errorf("working directory %s is not a directory", s.Cwd)
	}
	for _, r := range s.WorkspaceRoots {
		if rr, err := filepath.EvalSymlinks(r); err == nil && within(rr, real) {
			return nil
		}
	}
	return fmt.Errorf("working directory %s (%s) is outside every workspace root", s.Cwd, real)
}

// bwrapCandidates are tried when PATH has no bwrap (sandboxrun's own
// environment may be empty).
var bwrapCandidates = []string{"/usr/bin/bwrap", "/usr/local/bin/bwrap", "/bin/bwrap"}

// findBwrap returns the bubblewrap binary to use.
func findBwrap(path string) (string, error) {
	if path != "" {
		if !filepath.IsAbs(path) {
			return "", fmt.Errorf("bubblewrap path %q is not absolute", path)
		}
		return path, nil
	}
	if p, err := exec.LookPath("bwrap"); err == nil {
		return filepath.Abs(p)
	}
	for _, c := range bwrapCandidates {
		if st, err := os.Stat(c); err == nil && !st.IsDir() {
			return c, nil
		}
	}
	return "", errors.New("bubblewrap (bwrap) is not installed: install the bubblewrap package (>= 0.5.0)")
}

// bwrapVersion asks the binary its version.
func bwrapVersion(path string) (Version, error) {
	out, err := exec.Command(path, "--version").Output()
	if err != nil {
		return Version{}, fmt.Errorf("%s --version: %w", path, err)
	}
	return ParseVersion(string(out))
}

func (e *execution) resolveBwrap() error {
	p, err := findBwrap(e.spec.Bwrap.Path)
	if err != nil {
		return err
	}
	var v Version
	if e.spec.Bwrap.Version != "" {
		v, err = ParseVersion(e.spec.Bwrap.Version)
	} else {
		v, err = bwrapVersion(p)
	}
	if err != nil {
		return err
	}
	if !v.AtLeast(MinVersion) {
		return fmt.Errorf("bubblewrap %s at %s is older than %s", v, p, MinVersion)
	}
	e.bwrap, e.features = p, FeaturesOf(v)
	return nil
}

// identity decides the uid the sandbox runs as on the host.
func (e *execution) identity() error {
	euid := os.Geteuid()
	if ra := e.spec.RunAs; ra != nil {
		if euid != 0 {
			return fmt.Errorf("run_as (uid %d) needs a root caller; sandboxrun runs as uid %d", ra.UID, euid)
		}
		e.cred = &syscall.Credential{Uid: ra.UID, Gid: ra.GID, Groups: []uint32{}}
		e.uid = int(ra.UID)
		return nil
	}
	e.uid = euid
	return nil
}

// register enters the run in the live register and keeps every other live
// run from replacing what this one pins: those paths are bound over
// themselves inside each of them that can write them, before this run's
// command starts (see live_linux.go). What they pinned is held here
// (othersHeld). Whatever cannot be done fails the run: a pin another run
// could swap out is no pin.
func (e *execution) register() error {
	var roots []string
	for _, r := range e.spec.WorkspaceRoots {
		if real, err := filepath.EvalSymlinks(r); err == nil {
			roots = append(roots, real)
		}
	}
	held := heldPaths(e.spec.Pins, roots)
	dir := e.opts.liveDir
	if dir == "" {
		dir = LiveDir(os.Geteuid())
	}
	if ss := e.spec.Session; ss != nil {
		// What a session can write besides its roots: another run's pins
		// there are held in it too.
		for _, p := range ss.statePaths() {
			if real, err := filepath.EvalSymlinks(p); err == nil {
				roots = append(roots, real)
			}
		}
	}
	l, others, err := registerLive(dir, roots, held, e.spec.Session != nil)
	if err != nil {
		return err
	}
	e.live = l
	for _, o := range others {
		for _, h := range o.Held {
			if rootOf(roots, h) != "" && !slices.Contains(e.othersHeld, h) {
				e.othersHeld = append(e.othersHeld, h)
			}
		}
		paths := heldWithin(held, o.Roots)
		if len(paths) == 0 {
			continue
		}
		// A run registered before this one may still be setting up.
		var ok bool
		if o, ok, err = waitStarted(dir, o.ID, liveLockTimeout); err != nil {
			return fmt.Errorf("pinned scripts: %w", err)
		} else if !ok {
			continue // it ended
		}
		if err := holdIn(o, paths); err != nil {
			return fmt.Errorf("pinned scripts: a run going on could replace them, and holding them there failed: %w", err)
		}
	}
	return nil
}
