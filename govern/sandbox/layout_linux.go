package sandbox

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// asSandboxUser runs f on a thread that sees the file system as the
// sandbox will: bubblewrap must not be asked to mask or bind what the
// sandbox cannot reach (it would try to create the path). A root caller's
// thread drops every capability (inside its user namespace, root has no
// override on files of unmapped users, and the command none at all) and,
// with run_as, takes that user's uid and gid with no supplementary groups.
// The thread is never unlocked: it exits with its goroutine.
func (e *execution) asSandboxUser(f func()) error {
	if os.Geteuid() != 0 {
		f()
		return nil
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if e.cred != nil {
			if _, _, errno := unix.RawSyscall(unix.SYS_SETGROUPS, 0, 0, 0); errno != 0 {
				done <- fmt.Errorf("setgroups on a lookup thread: %w", errno)
				return
			}
			unix.Setfsgid(int(e.cred.Gid))
			unix.Setfsuid(int(e.cred.Uid))
		}
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var none [2]unix.CapUserData
		if err := unix.Capset(&hdr, &none[0]); err != nil {
			done <- fmt.Errorf("dropping capabilities on a lookup thread: %w", err)
			return
		}
		f()
		done <- nil
	}()
	return <-done
}

// sealedMemfd returns a memfd holding b, sealed against any change.
func sealedMemfd(name string, b []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), name)
	if _, err := f.Write(b); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_WRITE|unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_SEAL); err != nil {
		f.Close()
		return nil, fmt.Errorf("sealing memfd: %w", err)
	}
	return f, nil
}

// reopen returns a new open file description of f, reading from offset 0:
// bubblewrap reads each data descriptor from its current offset, once.
func reopen(f *os.File) (*os.File, error) {
	return os.OpenFile("/proc/self/fd/"+strconv.Itoa(int(f.Fd())), os.O_RDONLY, 0)
}

