package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"
)

// prepareSession makes the session's missing state paths, as the sandbox's
// user (a root caller dropping to run_as must not create them as root in
// that user's home): bubblewrap can only bind what exists.
func (e *execution) prepareSession() error {
	ss := e.spec.Session
	if ss == nil {
		return nil
	}
	var err error
	if aerr := e.asSandboxUser(func() {
		for _, d := range ss.StateDirs {
			if err = os.MkdirAll(d, 0o700); err != nil {
				err = fmt.Errorf("session state directory %s: %w", d, err)
				return
			}
		}
		for _, f := range ss.StateFiles {
			if _, serr := os.Lstat(f.Path); serr == nil {
				continue
			}
			if err = os.MkdirAll(filepath.Dir(f.Path), 0o700); err != nil {
				err = fmt.Errorf("session state file %s: %w", f.Path, err)
				return
			}
			fd, oerr := unix.Open(f.Path, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
			if errors.Is(oerr, unix.EEXIST) {
				continue
			}
			if oerr != nil {
				err = fmt.Errorf("session state file %s: %w", f.Path, oerr)
				return
			}
			_, werr := unix.Write(fd, f.Init)
			unix.Close(fd)
			if werr != nil {
				err = fmt.Errorf("session state file %s: %w", f.Path, werr)
				return
			}
		}
	}); aerr != nil {
		return aerr
	}
	return err
}

// sessionVisible is what of the host a session's sandbox shows, resolved:
// its read-only paths (but symlinks, which are re-created), its state paths
// and the workspace roots.
func sessionVisible(ss *Session, roots []string) (visible, state []string) {
	for _, p := range ss.ReadOnly {
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSymlink == 0 {
			if real, err := filepath.EvalSymlinks(p); err == nil {
				visible = append(visible, real)
			}
		}
	}
	for _, p := range ss.statePaths() {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			state = append(state, real)
		}
	}
	return append(append(visible, state...), roots...), state
}

// sessionDeny keeps the deny set's paths a session's sandbox can see: the
// rest is not there to mask (masking it would only make mount points). A
// path of the mandatory credential set that is one of the program's own
// state paths, or inside one, is its login and stays readable to it; the
// spec's own deny paths (the gateway's files) never do.
func sessionDeny(ds []denied, visible, state []string) []denied {
	return slices.DeleteFunc(ds, func(d denied) bool {
		if rootOf(visible, d.Path) == "" {
			return true
		}
		return d.what == whatCredential && rootOf(state, d.Path) != ""
	})
}

// sessionLayout resolves the session's mounts and opens the descriptors
// that carry its data files and binds into the sandbox.
func (e *execution) sessionLayout(l *Layout) error {
	ss := e.spec.Session
	sl := &SessionLayout{Private: ss.Private, Sealed: ss.Sealed, KeepSession: ss.TTY && e.seccomp, RootInside: ss.RootInside}
	var rerr error
	err := e.asSandboxUser(func() {
		for _, p := range ss.ReadOnly {
			fi, err := os.Lstat(p)
			if err != nil {
				continue // missing: nothing to show
			}
			if fi.Mode()&os.ModeSymlink != 0 {
				t, err := os.Readlink(p)
				if err != nil {
					rerr = fmt.Errorf("session read-only path %s: %w", p, err)
					return
				}
				sl.Mounts = append(sl.Mounts, SessionMount{Path: p, Link: t})
				continue
			}
			real, err := filepath.EvalSymlinks(p)
			if err != nil {
				continue
			}
			sl.Mounts = append(sl.Mounts, SessionMount{Path: p, Source: real})
		}
		for _, p := range ss.statePaths() {
			real, err := filepath.EvalSymlinks(p)
			if err != nil {
				rerr = fmt.Errorf("session state path %s: %w", p, err)
				return
			}
			sl.Mounts = append(sl.Mounts, SessionMount{Path: p, Source: real, Writable: true})
		}
	})
	if err != nil {
		return err
	}
	if rerr != nil {
		return rerr
	}
	for _, p := range ss.Private {
		sl.Mounts = append(sl.Mounts, SessionMount{Path: p, Tmpfs: 0o700})
	}
	for _, p := range ss.Sealed {
		sl.Mounts = append(sl.Mounts, SessionMount{Path: p, Tmpfs: 0o755})
	}
	for _, f := range ss.Files {
		m, err := sealedMemfd("mitrity-session-file", f.Data)
		if err != nil {
			return fmt.Errorf("session file %s: %w", f.Path, err)
		}
		r, err := reopen(m)
		m.Close()
		if err != nil {
			return err
		}
		perm := f.Perm
		if perm == 0 {
			perm = 0o444
		}
		sl.Mounts = append(sl.Mounts, SessionMount{Path: f.Path, DataFD: e.pass(r), Perm: perm})
	}
	for _, b := range ss.Binds {
		// Opened here, as the supervisor: the sandbox's user need not
		// reach the host path (a root launcher's own programs), and what
		// is bound is the file checked now.
		fd, err := unix.Open(b.Source, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("session bind %s: %w", b.Source, err)
		}
		f := os.NewFile(uintptr(fd), "session-bind")
		if !e.features.BindFD {
			f.Close()
			sl.Mounts = append(sl.Mounts, SessionMount{Path: b.Path, Source: b.Source})
			continue
		}
		sl.Mounts = append(sl.Mounts, SessionMount{Path: b.Path, BindFD: e.pass(f)})
	}
	// Parents before what is inside them; the order given otherwise.
	slices.SortStableFunc(sl.Mounts, func(a, b SessionMount) int { return depth(a.Path) - depth(b.Path) })
	l.Session = sl
	return nil
}
