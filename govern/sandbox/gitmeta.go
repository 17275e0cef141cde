package sandbox

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
)

// Git executes from a repository's metadata: its config (core.fsmonitor,
// core.hooksPath, pagers, editors, filters and diff drivers, credential
// helpers, aliases), its hooks, and whatever a commondir or a gitdir:
// pointer leads it to. A host git run later in the workspace (a
// developer's git status, an IDE polling it) runs what is there, outside
// every sandbox. gitDirs finds the repositories a run could reach that
// way, at plan time; planProtection holds their metadata.

// commonNames are what git reads from a repository's common directory;
// linkedNames from a linked worktree's own.
var (
	commonNames = []string{"config", "config.worktree", "hooks", "info", "commondir"}
	linkedNames = []string{"commondir", "gitdir", "config.worktree"}
	// placeholderNames are made (empty) when missing, to be held: an empty
	// directory of that name is what git init makes.
	placeholderNames = []string{"hooks", "info"}
)

// Bounds on discovery: a run's start must not walk a large tree.
const (
	maxGitDirs     = 64
	maxModuleDepth = 3
	maxSubmodules  = 256
)

// gitDir is one git directory a host git could read.
type gitDir struct {
	dir    string // resolved
	common bool   // holds config and hooks (not a linked worktree's own)
	// worktree is the top of the worktree the directory is a .git of,
	// where git resolves the relative paths its config names; "" when
	// not known (a submodule's, a linked worktree's common directory).
	worktree string
}

// protected is every path of g a run must not change or create.
func (g gitDir) protected() []string {
	names := linkedNames
	if g.common {
		names = commonNames
	}
	out := make([]string, 0, len(names))
	for _, n := range names {
		out = append(out, filepath.Join(g.dir, n))
	}
	if g.worktree != "" {
		for _, c := range []string{"config", "config.worktree"} {
			out = append(out, configPaths(filepath.Join(g.dir, c), g.worktree)...)
		}
	}
	return out
}

// placeholders are the missing names of g made before they are held.
func (g gitDir) placeholders() []string {
	if !g.common {
		return nil
	}
	var out []string
	for _, n := range placeholderNames {
		out = append(out, filepath.Join(g.dir, n))
	}
	return out
}

// repos is what gitDirs found: the git directories (each a directory to
// anchor, so that it cannot be renamed away and replaced) and the .git
// files that point at one (each held read-only where it is).
type repos struct {
	dirs     []gitDir
	pointers []string
}

// gitDirs finds the repositories of every root and of every directory
// between a root and cwd: their git directories, what a .git file or a
// commondir points to, linked worktrees' and submodules' directories.
func gitDirs(roots []string, cwd string) repos {
	f := gitFinder{seen: map[string]bool{}}
	for _, r := range roots {
		f.worktree(r)
		if cwd != "" && within(r, cwd) {
			for d := cwd; d != r && within(r, d); d = filepath.Dir(d) {
				f.worktree(d)
			}
		}
	}
	return f.repos
}

type gitFinder struct {
	repos
	seen map[string]bool
}

// worktree looks at d/.git (and d/.gitmodules).
func (f *gitFinder) worktree(d string) {
	dotgit := filepath.Join(d, ".git")
	fi, err := os.Lstat(dotgit)
	if err != nil {
		return
	}
	switch {
	case fi.IsDir():
		f.add(dotgit, d, 0)
	case fi.Mode().IsRegular():
		f.pointers = appendNew(f.pointers, dotgit)
		if g := readGitFile(dotgit); g != "" {
			f.add(g, d, 0)
		}
	}
	f.submodules(d)
}

// add records the git directory dir, the common directory its commondir
// leads to, and the repositories inside a common one: linked worktrees'
// directories and submodules'.
func (f *gitFinder) add(dir, worktree string, depth int) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil || f.seen[real] || len(f.dirs) >= maxGitDirs {
		return
	}
	f.seen[real] = true
	linked := false
	if c, err := os.ReadFile(filepath.Join(real, "commondir")); err == nil {
		linked = true
		target := strings.TrimSpace(string(c))
		if !filepath.IsAbs(target) {
			target = filepath.Join(real, target)
		}
		f.add(target, "", depth+1)
	}
	f.dirs = append(f.dirs, gitDir{dir: real, common: !linked, worktree: worktree})
	if linked {
		// A linked worktree's gitdir file names its .git file, wherever
		// that worktree is.
		if b, err := os.ReadFile(filepath.Join(real, "gitdir")); err == nil && len(b) < 4096 {
			if p := strings.TrimSpace(string(b)); filepath.IsAbs(p) && filepath.Base(p) == ".git" {
				f.pointers = appendNew(f.pointers, filepath.Clean(p))
			}
		}
		return
	}
	if depth >= maxModuleDepth {
		return
	}
	for _, sub := range []string{"worktrees", "modules"} {
		entries, err := os.ReadDir(filepath.Join(real, sub))
		if err != nil {
			continue
		}
		for _, e := range entries {
			if e.IsDir() {
				f.add(filepath.Join(real, sub, e.Name()), "", depth+1)
			}
		}
	}
}

// submodules follows the paths .gitmodules lists to their .git files.
func (f *gitFinder) submodules(d string) {
	b, err := os.ReadFile(filepath.Join(d, ".gitmodules"))
	if err != nil {
		return
	}
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() && n < maxSubmodules {
		key, val, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if !ok || strings.TrimSpace(key) != "path" {
			continue
		}
		p := filepath.Clean(strings.Trim(strings.TrimSpace(val), `"`))
		if p == "." || filepath.IsAbs(p) || strings.HasPrefix(p, "..") {
			continue
		}
		n++
		dotgit := filepath.Join(d, p, ".git")
		if fi, err := os.Lstat(dotgit); err == nil && fi.Mode().IsRegular() {
			f.pointers = appendNew(f.pointers, dotgit)
			if g := readGitFile(dotgit); g != "" {
				f.add(g, filepath.Join(d, p), 1)
			}
		}
	}
}

// readGitFile returns the directory a .git file names ("gitdir: X",
// relative to the file's directory), or "".
func readGitFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) > 4096 {
		return ""
	}
	line, _, _ := strings.Cut(string(b), "\n")
	g, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
	if !ok {
		return ""
	}
	g = strings.TrimSpace(g)
	if g == "" {
		return ""
	}
	if !filepath.IsAbs(g) {
		g = filepath.Join(filepath.Dir(path), g)
	}
	return filepath.Clean(g)
}
