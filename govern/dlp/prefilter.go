package dlp

import (
	"bytes"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode"
)

// Most lines that hold a detector's keyword hold no secret, and Go's
// regexp engines are slow on gitleaks' patterns (x{0,50} compiles to fifty
// states, all live at once). So before a line detector's regexp runs, a
// cheaper necessary condition is checked:
//
//   - relaxed: the pattern with its repetition bounds dropped and the
//     optional parts at either end cut off. It matches wherever the
//     original does (and elsewhere), with far fewer states.
//   - anchored: when every match of the relaxed pattern must start with
//     one of the detector's keywords, the relaxed pattern only has to be
//     tried, anchored, where the keyword automaton found one: a handful of
//     attempts instead of one per byte.
//
// Neither changes a result: a line they reject has no match.
//   - anchored at literals: when every match starts with one of a few
//     other strings (gitleaks' "lob" rule keys on test_ and live_, which
//     sit later in the token), those are looked for in the lower-cased
//     line and the anchored pattern tried where they occur.
//   - heads: before the anchored pattern runs at a position, the bytes
//     there must spell one of the strings every match starts with, and
//     the byte after must be one that can follow it. Most keyword matches
//     in clean text (auth/session, Task :app) fail here for the price of
//     a compare, not a regexp call.
type prefilters struct {
	relaxed  *regexp.Regexp // nil when it would gain nothing
	anchored *regexp.Regexp // \A(?:relaxed); nil unless anchorable
	atKw     bool           // anchor at the detector's keyword matches
	lits     [][]byte       // else anchor where one of these occurs
	heads    []head         // nil: no quick check
}

// head is a string every match of some branch starts with, and the bytes
// that can follow it in such a match.
type head struct {
	lit  []byte // lower-cased where fold
	fold []bool
	next *[256]bool // nil: anything, or nothing (the match may end)
	// run, when set, is a class the runMin bytes after lit must all be
	// in (s.[a-z0-9]{24}: "s.cpp.o" fails at the second dot).
	run    *[256]bool
	runMin int
}

