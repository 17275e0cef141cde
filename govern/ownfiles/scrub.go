package ownfiles

import (
	"cmp"
	"path/filepath"
	"slices"
	"strings"
)

// Scrubber takes the host paths of the gateway's own files out of text an
// agent reads (an error from bubblewrap, a denial's reason): where the
// policy, a credential file or the audit log lives is the operator's to
// know, and a path is the first thing an attack on them needs. Each path
// becomes what it is, in angle brackets ("<the policy that judges every
// command>"). A path inside a workspace root is the agent's own and is
// left alone, even where a kept directory holds the root.
type Scrubber struct {
	paths []scrubPath // longest first: the most specific name wins
	roots []string
}

type scrubPath struct {
	path, what string
	dir        bool
}

// Scrubber returns the scrubber for s, which leaves roots (resolved or
// not) and what is inside them alone.
func (s Set) Scrubber(roots []string) *Scrubber {
	sc := &Scrubber{}
	seen := map[string]bool{}
	add := func(p string, f File) {
		p = filepath.Clean(p)
		if !filepath.IsAbs(p) || p == "/" || seen[p] {
			return
		}
		seen[p] = true
		sc.paths = append(sc.paths, scrubPath{path: p, what: "<" + f.describe() + ">", dir: f.Role == Keeps})
	}
	for _, f := range s {
		add(f.Path, f)
		if real, err := filepath.EvalSymlinks(f.Path); err == nil {
			add(real, f)
		}
	}
	slices.SortStableFunc(sc.paths, func(a, b scrubPath) int { return cmp.Compare(len(b.path), len(a.path)) })
	for _, r := range roots {
		sc.roots = append(sc.roots, filepath.Clean(r))
		if real, err := filepath.EvalSymlinks(r); err == nil {
			sc.roots = append(sc.roots, real)
		}
	}
	return sc
}

// Scrub returns text with every own path replaced.
func (sc *Scrubber) Scrub(text string) string {
	if sc == nil || len(sc.paths) == 0 || !strings.Contains(text, "/") {
		return text
	}
	var b strings.Builder
	last := 0
	for i := 0; i < len(text); i++ {
		// A path starts after a byte that is no part of a name, or right
		// where a replaced one ended: what the agent reads there is the
		// replacement's '>', and /d/d/policy.yaml under a kept /d must not
		// come out as <kept>/d/policy.yaml.
		if text[i] != '/' || (i > 0 && i != last && nameByte(text[i-1])) {
			continue
		}
		for _, p := range sc.paths {
			if !strings.HasPrefix(text[i:], p.path) {
				continue
			}
			end := i + len(p.path)
			if end < len(text) && nameByte(text[end]) {
				continue // a longer name: policy.yaml.bak is not policy.yaml
			}
			if end < len(text) && text[end] == '/' && (!p.dir || sc.inRoot(text[i:])) {
				// Below a file is not a path; below a kept directory, a
				// workspace root is the agent's.
				continue
			}
			b.WriteString(text[last:i])
			b.WriteString(p.what)
			last, i = end, end-1
			break
		}
	}
	if last == 0 {
		return text
	}
	b.WriteString(text[last:])
	return b.String()
}

// inRoot reports whether the path text starts with is inside a workspace
// root.
func (sc *Scrubber) inRoot(text string) bool {
	for _, r := range sc.roots {
		if strings.HasPrefix(text, r) && (len(text) == len(r) || text[len(r)] == '/' || !nameByte(text[len(r)])) {
			return true
		}
	}
	return false
}

// nameByte is a byte that continues a file name.
func nameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' || c == '+' || c == '~' || c >= 0x80
}