// layout resolves everything the bubblewrap command line needs and opens
// the descriptors that carry data into the sandbox.
func (e *execution) layout() (Layout, error) {
	s := e.spec
	e.extra, e.childOnly, e.parentOnly = nil, nil, nil
	roots := make([]string, len(s.WorkspaceRoots))
	for i, r := range s.WorkspaceRoots {
		real, err := filepath.EvalSymlinks(r)
		if err != nil {
			return Layout{}, fmt.Errorf("workspace root %s: %w", r, err)
		}
		roots[i] = real
	}
	l := Layout{
		Features:       e.features,
		DropCaps:       true,
		WorkspaceRoots: roots,
		SeccompFD:      -1,
		TmpfsBytes:     s.Limits.TmpfsBytes,
		RunBytes:       1 << 20,
		BlockFD:        -1,
		Cwd:            s.Cwd,
	}
	if s.ProxySocket != "" {
		if st, err := os.Stat(s.ProxySocket); err != nil || st.Mode()&os.ModeSocket == 0 {
			return l, fmt.Errorf("proxy socket %s is not a Unix socket", s.ProxySocket)
		}
	}
	passwd, _ := os.ReadFile("/etc/passwd")
	homes := HomeDirs(bytes.NewReader(passwd), "/home", s.DenyHomes)
	// Paths are resolved as the sandbox's user sees them: a root caller
	// dropping to run_as must not ask bubblewrap to mask what that user
	// cannot reach (bubblewrap would try to create it).
	pinTargets := map[string]string{}    // a pin's path -> what it resolves to now
	pinPerms := map[string]os.FileMode{} // read-only, executable where the file is now
	var narrow narrowPlan
	var masks maskPlan
	var narrowErr, maskErr error
	err := e.asSandboxUser(func() {
		// A home the sandbox cannot reach hides its credentials already.
		homes = slices.DeleteFunc(homes, func(h string) bool {
			st, err := os.Stat(h)
			return err != nil || !st.IsDir()
		})
		deny := resolveDenied(denyCandidates(homes, s.DenyPaths), roots)
		if s.Session != nil {
			// Only what the session shows of the host needs a mask.
			visible, state := sessionVisible(s.Session, roots)
			deny = sessionDeny(deny, visible, state)
		}
		narrow, narrowErr = planNarrowing(s.Narrowing, roots, homeOf(passwd, e.uid), statAsSeen)
		if narrowErr != nil {
			return
		}
		// What a run can write: the roots a settings file left writable,
		// and the paths it left writable inside the others.
		writable := slices.DeleteFunc(slices.Clone(roots), func(r string) bool { return slices.Contains(narrow.roRoots, r) })
		writable = append(writable, narrow.writeBinds...)
		for _, m := range narrow.masks {
			if !slices.ContainsFunc(deny, func(d denied) bool { return d.Path == m.Path }) {
				deny = append(deny, denied{Mask: m, what: whatSettings})
			}
		}
		// (A working directory the settings file denies: applyNarrowing
		// refuses it, saying so.)
		if cwd, _ := filepath.EvalSymlinks(s.Cwd); !narrow.masked(cwd) {
			entries := coverEntries
			if s.Session != nil {
				// A cover puts back its directory's other entries: under a
				// session's private home that would show what default-deny
				// hides. Masks stay masks there (watched, as every mask).
				entries = -1
			}
			masks, maskErr = planMasks(deny, maskEnv{roots: roots, writable: writable, cwd: cwd, settings: narrow.covers, maxEntries: entries})
		}
		abs := append(slices.Clone(s.ReadOnlyPaths), narrow.readOnly...)
		abs = append(abs, narrow.absent...)
		abs = append(abs, homeProtected(homes)...)
		e.prot = planProtection(protectedSet{roots: writable, relative: append(slices.Clone(ProtectedNames), s.ProtectedExtra...), absolute: abs, cwd: s.Cwd})
		// What masks and covers sit on is watched; inside the writable
		// parts, their directories are anchored, so that only the host can
		// change them.
		e.prot.watches = append(e.prot.watches, maskWatches(masks.held)...)
		seen := map[string]bool{}
		for _, m := range masks.inWritable {
			e.prot.anchor(writable, filepath.Dir(m), seen)
		}
		for _, pin := range s.Pins {
			// A pin's directories are anchored too: a parent renamed away
			// and replaced would take the pinned path with it.
			for _, t := range []string{pin.Path, pin.RealPath} {
				e.prot.anchor(writable, filepath.Dir(t), seen)
			}
		}
		// What other live runs pinned cannot be renamed or unlinked here.
		for _, h := range e.othersHeld {
			e.prot.anchor(writable, h, seen)
		}
		slices.SortStableFunc(e.prot.anchors, func(a, b string) int { return depth(a) - depth(b) })
		l.Protected, l.Anchors = e.prot.readOnly, e.prot.anchors
		for _, p := range s.Pins {
			for _, t := range []string{p.Path, p.RealPath} {
				if real, err := filepath.EvalSymlinks(t); err == nil {
					if st, err := os.Stat(real); err == nil && st.Mode().IsRegular() {
						pinTargets[t] = real
						pinPerms[real] = st.Mode().Perm()&0o555 | 0o444
					}
				}
			}
		}
	})
	if err != nil {
		return l, err
	}
	if narrowErr != nil {
		return l, fmt.Errorf("exec.sandbox.settings_file: %w", narrowErr)
	}
	if err := e.applyNarrowing(&l, narrow); err != nil {
		return l, err
	}
	if maskErr != nil {
		return l, maskErr
	}
	l.Covers, l.Masks = masks.covers, masks.masks

	if err := e.initBinary(&l); err != nil {
		return l, err
	}
	for _, p := range s.Pins {
		m, err := sealedMemfd("mitrity-pin", p.Bytes)
		if err != nil {
			return l, fmt.Errorf("pinned script %s: %w", p.Path, err)
		}
		e.parentOnly = append(e.parentOnly, m)
		// The judged bytes go over whatever the path and the judged real
		// path resolve to now: a symlink re-pointed since the decision
		// leads to the judged bytes too.
		var targets []string
		for _, t := range []string{p.Path, p.RealPath} {
			if real, ok := pinTargets[t]; ok && !slices.Contains(targets, real) {
				targets = append(targets, real)
			}
		}
		// A pin under a cover would show the judged script inside a
		// directory the sandbox hides (a settings file's denyRead, a masked
		// name): it stays hidden, as under a mask.
		if covered := slices.DeleteFunc(slices.Clone(targets), func(t string) bool { return !hiddenByCovers(l.Covers, roots, t) }); len(covered) > 0 {
			targets = slices.DeleteFunc(targets, func(t string) bool { return slices.Contains(covered, t) })
			if len(targets) == 0 {
				e.notes = append(e.notes, maskedNote(p.Path, narrow.hiddenByCovers(covered[0], roots)))
				continue
			}
		}
		bound := false
		for _, t := range targets {
			r, err := reopen(m)
			if err != nil {
				return l, err
			}
			l.Pins = append(l.Pins, FDMount{Path: t, FD: e.pass(r), Perm: pinPerms[t]})
			bound = true
		}
		if !bound {
			e.notes = append(e.notes, fmt.Sprintf("pinned script %s no longer exists as a file: nothing bound, the command cannot run it", p.Path))
		}
	}

	if e.seccomp {
		prog, err := programBytes()
		if s.Session != nil {
			prog, err = sessionProgram()
		}
		if err != nil {
			return l, err
		}
		m, err := sealedMemfd("mitrity-seccomp", prog)
		if err != nil {
			return l, fmt.Errorf("seccomp program: %w", err)
		}
		r, err := reopen(m)
		m.Close()
		if err != nil {
			return l, err
		}
		l.SeccompFD = e.pass(r)
	}

	names := make([]string, 0, len(s.CredFiles))
	for n := range s.CredFiles {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		v := s.CredFiles[n]
		m, err := sealedMemfd("mitrity-cred", []byte(v))
		if err != nil {
			return l, fmt.Errorf("credential file %s: %w", n, err)
		}
		r, err := reopen(m)
		m.Close()
		if err != nil {
			return l, err
		}
		l.CredFiles = append(l.CredFiles, FDMount{Path: n, FD: e.pass(r)})
		l.RunBytes += int64(len(v)) + 4096
	}
	if s.Session != nil {
		if err := e.sessionLayout(&l); err != nil {
			return l, err
		}
	}
	return l, nil
}

