package sandbox

import (
	"fmt"
	"io"
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
	var passwd io.Reader
	if f, err := os.Open("/etc/passwd"); err == nil {
		defer f.Close()
		passwd = f
	}
	homes := HomeDirs(passwd, "/home", s.DenyHomes)
	// Paths are resolved as the sandbox's user sees them: a root caller
	// dropping to run_as must not ask bubblewrap to mask what that user
	// cannot reach (bubblewrap would try to create it).
	pinTargets := map[string]string{}    // a pin's path -> what it resolves to now
	pinPerms := map[string]os.FileMode{} // read-only, executable where the file is now
	err := e.asSandboxUser(func() {
		// A home the sandbox cannot reach hides its credentials already.
		homes = slices.DeleteFunc(homes, func(h string) bool {
			st, err := os.Stat(h)
			return err != nil || !st.IsDir()
		})
		l.Masks = ResolveMasks(DenyCandidates(homes, s.DenyPaths), roots)
		l.Protected, e.absent = ResolveProtected(ProtectedCandidates(roots, s.ProtectedExtra))
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

	helper := e.opts.helper
	if helper == "" {
		var err error
		if helper, err = os.Executable(); err != nil {
			return l, fmt.Errorf("locating the sandbox helper: %w", err)
		}
	}
	l.HelperPath = helper
	if e.features.BindFD {
		fd, err := unix.Open(helper, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return l, fmt.Errorf("sandbox helper %s: %w", helper, err)
		}
		l.HelperFD = e.pass(os.NewFile(uintptr(fd), "helper"))
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
	return l, nil
}
