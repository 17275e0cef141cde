package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A protected path is something a host program runs or reads config
// from without being asked (git's metadata, shell rc files, an agent
// framework's or editor's project settings): a run may read it and must
// never change it. Inside a writable root that takes more than a
// read-only bind over the path:
//
//   - the bind itself (a mount point cannot be renamed over or unlinked);
//   - every directory between the root and the path made a mount point of
//     itself, because a parent that can be renamed away (mv .git .git-old)
//     and replaced takes the path with it ("anchors");
//   - a name that does not exist cannot be bound without creating it on
//     the host, so its creation is watched: the run is killed the moment
//     it appears, and what it made is moved aside (quarantined);
//   - after the run, the content of every protected path is compared with
//     what it held before, so a change that slipped through is reported.
//
// protection is that plan for one run.
type protection struct {
	readOnly []string // existing paths (resolved), bound read-only over themselves
	anchors  []string // directories and files (resolved) bound over themselves, parents first
	watches  []watch  // missing names whose creation kills the run
	// reported are missing paths whose creation is reported, not
	// prevented: a new repository (.git) where there was none.
	reported []string
	// digests are the protected paths' contents before the run.
	digests map[string]string
}

// watch is one directory whose entries named in names must not appear
// (or, for a symlink that stands for a protected path, change), and whose
// held entries must not change at all: a mask or cover of the run sits on
// them or below them (see masks.go).
type watch struct {
	dir   string
	names []string
	held  map[string]heldName
}

// protectedSet is what planProtection protects.
type protectedSet struct {
	// roots are the writable roots (resolved): a run can change nothing
	// else, so nothing else needs protecting.
	roots []string
	// relative names, under every root (ProtectedNames and the spec's
	// extra), and absolute paths (the gateway's programs, a settings
	// file's denyWrite).
	relative []string
	absolute []string
	// cwd is the run's working directory: every repository between a root
	// and it is protected like the root's own.
	cwd string
}

// planProtection resolves what s protects against the host, as the
// calling thread sees it.
func planProtection(s protectedSet) protection {
	p := protection{digests: map[string]string{}}
	seen := map[string]bool{}
	var cands []string
	for _, r := range s.roots {
		for _, n := range s.relative {
			cands = append(cands, filepath.Join(r, n))
		}
	}
	for _, a := range s.absolute {
		if rootOf(s.roots, a) != "" {
			cands = append(cands, a)
		}
	}
	git := gitDirs(s.roots, s.cwd)
	for _, g := range git.dirs {
		// The directory itself is a mount point: mv .git .git-old fails.
		p.anchor(s.roots, g.dir, seen)
		for _, m := range g.placeholders() {
			// An empty hooks or info directory is what git init makes: a
			// harmless thing to create so that it can be held.
			if rootOf(s.roots, m) != "" {
				if _, err := os.Lstat(m); os.IsNotExist(err) {
					os.Mkdir(m, 0o755)
				}
			}
		}
		cands = append(cands, g.protected()...)
	}
	cands = append(cands, git.pointers...)
	for _, c := range cands {
		p.protect(s.roots, filepath.Clean(c), seen)
	}
	// Parents before children: a bind over a directory after one inside it
	// would cover it.
	slices.SortStableFunc(p.anchors, func(a, b string) int { return depth(a) - depth(b) })
	return p
}

// protect adds one candidate: bound read-only when it exists (with its
// parents anchored), watched when it does not.
func (p *protection) protect(roots []string, c string, seen map[string]bool) {
	root := rootOf(roots, c)
	if root == "" {
		return
	}
	// Walk from the root down, lexically, as a host program names it.
	rel := strings.TrimPrefix(strings.TrimPrefix(c, root), "/")
	dir := root
	parts := strings.Split(rel, "/")
	for i, part := range parts {
		next := filepath.Join(dir, part)
		fi, err := os.Lstat(next)
		if err != nil {
			// Missing: below a missing .git is a repository not made yet,
			// which git init makes legitimately: reported, not killed.
			if part == ".git" {
				p.reported = appendNew(p.reported, c)
				return
			}
			p.watch(dir, part)
			return
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			// A symlink in a writable directory can be replaced, and a
			// mount cannot hold it (mounts follow it): its name is watched,
			// and what it leads to is protected where it is.
			p.watch(dir, part)
			if real, err := filepath.EvalSymlinks(next); err == nil {
				rest := filepath.Join(append([]string{real}, parts[i+1:]...)...)
				if rootOf(roots, rest) != "" && rest != c {
					p.protect(roots, rest, seen)
				}
			}
			return
		}
		if i < len(parts)-1 {
			if !fi.IsDir() {
				return // nothing can be created below a file
			}
			p.anchor(roots, next, seen)
			dir = next
			continue
		}
		if !seen["ro:"+next] {
			seen["ro:"+next] = true
			p.readOnly = append(p.readOnly, next)
			p.digests[next] = digest(next)
		}
	}
}

// anchor makes x, and every directory between its root and it, a mount
// point of itself.
func (p *protection) anchor(roots []string, x string, seen map[string]bool) {
	root := rootOf(roots, x)
	if root == "" || x == root {
		return
	}
	for d := x; d != root && d != "/" && d != "."; d = filepath.Dir(d) {
		if seen["anchor:"+d] {
			continue
		}
		fi, err := os.Lstat(d)
		if err != nil || fi.Mode()&os.ModeSymlink != 0 {
			continue
		}
		seen["anchor:"+d] = true
		p.anchors = append(p.anchors, d)
	}
}

func (p *protection) watch(dir, name string) {
	for i := range p.watches {
		if p.watches[i].dir == dir {
			if !slices.Contains(p.watches[i].names, name) {
				p.watches[i].names = append(p.watches[i].names, name)
			}
			return
		}
	}
	p.watches = append(p.watches, watch{dir: dir, names: []string{name}})
}

// changed lists the protected paths whose content differs from before the
// run (or that are gone).
func (p protection) changed() []string {
	var out []string
	for _, path := range p.readOnly {
		if digest(path) != p.digests[path] {
			out = append(out, path)
		}
	}
	return out
}

// created lists the reported paths that exist now.
func (p protection) created() []string {
	var out []string
	for _, path := range p.reported {
		if _, err := os.Lstat(path); err == nil {
			out = append(out, path)
		}
	}
	return out
}

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}
