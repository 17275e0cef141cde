package sandbox

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// CoverOp is one mount made before the workspace roots to hide a
// directory and put back part of it: a cover is an empty tmpfs over a
// directory (read-only once everything inside is mounted) that still holds
// something the sandbox must reach — a settings file's denyRead directory
// holding a workspace root or an allowRead path, a masked directory holding
// a root, the directory of masked files (see masks.go); a reveal binds a
// path back inside a cover, read-only (an allowRead path, an entry of a
// covered directory); a link re-creates a symlink inside a cover.
type CoverOp struct {
	Path   string
	Reveal bool
	// Link, when set, is the target of a symlink made at Path.
	Link string
	// Perms and Size of a cover's tmpfs; zero: 0111 (crossable, not
	// listable) and 4096 bytes.
	Perms os.FileMode
	Size  int64
}

// cover reports whether c is a tmpfs (not a reveal or a link).
func (c CoverOp) cover() bool { return !c.Reveal && c.Link == "" }

// pathInfo is what the planner needs to know of a path on the host, as the
// sandbox's user sees it.
type pathInfo struct {
	Real   string // resolved through symlinks; the clean path itself when absent
	Exists bool
	Dir    bool
}

// narrowPlan is a Narrowing resolved against the host and the run.
type narrowPlan struct {
	covers     []CoverOp // in mount order: ancestors first
	masks      []Mask    // denyRead paths hidden outright
	roRoots    []string  // workspace roots bound read-only
	writeBinds []string  // allowWrite paths bound writable inside read-only roots
	readOnly   []string  // existing denyWrite paths inside writable parts
	absent     []string  // denyWrite paths inside writable parts that do not exist
	notes      []string
}

// expandNarrowPath turns one path of a Narrowing into host paths: ~ is
// home, a relative path names that path in every root.
func expandNarrowPath(p string, roots []string, home string) ([]string, error) {
	switch {
	case p == "~" || strings.HasPrefix(p, "~/"):
		if home == "" {
			return nil, fmt.Errorf("%q: the sandbox's user has no home directory in /etc/passwd to resolve ~ against", p)
		}
		return []string{filepath.Join(home, strings.TrimPrefix(p, "~"))}, nil
	case filepath.IsAbs(p):
		return []string{filepath.Clean(p)}, nil
	}
	out := make([]string, 0, len(roots))
	for _, r := range roots {
		out = append(out, filepath.Join(r, p))
	}
	return out, nil
}