// maybeAt reports whether a match of the relaxed pattern can start at
// b's first byte, as far as the heads tell.
func (p *prefilters) maybeAt(b []byte) bool {
	if p.heads == nil {
		return true
	}
	for i := range p.heads {
		h := &p.heads[i]
		if len(b) < len(h.lit) {
			continue
		}
		ok := true
		for j, c := range h.lit {
			t := b[j]
			if h.fold[j] && t >= 0x80 {
				return true // K (Kelvin) and ſ fold to k and s: cannot rule out
			}
			if h.fold[j] && 'A' <= t && t <= 'Z' {
				t += 'a' - 'A'
			}
			if t != c {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		if h.next == nil {
			return true
		}
		if len(b) <= len(h.lit) || !h.next[b[len(h.lit)]] {
			continue
		}
		if h.run != nil {
			rest := b[len(h.lit):]
			if len(rest) < h.runMin {
				continue
			}
			in := true
			for _, c := range rest[:h.runMin] {
				in = in && h.run[c]
			}
			if !in {
				continue
			}
		}
		return true
	}
	return false
}

// newPrefilters derives the prefilters of a line detector's pattern.
func newPrefilters(pattern string, keywords []string) prefilters {
	t, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return prefilters{}
	}
	before := t.String()
	t = trimEnds(widen(t))
	s := t.String()
	var p prefilters
	if s != before {
		p.relaxed, _ = regexp.Compile(s)
	}
	ps, ok := prefixes(t)
	switch {
	case !ok:
		return p
	case startWithKeywords(ps, keywords):
		p.atKw = true
	case len(ps) <= 16 && !slices.ContainsFunc(ps, func(p string) bool { return len(p) < 2 }):
		for _, x := range ps {
			p.lits = append(p.lits, []byte(x))
		}
	default:
		return p
	}
	p.anchored, _ = regexp.Compile(`\A(?:` + s + `)`)
	if hs, ok := heads(t, nil); ok {
		p.heads = hs
	}
	return p
}

// heads returns the strings every match of t starts with, each with the
// bytes that can follow it (follow is what can follow t itself; nil means
// no constraint); false when t has no small such set.
func heads(t *syntax.Regexp, follow *[256]bool) ([]head, bool) {
	switch t.Op {
	case syntax.OpAlternate:
		var out []head
		for _, s := range t.Sub {
			hs, ok := heads(s, follow)
			if !ok || len(out)+len(hs) > maxStrings {
				return nil, false
			}
			out = append(out, hs...)
		}
		return out, true
	case syntax.OpCapture:
		return heads(t.Sub[0], follow)
	case syntax.OpConcat:
		out := []head{{}}
		i := 0
		for ; i < len(t.Sub); i++ {
			l, ok := exact(t.Sub[i])
			if !ok {
				break
			}
			if out = product(out, l, joinHeads); out == nil {
				return nil, false
			}
		}
		if i == 0 {
			return heads(t.Sub[0], after(t.Sub[1:], follow))
		}
		next := after(t.Sub[i:], follow)
		run, runMin := runOf(t.Sub, i)
		for j := range out {
			if len(out[j].lit) == 0 {
				return nil, false
			}
			out[j].next = next
			if next != nil {
				out[j].run, out[j].runMin = run, runMin
			}
		}
		return out, true
	}
	l, ok := exact(t)
	if !ok {
		return nil, false
	}
	for j := range l {
		if len(l[j].lit) == 0 {
			return nil, false
		}
		l[j].next = follow
	}
	return l, true
}

// runOf returns the class and count of a counted character class at
// subs[i] (x{24,}, x+), when there is one.
func runOf(subs []*syntax.Regexp, i int) (*[256]bool, int) {
	if i >= len(subs) {
		return nil, 0
	}
	t := subs[i]
	n := 0
	switch t.Op {
	case syntax.OpRepeat:
		n = t.Min
	case syntax.OpPlus:
		n = 1
	}
	if n == 0 || t.Sub[0].Op != syntax.OpCharClass {
		return nil, 0
	}
	var set [256]bool
	if _, any := addFirst(t.Sub[0], &set); any {
		return nil, 0
	}
	return &set, min(n, 32)
}

// after is what can start a match of subs followed by follow.
func after(subs []*syntax.Regexp, follow *[256]bool) *[256]bool {
	set, nullable := first(subs)
	if !nullable {
		return set
	}
	if set == nil || follow == nil {
		return nil
	}
	u := *set
	for b, ok := range follow {
		u[b] = u[b] || ok
	}
	return &u
}

func concat(a, b []byte) []byte  { return append(append([]byte(nil), a...), b...) }
func concatB(a, b []bool) []bool { return append(append([]bool(nil), a...), b...) }

// exact returns t's language as heads (without next) when it is finite,
// small and ASCII.
func exact(t *syntax.Regexp) ([]head, bool) { return expand(t, exactLeaf, joinHeads) }

// exactLeaf is a literal or a character class as heads.
func exactLeaf(t *syntax.Regexp) ([]head, bool) {
	switch t.Op {
	case syntax.OpLiteral:
		var h head
		fold := t.Flags&syntax.FoldCase != 0
		for _, r := range t.Rune {
			if r >= 0x80 {
				return nil, false
			}
			c := byte(r)
			f := fold && unicode.IsLetter(r)
			if f {
				c = byte(unicode.ToLower(r))
			}
			h.lit = append(h.lit, c)
			h.fold = append(h.fold, f)
		}
		return []head{h}, true
	case syntax.OpCharClass:
		var out []head
		for i := 0; i+1 < len(t.Rune); i += 2 {
			if t.Rune[i+1] >= 0x80 || t.Rune[i+1]-t.Rune[i] >= 8 {
				return nil, false
			}
			for r := t.Rune[i]; r <= t.Rune[i+1]; r++ {
				out = append(out, head{lit: []byte{byte(r)}, fold: []bool{false}})
			}
		}
		return out, len(out) > 0 && len(out) <= 8
	}
	return nil, false
}

func joinHeads(a, b head) head { return head{lit: concat(a.lit, b.lit), fold: concatB(a.fold, b.fold)} }

// expand spells out t's language, when it is finite and has at most
// maxStrings members, with leaf for literals and character classes and
// join for concatenation: exact (heads) and finite (lower-cased strings)
// are the same walk over different leaves.
func expand[T any](t *syntax.Regexp, leaf func(*syntax.Regexp) ([]T, bool), join func(a, b T) T) ([]T, bool) {
	var empty T
	switch t.Op {
	case syntax.OpEmptyMatch:
		return []T{empty}, true
	case syntax.OpLiteral, syntax.OpCharClass:
		return leaf(t)
	case syntax.OpCapture:
		return expand(t.Sub[0], leaf, join)
	case syntax.OpQuest:
		l, ok := expand(t.Sub[0], leaf, join)
		return append(l, empty), ok && len(l) < maxStrings
	case syntax.OpConcat:
		out := []T{empty}
		for _, s := range t.Sub {
			l, ok := expand(s, leaf, join)
			if !ok {
				return nil, false
			}
			if out = product(out, l, join); out == nil {
				return nil, false
			}
		}
		return out, true
	case syntax.OpAlternate:
		var out []T
		for _, s := range t.Sub {
			l, ok := expand(s, leaf, join)
			if !ok || len(out)+len(l) > maxStrings {
				return nil, false
			}
			out = append(out, l...)
		}
		return out, true
	}
	return nil, false
}

// product is every a joined with every b, a major; nil when that is more
// than maxStrings.
func product[T any](a, b []T, join func(x, y T) T) []T {
	if len(a)*len(b) > maxStrings {
		return nil
	}
	out := make([]T, 0, len(a)*len(b))
	for _, x := range a {
		for _, y := range b {
			out = append(out, join(x, y))
		}
	}
	return out
}

// first returns the bytes a match of the concatenation subs can start
// with, and whether it can be empty.
//
// A nil set means any byte.
func first(subs []*syntax.Regexp) (*[256]bool, bool) {
	var set [256]bool
	for _, s := range subs {
		nullable, any := addFirst(s, &set)
		if any {
			return nil, nullable
		}
		if !nullable {
			return &set, false
		}
	}
	return &set, true
}

// addFirst adds the bytes t can start with to set and reports whether t
// can match empty, or can start with anything.
func addFirst(t *syntax.Regexp, set *[256]bool) (nullable, any bool) {
	markRune := func(r rune) {
		if r >= 0x80 {
			for b := 0x80; b < 0x100; b++ {
				set[b] = true
			}
			return
		}
		set[r] = true
	}
	switch t.Op {
	case syntax.OpLiteral:
		if len(t.Rune) == 0 {
			return true, false
		}
		r := t.Rune[0]
		markRune(r)
		if t.Flags&syntax.FoldCase != 0 {
			for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
				markRune(f)
			}
		}
		return false, false
	case syntax.OpCharClass:
		for i := 0; i+1 < len(t.Rune); i += 2 {
			for r := t.Rune[i]; r <= t.Rune[i+1] && r < 0x80; r++ {
				set[r] = true
			}
			if t.Rune[i+1] >= 0x80 {
				markRune(0x80)
			}
		}
		return false, false
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return false, true
	case syntax.OpCapture, syntax.OpPlus:
		return addFirst(t.Sub[0], set)
	case syntax.OpStar, syntax.OpQuest:
		_, any := addFirst(t.Sub[0], set)
		return true, any
	case syntax.OpRepeat:
		n, any := addFirst(t.Sub[0], set)
		return n || t.Min == 0, any
	case syntax.OpConcat:
		for _, s := range t.Sub {
			n, any := addFirst(s, set)
			if any {
				return false, true
			}
			if !n {
				return false, false
			}
		}
		return true, false
	case syntax.OpAlternate:
		nullable := false
		for _, s := range t.Sub {
			n, any := addFirst(s, set)
			if any {
				return false, true
			}
			nullable = nullable || n
		}
		return nullable, false
	}
	// Empty matches and assertions.
	return true, false
}

