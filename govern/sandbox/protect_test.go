package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// A tree with a repository at the root, a linked worktree, a submodule, a
// nested repository on the way to the working directory, rc files, and a
// protected name that is a symlink.
func TestPlanProtection(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	root := filepath.Join(base, "ws")
	outside := filepath.Join(base, "outside")
	mk := func(p string, dir bool) {
		t.Helper()
		if dir {
			assert.NilError(t, os.MkdirAll(p, 0o755))
			return
		}
		assert.NilError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		assert.NilError(t, os.WriteFile(p, []byte(filepath.Base(p)), 0o644))
	}
	j := func(p ...string) string { return filepath.Join(append([]string{root}, p...)...) }
	mk(j(".git", "config"), false)
	mk(j(".git", "hooks", "pre-commit.sample"), false)
	mk(j(".git", "objects"), true)
	// No info: a placeholder is made. No commondir, no config.worktree:
	// watched.
	mk(j(".bashrc"), false)
	assert.NilError(t, os.Symlink("/nonexistent/target", j(".profile")))
	mk(outside, true)
	assert.NilError(t, os.Symlink(outside, j(".claude")))
	// A linked worktree of the root's repository.
	mk(j(".git", "worktrees", "wt", "commondir"), false)
	assert.NilError(t, os.WriteFile(j(".git", "worktrees", "wt", "commondir"), []byte("../..\n"), 0o644))
	mk(j("wt"), true)
	assert.NilError(t, os.WriteFile(j(".git", "worktrees", "wt", "gitdir"), []byte(j("wt", ".git")+"\n"), 0o644))
	assert.NilError(t, os.WriteFile(j("wt", ".git"), []byte("gitdir: "+j(".git", "worktrees", "wt")+"\n"), 0o644))
	// A submodule.
	assert.NilError(t, os.WriteFile(j(".gitmodules"), []byte("[submodule \"sub\"]\n\tpath = sub\n\turl = x\n"), 0o644))
	mk(j(".git", "modules", "sub", "config"), false)
	mk(j(".git", "modules", "sub", "hooks"), true)
	mk(j("sub"), true)
	assert.NilError(t, os.WriteFile(j("sub", ".git"), []byte("gitdir: ../.git/modules/sub\n"), 0o644))
	// A repository between the root and the working directory.
	mk(j("a", "b", ".git", "config"), false)
	mk(j("a", "b", "c"), true)

	p := planProtection(protectedSet{roots: []string{root}, relative: ProtectedNames, cwd: j("a", "b", "c")})

	for _, ro := range []string{
		j(".git", "config"), j(".git", "hooks"), j(".git", "info"), j(".bashrc"), j(".gitmodules"),
		j(".git", "worktrees", "wt", "commondir"), j(".git", "worktrees", "wt", "gitdir"), j("wt", ".git"),
		j(".git", "modules", "sub", "config"), j(".git", "modules", "sub", "hooks"), j("sub", ".git"),
		j("a", "b", ".git", "config"),
	} {
		assert.Check(t, slices.Contains(p.readOnly, ro), "%s is not held read-only: %v", ro, p.readOnly)
		assert.Check(t, p.digests[ro] != "", "%s has no digest", ro)
	}
	fi, err := os.Stat(j(".git", "info"))
	assert.Check(t, err == nil && fi.IsDir(), "no info placeholder: %v", err)
	for _, a := range []string{j(".git"), j(".git", "worktrees", "wt"), j(".git", "modules", "sub"), j(".git", "worktrees"), j("a"), j("a", "b"), j("a", "b", ".git")} {
		assert.Check(t, slices.Contains(p.anchors, a), "%s is not anchored: %v", a, p.anchors)
	}
	assert.Check(t, slices.IsSortedFunc(p.anchors, func(a, b string) int { return depth(a) - depth(b) }), "anchors not parents first: %v", p.anchors)
	watched := func(dir, name string) bool {
		for _, w := range p.watches {
			if w.dir == dir && slices.Contains(w.names, name) {
				return true
			}
		}
		return false
	}
	for _, w := range [][2]string{
		{j(".git"), "commondir"}, {j(".git"), "config.worktree"}, {root, ".vscode"}, {root, ".mcp.json"},
		{root, ".claude"}, {root, ".profile"}, {j(".git", "modules", "sub"), "commondir"},
	} {
		assert.Check(t, watched(w[0], w[1]), "%s/%s is not watched: %+v", w[0], w[1], p.watches)
	}
	assert.Check(t, !watched(root, ".git"), "an existing .git is held, not watched")
	assert.Check(t, is.Len(p.changed(), 0))
	assert.NilError(t, os.WriteFile(j(".git", "config"), []byte("[core]\n\tfsmonitor = evil\n"), 0o644))
	assert.Check(t, is.DeepEqual(p.changed(), []string{j(".git", "config")}))
	assert.NilError(t, os.WriteFile(j(".git", "hooks", "post-checkout"), []byte("evil"), 0o755))
	assert.Check(t, slices.Contains(p.changed(), j(".git", "hooks")), "a new hook is a change of hooks: %v", p.changed())
}