// planNarrowing resolves n for the (resolved) workspace roots. stat tells
// what a path is on the host; home is the sandbox user's home.
func planNarrowing(n *Narrowing, roots []string, home string, stat func(string) pathInfo) (narrowPlan, error) {
	var p narrowPlan
	if n == nil {
		return p, nil
	}
	resolve := func(paths []string) ([]pathInfo, error) {
		var out []pathInfo
		seen := map[string]bool{}
		for _, raw := range paths {
			exp, err := expandNarrowPath(raw, roots, home)
			if err != nil {
				return nil, err
			}
			for _, e := range exp {
				if pi := stat(e); !seen[pi.Real] {
					seen[pi.Real] = true
					out = append(out, pi)
				}
			}
		}
		return out, nil
	}
	denyRead, err := resolve(n.DenyRead)
	if err != nil {
		return p, err
	}
	allowRead, err := resolve(n.AllowRead)
	if err != nil {
		return p, err
	}
	allowWrite, err := resolve(n.AllowWrite)
	if err != nil {
		return p, err
	}
	denyWrite, err := resolve(n.DenyWrite)
	if err != nil {
		return p, err
	}
	inRoot := func(x string) bool {
		return slices.ContainsFunc(roots, func(r string) bool { return within(r, x) })
	}

	// Writes. Without allowWrite every root stays writable; with it, a root
	// is writable only when an allowWrite path holds it, and otherwise only
	// the allowWrite paths inside it are. denyWrite wins over both.
	writable := map[string]bool{}
	for _, r := range roots {
		w := !n.LimitWrite || slices.ContainsFunc(allowWrite, func(a pathInfo) bool { return within(a.Real, r) })
		if slices.ContainsFunc(denyWrite, func(d pathInfo) bool { return within(d.Real, r) }) {
			w = false
		}
		writable[r] = w
		if !w {
			p.roRoots = append(p.roRoots, r)
		}
	}
	deniedWrite := func(x string) bool {
		return slices.ContainsFunc(denyWrite, func(d pathInfo) bool { return within(d.Real, x) })
	}
	if n.LimitWrite {
		for _, a := range allowWrite {
			switch {
			case !inRoot(a.Real):
				if !slices.ContainsFunc(roots, func(r string) bool { return within(a.Real, r) }) {
					p.notes = append(p.notes, fmt.Sprintf("settings allowWrite %s is outside every workspace root: ignored (the host there is read-only)", a.Real))
				}
			case writable[rootOf(roots, a.Real)] || deniedWrite(a.Real):
			case !a.Exists:
				p.notes = append(p.notes, fmt.Sprintf("settings allowWrite %s does not exist: it stays uncreatable (creating it would write to the host)", a.Real))
			default:
				p.writeBinds = append(p.writeBinds, a.Real)
			}
		}
	}
	writableAt := func(x string) bool {
		if r := rootOf(roots, x); r != "" && writable[r] {
			return true
		}
		return slices.ContainsFunc(p.writeBinds, func(w string) bool { return within(w, x) })
	}
	for _, d := range denyWrite {
		switch {
		case !writableAt(d.Real):
		case d.Exists:
			p.readOnly = append(p.readOnly, d.Real)
		default:
			p.absent = append(p.absent, d.Real)
		}
	}

	// Reads. allowRead only carves into denyRead, and only outside the
	// roots: inside one it could uncover what a pin binds over.
	var reveals []string
	for _, a := range allowRead {
		switch {
		case !a.Exists:
		case inRoot(a.Real):
			p.notes = append(p.notes, fmt.Sprintf("settings allowRead %s is inside a workspace root: ignored", a.Real))
		default:
			reveals = append(reveals, a.Real)
		}
	}
	for _, d := range denyRead {
		if !d.Exists || d.Real == "/" || hiddenInSandbox(d.Real, roots) || slices.Contains(reveals, d.Real) {
			continue
		}
		holds := func(x string) bool { return within(d.Real, x) }
		if d.Dir && (slices.ContainsFunc(roots, holds) || slices.ContainsFunc(reveals, func(a string) bool { return a != d.Real && holds(a) })) {
			p.covers = append(p.covers, CoverOp{Path: d.Real})
			continue
		}
		p.masks = append(p.masks, Mask{Path: d.Real, Dir: d.Dir})
	}
	for _, a := range reveals {
		if slices.ContainsFunc(p.covers, func(c CoverOp) bool { return within(c.Path, a) && c.Path != a }) {
			p.covers = append(p.covers, CoverOp{Path: a, Reveal: true})
		}
	}
	slices.SortStableFunc(p.covers, func(a, b CoverOp) int {
		if d := depth(a.Path) - depth(b.Path); d != 0 {
			return d
		}
		return boolInt(a.Reveal) - boolInt(b.Reveal)
	})
	return p, nil
}

// hiddenByCovers reports whether x ends up under a cover rather than in a
// workspace root or a reveal: the deepest of those holding it decides.
func (p narrowPlan) hiddenByCovers(x string, roots []string) bool {
	return hiddenByCovers(p.covers, roots, x)
}

// hiddenByCovers reports whether x ends up under one of covers (in mount
// order) rather than in a workspace root or a reveal.
func hiddenByCovers(covers []CoverOp, roots []string, x string) bool {
	if rootOf(roots, x) != "" {
		return false
	}
	hidden := false
	for _, c := range covers { // ancestors first: the last match is the deepest
		if within(c.Path, x) {
			hidden = c.cover()
		}
	}
	return hidden
}

// masked reports whether x is inside one of the plan's masks.
func (p narrowPlan) masked(x string) bool {
	return slices.ContainsFunc(p.masks, func(m Mask) bool { return within(m.Path, x) })
}

func rootOf(roots []string, x string) string {
	for _, r := range roots {
		if within(r, x) {
			return r
		}
	}
	return ""
}

func depth(p string) int { return strings.Count(filepath.Clean(p), "/") }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// homeOf returns uid's home directory from passwd, or "".
func homeOf(passwd []byte, uid int) string {
	sc := bufio.NewScanner(bytes.NewReader(passwd))
	for sc.Scan() {
		f := strings.Split(sc.Text(), ":")
		if len(f) >= 6 && f[2] == strconv.Itoa(uid) && filepath.IsAbs(f[5]) {
			return filepath.Clean(f[5])
		}
	}
	return ""
}
