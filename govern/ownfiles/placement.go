package ownfiles

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/mitrity/mitrity/govern/yamlfile"
)

// Placement is what decides whether a run could rewrite a file: the
// gateway's identity, the identity commands run as, and the roots they
// may write.
type Placement struct {
	// Euid is the gateway's effective uid.
	Euid int
	// RunAs is the uid and gid commands run as when that is not the
	// gateway's own user (a root gateway's exec.run_as); nil otherwise.
	RunAs *Identity
	// WritableRoots are every workspace root a run may write.
	WritableRoots []string
	// Lstat and Readlink read the host; nil means os.Lstat and
	// os.Readlink. Tests stage a host with them.
	Lstat    func(string) (fs.FileInfo, error)
	Readlink func(string) (string, error)
}

// Identity is a uid and its primary gid (a run has no other group).
type Identity struct{ UID, GID int }

// maxLinks bounds symlink resolution, as the kernel's ELOOP does.
const maxLinks = 40

// Check returns every problem with s, one positioned error per file: a
// file that configures the gateway or that it executes must not be
// writable by anything the gateway runs, now or by replacing it. So no
// component of its path (the directories walked, the symlinks followed,
// the file) may be inside a writable root; none may be owned by another
// user than root and the gateway's own (a root gateway: root alone); none
// may be writable by the run user's group or by everyone, except a sticky
// directory (which lets only an entry's owner replace it). Files that do
// not exist are skipped: the config's own checks report those.
func (p Placement) Check(s Set) error {
	errs := &yamlfile.Errors{}
	roots := p.resolvedRoots()
	for _, f := range s {
		if f.Role != Configures && f.Role != Executes || !filepath.IsAbs(f.Path) {
			continue
		}
		if msg := p.problem(f, roots); msg != "" {
			errs.Add(f.Where.Errorf("%s", msg))
		}
	}
	return errs.Err()
}

func (p Placement) lstat(name string) (fs.FileInfo, error) {
	if p.Lstat != nil {
		return p.Lstat(name)
	}
	return os.Lstat(name)
}

func (p Placement) readlink(name string) (string, error) {
	if p.Readlink != nil {
		return p.Readlink(name)
	}
	return os.Readlink(name)
}

// resolvedRoots are the writable roots as written and as resolved: a
// component is inside a root if it is inside either.
func (p Placement) resolvedRoots() []string {
	var out []string
	for _, r := range p.WritableRoots {
		out = append(out, filepath.Clean(r))
		if real, err := p.resolve(r); err == nil && real != filepath.Clean(r) {
			out = append(out, real)
		}
	}
	return out
}

// step is one component met while resolving a path.
type step struct {
	path string
	info fs.FileInfo
}

// walk resolves path component by component, returning every directory,
// symlink and the final file it met, in order. A missing component ends
// the walk with fs.ErrNotExist.
func (p Placement) walk(path string) ([]step, error) {
	var steps []step
	rest := strings.Split(strings.TrimPrefix(filepath.Clean(path), "/"), "/")
	cur := "/"
	if fi, err := p.lstat("/"); err == nil {
		steps = append(steps, step{"/", fi})
	}
	links := 0
	for len(rest) > 0 {
		part := rest[0]
		rest = rest[1:]
		if part == "" || part == "." {
			continue
		}
		if part == ".." {
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, part)
		fi, err := p.lstat(next)
		if err != nil {
			return steps, err
		}
		steps = append(steps, step{next, fi})
		if fi.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if links++; links > maxLinks {
			return steps, fmt.Errorf("%s: too many levels of symbolic links", path)
		}
		target, err := p.readlink(next)
		if err != nil {
			return steps, err
		}
		if filepath.IsAbs(target) {
			cur = "/"
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return steps, nil
}

// resolve is the real path walk reaches.
func (p Placement) resolve(path string) (string, error) {
	steps, err := p.walk(path)
	if err != nil {
		return "", err
	}
	// The last non-symlink component is where the walk ended.
	for i := len(steps) - 1; i >= 0; i-- {
		if steps[i].info.Mode()&fs.ModeSymlink == 0 {
			return steps[i].path, nil
		}
	}
	return "/", nil
}

// problem says why f could be rewritten by a run, or "".
func (p Placement) problem(f File, roots []string) string {
	steps, err := p.walk(f.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	if err != nil {
		return fmt.Sprintf("%q: %v", f.Path, err)
	}
	what := f.describe()
	for i, s := range steps {
		// A program inside a workspace root (a checkout's bin/) is kept
		// read-only in every run instead (Set.Protected): refusing it
		// would refuse the developer who runs the gateway from its build.
		for _, r := range roots {
			if f.Role == Configures && within(r, s.path) {
				return fmt.Sprintf("%q: %s is inside the workspace root %s, which sandboxed commands can write: a command could rewrite %s. Keep it outside every workspace root (e.g. under /etc/mitrity)",
					f.Path, shown(s.path, f.Path), r, what)
			}
		}
		uid, gid, ok := owner(s.info)
		if !ok {
			continue
		}
		mode := s.info.Mode()
		if mode&fs.ModeSymlink != 0 {
			continue // a symlink's own owner and mode do not decide who can re-point it: its directory's do
		}
		switch {
		case p.Euid == 0 && uid != 0:
			return fmt.Sprintf("%q: %s is owned by %s, who could replace %s: a gateway running as root uses only files that root alone can change. chown root:root, or move it under /etc/mitrity",
				f.Path, shown(s.path, f.Path), userName(uid), what)
		case uid != 0 && uid != p.Euid:
			return fmt.Sprintf("%q: %s is owned by %s, who could replace %s: the gateway uses only what root and its own user (%s) can change. chown it, or move the file",
				f.Path, shown(s.path, f.Path), userName(uid), what, userName(p.Euid))
		}
		sticky := mode.IsDir() && mode&fs.ModeSticky != 0
		next := i+1 < len(steps)
		switch {
		case mode.Perm()&0o002 != 0 && !(sticky && next):
			return fmt.Sprintf("%q: %s is writable by every user (mode %04o), so a command could replace %s. chmod o-w", f.Path, shown(s.path, f.Path), mode.Perm(), what)
		case mode.Perm()&0o020 != 0 && !(sticky && next) && p.groupCanWrite(gid):
			return fmt.Sprintf("%q: %s is writable by group %d, the group commands run as (exec.run_as), so a command could replace %s. chmod g-w", f.Path, shown(s.path, f.Path), gid, what)
		case p.Euid == 0 && mode.Perm()&0o020 != 0 && !(sticky && next) && gid != 0:
			return fmt.Sprintf("%q: %s is writable by group %d: a gateway running as root reads only files that root alone can change. chmod g-w", f.Path, shown(s.path, f.Path), gid)
		}
	}
	return ""
}

// groupCanWrite: the run user's only group is its primary one (runs drop
// every supplementary group).
func (p Placement) groupCanWrite(gid int) bool {
	return p.RunAs != nil && p.RunAs.GID == gid
}

func owner(fi fs.FileInfo) (uid, gid int, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return int(st.Uid), int(st.Gid), true
}

func shown(component, path string) string {
	if component == filepath.Clean(path) {
		return "it"
	}
	return component
}

func userName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return fmt.Sprintf("%s (uid %d)", u.Username, uid)
	}
	return fmt.Sprintf("uid %d", uid)
}

// within reports whether p is root or below it, lexically.
func within(root, p string) bool {
	return p == root || strings.HasPrefix(p, strings.TrimSuffix(root, "/")+"/")
}