// Where there is no repository, git init makes one legitimately: its
// metadata is reported when it appears, never watched.
func TestPlanProtectionNoRepository(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	p := planProtection(protectedSet{roots: []string{root}, relative: ProtectedNames})
	assert.Check(t, slices.Contains(p.reported, filepath.Join(root, ".git/hooks")))
	assert.Check(t, slices.Contains(p.reported, filepath.Join(root, ".git/config")))
	for _, w := range p.watches {
		assert.Check(t, !slices.Contains(w.names, ".git"), "%+v", w)
	}
	assert.Check(t, is.Len(p.created(), 0))
	assert.NilError(t, os.MkdirAll(filepath.Join(root, ".git", "hooks"), 0o755))
	assert.Check(t, slices.Contains(p.created(), filepath.Join(root, ".git/hooks")))
}

// Paths outside every writable root are read-only already: nothing to
// hold. An absolute path inside one (the gateway's program in a
// checkout's bin/) is held, its directories anchored.
func TestPlanProtectionAbsolute(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	root := filepath.Join(base, "ws")
	bin := filepath.Join(root, "tools", "bin", "mitrity-gateway")
	assert.NilError(t, os.MkdirAll(filepath.Dir(bin), 0o755))
	assert.NilError(t, os.WriteFile(bin, []byte("ELF"), 0o755))
	p := planProtection(protectedSet{roots: []string{root}, absolute: []string{bin, "/usr/bin/env"}})
	assert.Check(t, is.DeepEqual(p.readOnly, []string{bin}))
	assert.Check(t, is.DeepEqual(p.anchors, []string{filepath.Join(root, "tools"), filepath.Join(root, "tools", "bin")}))
}

// What a repository's config names inside the worktree is held like its
// hooks: core.hooksPath, core.fsmonitor, a filter's program, an alias's
// shell command, an included file and what it names.
func TestConfigPaths(t *testing.T) {
	t.Parallel()
	wt := t.TempDir()
	cfg := filepath.Join(wt, ".git", "config")
	assert.NilError(t, os.MkdirAll(filepath.Dir(cfg), 0o755))
	assert.NilError(t, os.WriteFile(cfg, []byte(`[core]
	repositoryformatversion = 0
	hooksPath = .husky
	FSMonitor = "./tools/watch.sh --fast" ; a comment
	pager = less
	editor = /usr/bin/vim
[filter "lfs"]
	clean = scripts/clean %f
	smudge = git-lfs smudge -- %f
[alias]
	up = !./bin/up.sh --all
	st = status
[include]
	path = ../shared.gitconfig
[credential "https://x"]
	helper = ~/bin/helper
`), 0o644))
	assert.NilError(t, os.WriteFile(filepath.Join(wt, "shared.gitconfig"), []byte("[diff \"x\"]\n\ttextconv = ./conv.sh\n"), 0o644))
	got := configPaths(cfg, wt)
	want := []string{
		filepath.Join(wt, ".husky"), filepath.Join(wt, "tools/watch.sh"), "/usr/bin/vim", filepath.Join(wt, "scripts/clean"),
		filepath.Join(wt, "bin/up.sh"), filepath.Join(wt, "conv.sh"), filepath.Join(wt, "shared.gitconfig"),
	}
	slices.Sort(got)
	slices.Sort(want)
	assert.Check(t, is.DeepEqual(got, want))
}