func startWithKeywords(ps []string, keywords []string) bool {
	for _, p := range ps {
		ok := false
		for _, k := range keywords {
			ok = ok || (k != "" && strings.HasPrefix(p, strings.ToLower(k)))
		}
		if !ok {
			return false
		}
	}
	return len(ps) > 0
}

func widen(t *syntax.Regexp) *syntax.Regexp {
	for i, s := range t.Sub {
		t.Sub[i] = widen(s)
	}
	switch t.Op {
	case syntax.OpCapture:
		return t.Sub[0]
	case syntax.OpRepeat:
		t.Max = -1
	}
	return t
}

func trimEnds(t *syntax.Regexp) *syntax.Regexp {
	switch t.Op {
	case syntax.OpAlternate:
		for i, s := range t.Sub {
			t.Sub[i] = trimEnds(s)
		}
	case syntax.OpConcat:
		subs := t.Sub
		for len(subs) > 1 && nullable(subs[0]) {
			subs = subs[1:]
		}
		for len(subs) > 1 && nullable(subs[len(subs)-1]) {
			subs = subs[:len(subs)-1]
		}
		t.Sub = subs
	}
	return t
}

// nullable reports whether t can match without consuming a byte (an
// assertion counts: dropping it only widens).
func nullable(t *syntax.Regexp) bool {
	switch t.Op {
	case syntax.OpEmptyMatch, syntax.OpStar, syntax.OpQuest,
		syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return true
	case syntax.OpRepeat:
		return t.Min == 0 || nullable(t.Sub[0])
	case syntax.OpCapture, syntax.OpPlus:
		return nullable(t.Sub[0])
	case syntax.OpConcat:
		for _, s := range t.Sub {
			if !nullable(s) {
				return false
			}
		}
		return true
	case syntax.OpAlternate:
		for _, s := range t.Sub {
			if nullable(s) {
				return true
			}
		}
	}
	return false
}