// statAsSeen describes p as the calling thread sees it.
func statAsSeen(p string) pathInfo {
	if _, err := os.Lstat(p); err != nil {
		return pathInfo{Real: p}
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return pathInfo{Real: p} // a dangling symlink: nothing there to hide
	}
	st, err := os.Stat(real)
	if err != nil {
		return pathInfo{Real: real}
	}
	return pathInfo{Real: real, Exists: true, Dir: st.IsDir()}
}

// applyNarrowing puts the settings file's plan into the layout.
func (e *execution) applyNarrowing(l *Layout, p narrowPlan) error {
	if e.spec.Narrowing == nil {
		return nil
	}
	if cwd, err := filepath.EvalSymlinks(e.spec.Cwd); err == nil && p.masked(cwd) {
		return fmt.Errorf("working directory %s: exec.sandbox.settings_file denies reading it", e.spec.Cwd)
	}
	e.notes = append(e.notes, p.notes...)
	l.WriteBinds = p.writeBinds
	l.WorkspaceRoots = slices.DeleteFunc(l.WorkspaceRoots, func(r string) bool { return slices.Contains(p.roRoots, r) })
	l.ReadOnlyRoots = p.roRoots
	// (Its denyWrite paths are protected with the rest, its covers and
	// masks planned with the deny set's: see layout.)
	return nil
}

// initBinary picks the sandbox's first process (WithInit, else InitName
// beside the helper, else the helper's init subcommand) and opens it: bound
// from the descriptor, the file is the one checked here, and the dropped
// user need not reach its path.
func (e *execution) initBinary(l *Layout) error {
	helper := e.opts.helper
	if helper == "" {
		var err error
		if helper, err = os.Executable(); err != nil {
			return fmt.Errorf("locating the sandbox helper: %w", err)
		}
	}
	path, args := e.opts.init, []string(nil)
	if path == "" {
		path = filepath.Join(filepath.Dir(helper), InitName)
		if st, err := os.Stat(path); err != nil || !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
			path, args = helper, []string{HelperInit}
		}
	}
	l.InitPath, l.InitArgs = path, args
	if !e.features.BindFD {
		return nil
	}
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("sandbox init %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), "init")
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		f.Close()
		return fmt.Errorf("sandbox init %s is not a regular file", path)
	}
	l.InitFD = e.pass(f)
	return nil
}
