package inject

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Kind is what a finding is about.
type Kind string

const (
	// KindHiddenCharacters: bidi controls or Unicode tag characters. Text
	// that displays differently from how it reads, or carries invisible
	// ASCII, has no place in a shell command.
	KindHiddenCharacters Kind = "hidden_characters"
	// KindRoleMarker: chat-template tokens and role headers (<|im_start|>,
	// [INST], ### System:, </system>, Human:/Assistant: at line start).
	KindRoleMarker Kind = "role_marker"
	// KindOverride: instruction-override phrases (ignore previous
	// instructions, you are now ..., new instructions:, developer mode ...).
	KindOverride Kind = "instruction_override"
	// KindExfiltration: a request to send secrets to a URL, or a network
	// tool next to a secret file or an environment dump.
	KindExfiltration Kind = "exfiltration"
)

// Finding is one hit. Offset is the byte offset in the scanned text where
// it starts; for a hit inside an encoded segment it is where the segment
// starts. Detail is short and quotes at most a few dozen bytes.
type Finding struct {
	Kind   Kind   `json:"kind"`
	Detail string `json:"detail"`
	Offset int    `json:"offset"`
}

const (
	// maxLayers and maxDecoded bound the work on adversarial input: past
	// them, nothing more is decoded (what was found is still reported).
	maxLayers  = 512
	maxDecoded = 4 << 20
	// quoteMax is how much of a match a Detail quotes.
	quoteMax = 48
	// maxFindings caps the report: past a few dozen hits, more of them say
	// nothing new, and text made of nothing but injections would otherwise
	// cost time in proportion to its hits.
	maxFindings = 64
)

// Scan normalises text, peels encoded layers and returns every finding,
// ordered by offset. Nil means nothing was found.
func Scan(text string) []Finding {
	s := &scanner{seen: map[Finding]bool{}}
	s.layer(text, 0, "", nil)
	slices.SortStableFunc(s.out, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(a.Offset, b.Offset), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Detail, b.Detail))
	})
	return s.out
}

// ScanBytes is Scan for stdin and other byte input; invalid UTF-8 is read
// as U+FFFD and cannot hide anything.
func ScanBytes(b []byte) []Finding { return Scan(string(b)) }

type scanner struct {
	out     []Finding
	seen    map[Finding]bool
	layers  int
	decoded int
}

// layer scans one text. depth is how many encodings were peeled to reach
// it; enc names them ("base64", "base64>hex"); at maps the text back to the
// root: nil for the root itself, else the root offset every hit inside
// reports.
func (s *scanner) layer(text string, depth int, enc string, at *int) {
	s.layers++
	f := fold(text)
	root := func(i int) int {
		if at != nil {
			return *at
		}
		return int(f.offs[i])
	}
	// Hidden characters are a finding where they are literally present:
	// inside an encoded layer they were escapes a person could see (Go and
	// JSON sources are full of "\u200e"), and tag characters smuggled that
	// way are decoded and scanned below anyway.
	if at == nil {
		for _, h := range f.hidden {
			s.emit(h.Kind, h.Detail, h.Offset, enc)
		}
	}
	lower := f.lower
	hits := anchors.scan(lower)
	for _, group := range [][]detector{roleMarkers, overrides} {
		for _, d := range group {
			if s.full() {
				return
			}
			limit := maxFindings - len(s.out)
			if d.keep != nil {
				limit = len(lower) + 1 // matches keep rejects must not use up the limit
			}
			for _, m := range d.find(lower, hits, limit) {
				if d.keep != nil && !d.keep(lower, m) {
					continue
				}
				s.emit(d.kind, fmt.Sprintf("%s %q", d.what, quote(lower[m[0]:m[1]])), root(m[0]), enc)
			}
		}
	}
	if s.full() {
		return
	}
	exfiltration(lower, hits, maxFindings-len(s.out), func(kind Kind, detail string, start int) { s.emit(kind, detail, root(start), enc) })

	if len(f.tags) > 0 {
		tagsAt := f.tagsAt
		if at != nil {
			tagsAt = *at
		}
		s.child(string(f.tags), depth, enc, "unicode tags", tagsAt)
	}
	if depth >= maxDepth {
		return
	}
	for _, seg := range decodeSegments(f.fold) {
		s.child(seg.text, depth, enc, seg.enc, root(seg.start))
	}
}

// child scans decoded text found in a layer; every hit inside reports off,
// the root offset of the encoded run.
func (s *scanner) child(text string, depth int, enc, how string, off int) {
	if s.full() || s.layers >= maxLayers || s.decoded+len(text) > maxDecoded {
		return
	}
	s.decoded += len(text)
	if enc != "" {
		how = enc + ">" + how
	}
	s.layer(text, depth+1, how, &off)
}

func (s *scanner) full() bool { return len(s.out) >= maxFindings }

func (s *scanner) emit(kind Kind, detail string, offset int, enc string) {
	if s.full() {
		return
	}
	if enc != "" {
		detail += " (in " + enc + "-decoded text)"
	}
	f := Finding{Kind: kind, Detail: detail, Offset: offset}
	if !s.seen[f] {
		s.seen[f] = true
		s.out = append(s.out, f)
	}
}

// quote shortens a match and collapses its whitespace, so a Detail stays
// one short line whatever the input.
func quote(m string) string {
	m = strings.Join(strings.Fields(m), " ")
	if len(m) > quoteMax {
		cut := quoteMax
		for cut > 0 && m[cut]&0xC0 == 0x80 {
			cut--
		}
		m = m[:cut] + "…"
	}
	return m
}