// maxStrings bounds the expansions below.
const maxStrings = 64

// prefixes returns lower-cased strings one of which every match of t
// starts with.
func prefixes(t *syntax.Regexp) ([]string, bool) {
	switch t.Op {
	case syntax.OpAlternate:
		var out []string
		for _, s := range t.Sub {
			ps, ok := prefixes(s)
			if !ok || len(out)+len(ps) > maxStrings {
				return nil, false
			}
			out = append(out, ps...)
		}
		return out, true
	case syntax.OpCapture:
		return prefixes(t.Sub[0])
	case syntax.OpConcat:
		// The longest run of leading parts with a finite language, then
		// the prefixes of the next part.
		out := []string{""}
		for _, s := range t.Sub {
			if l, ok := finite(s); ok {
				if out = product(out, l, joinStrings); out == nil {
					return nil, false
				}
				continue
			}
			if ps, ok := prefixes(s); ok {
				if p := product(out, ps, joinStrings); p != nil {
					out = p
				}
			}
			break
		}
		return out, true
	case syntax.OpPlus:
		return prefixes(t.Sub[0])
	case syntax.OpRepeat:
		if t.Min > 0 {
			return prefixes(t.Sub[0])
		}
	}
	return finite(t)
}

// finite returns t's language lower-cased, when it is finite and small.
func finite(t *syntax.Regexp) ([]string, bool) { return expand(t, finiteLeaf, joinStrings) }

// finiteLeaf is a literal or a character class, lower-cased.
func finiteLeaf(t *syntax.Regexp) ([]string, bool) {
	switch t.Op {
	case syntax.OpLiteral:
		return []string{strings.ToLower(string(t.Rune))}, true
	case syntax.OpCharClass:
		seen := map[rune]bool{}
		var out []string
		for i := 0; i+1 < len(t.Rune); i += 2 {
			if t.Rune[i+1]-t.Rune[i] > maxStrings {
				return nil, false
			}
			for r := t.Rune[i]; r <= t.Rune[i+1]; r++ {
				if l := unicode.ToLower(r); !seen[l] {
					seen[l] = true
					out = append(out, string(l))
				}
			}
		}
		return out, len(out) > 0 && len(out) <= 8
	}
	return nil, false
}

func joinStrings(a, b string) string { return a + b }

// atLits tries the anchored pattern wherever one of the literals occurs
// in low, the lower-cased seg.
func (p *prefilters) atLits(seg, low []byte) bool {
	for _, l := range p.lits {
		for off := 0; ; {
			i := bytes.Index(low[off:], l)
			if i < 0 {
				break
			}
			if p.maybeAt(seg[off+i:]) && p.anchored.Match(seg[off+i:]) {
				return true
			}
			off += i + 1
		}
	}
	return false
}
