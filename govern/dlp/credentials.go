package dlp

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"slices"

	"github.com/coregx/ahocorasick"

	"github.com/mitrity/mitrity/govern/secretscan"
)

// MinSecretBytes is the redaction floor (secretscan.MinSecretBytes).
const MinSecretBytes = secretscan.MinSecretBytes

// Secret is one injected credential value.
type Secret = secretscan.Secret

// Redactor replaces every form of a set of secrets with
// [REDACTED:credential:<id>]. It is immutable and safe for concurrent use;
// each output stream gets its own Stream.
type Redactor struct {
	ac      *ahocorasick.Automaton
	owners  []int // pattern -> index into ids
	ids     []string
	longest int
	filter  gramFilter
}

// NewRedactor builds one automaton over every variant of every secret,
// and a sampled 4-gram filter in front of it.
func NewRedactor(secrets []Secret) (*Redactor, error) {
	r := &Redactor{}
	seen := map[string]bool{}
	var patterns [][]byte
	for _, s := range secrets {
		if len(s.Value) < MinSecretBytes {
			return nil, fmt.Errorf("credential %s: value is %d bytes; values shorter than %d bytes cannot be redacted reliably", s.ID, len(s.Value), MinSecretBytes)
		}
		r.ids = append(r.ids, s.ID)
		for _, v := range Variants(s.Value) {
			if seen[v] {
				continue
			}
			seen[v] = true
			patterns = append(patterns, []byte(v))
			r.owners = append(r.owners, len(r.ids)-1)
			r.longest = max(r.longest, len(v))
		}
	}
	if len(patterns) == 0 {
		return r, nil
	}
	ac, err := ahocorasick.NewBuilder().AddPatterns(patterns).Build()
	if err != nil {
		return nil, fmt.Errorf("dlp: %w", err)
	}
	r.ac = ac
	r.filter = newGramFilter(patterns)
	return r, nil
}

// Variants returns the forms a value can appear in (secretscan.Variants).
func Variants(v string) []string { return secretscan.Variants(v) }

// match is one redaction found in a buffer.
type match struct{ start, end, owner int }

// find appends to dst every occurrence of a variant in b, at offset off,
// and returns it. Only the spans the gram filter flags reach the automaton.
func (r *Redactor) find(b []byte, off int, dst []match) []match {
	lo, hi := 0, 0 // the pending span to verify, merged while they overlap
	f := &r.filter
	for i := 0; i+4 <= len(b); i += f.stride {
		if !f.has(binary.LittleEndian.Uint32(b[i:])) {
			continue
		}
		// An occurrence holding this gram starts within the last stride
		// bytes and is at most longest long.
		s, e := max(i-f.stride+1, 0), min(i+r.longest, len(b))
		if s <= hi && hi > lo {
			hi = max(hi, e)
			continue
		}
		dst = r.verify(b, lo, hi, off, dst)
		lo, hi = s, e
	}
	return r.verify(b, lo, hi, off, dst)
}

func (r *Redactor) verify(b []byte, lo, hi, off int, dst []match) []match {
	if hi <= lo {
		return dst
	}
	for _, m := range r.ac.FindAllOverlapping(b[lo:hi]) {
		dst = append(dst, match{off + lo + m.Start, off + lo + m.End, r.owners[m.PatternID]})
	}
	return dst
}

// Redact returns b with every secret replaced, and the count per id.
func (r *Redactor) Redact(b []byte) ([]byte, map[string]int) {
	var out bytes.Buffer
	s := r.Stream(&out)
	s.Write(b)
	s.Close()
	return out.Bytes(), s.Counts()
}

// Stream redacts one output stream. It holds back the last longest-1
// bytes of what it was given until more arrives or Close, so a value split
// across writes is still caught. A write is judged where it lies, without
// being copied: only the held-back tail and the head of the write are
// joined to find the values that straddle them.
type Stream struct {
	r      *Redactor
	w      io.Writer
	held   []byte
	join   []byte
	ms     []match
	counts map[string]int
	err    error
}

// Stream returns a redacting writer over w.
func (r *Redactor) Stream(w io.Writer) *Stream {
	return &Stream{r: r, w: w, counts: map[string]int{}}
}

// Write accepts p (always all of it) and writes what is safe to w.
func (s *Stream) Write(p []byte) (int, error) {
	if s.r.ac == nil {
		s.write(p)
		return len(p), s.err
	}
	s.flush(p, false)
	return len(p), s.err
}

// Close writes everything held back.
func (s *Stream) Close() error {
	if s.r.ac != nil {
		s.flush(nil, true)
	}
	return s.err
}

// Counts returns redactions per credential id so far.
func (s *Stream) Counts() map[string]int { return s.counts }

// Total is the number of redactions so far.
func (s *Stream) Total() int {
	n := 0
	for _, c := range s.counts {
		n += c
	}
	return n
}

// flush judges held+p as one text: it replaces the occurrences that start
// before the last longest-1 bytes (all of them when final), leftmost
// first and, at one start, longest first; writes up to there; and holds
// the rest.
func (s *Stream) flush(p []byte, final bool) {
	h := len(s.held)
	total := h + len(p)
	ms := s.ms[:0]
	if h > 0 {
		// Occurrences that start in the held tail end within longest-1
		// bytes of p.
		s.join = append(append(s.join[:0], s.held...), p[:min(len(p), s.r.longest-1)]...)
		for _, m := range s.r.ac.FindAllOverlapping(s.join) {
			if m.Start < h {
				ms = append(ms, match{m.Start, m.End, s.r.owners[m.PatternID]})
			}
		}
	}
	ms = s.r.find(p, h, ms)
	slices.SortFunc(ms, func(a, b match) int {
		if a.start != b.start {
			return a.start - b.start
		}
		return b.end - a.end
	})
	s.ms = ms
	safe := total
	if !final {
		safe = total - (s.r.longest - 1)
	}
	pos := 0
	for _, m := range ms {
		if m.start < pos {
			continue
		}
		if m.start >= safe {
			break
		}
		s.span(p, pos, m.start)
		s.write([]byte("[REDACTED:credential:" + s.r.ids[m.owner] + "]"))
		s.counts[s.r.ids[m.owner]]++
		pos = m.end
	}
	if safe > pos {
		s.span(p, pos, safe)
		pos = safe
	}
	// Hold held[pos:]+p, or p's tail.
	if pos >= h {
		s.held = append(s.held[:0], p[pos-h:]...)
	} else {
		s.held = append(s.held[:copy(s.held, s.held[pos:])], p...)
	}
}

// span writes bytes [a,b) of held+p.
func (s *Stream) span(p []byte, a, b int) {
	h := len(s.held)
	if a < h {
		s.write(s.held[a:min(b, h)])
	}
	if b > h {
		s.write(p[max(a, h)-h : b-h])
	}
}

func (s *Stream) write(b []byte) {
	if s.err == nil && len(b) > 0 {
		_, s.err = s.w.Write(b)
	}
}

// gramFilter is a necessary condition for an occurrence, checked at every
// stride-th byte: every variant is at least stride+3 bytes long, so each
// occurrence covers a sampled position whose 4-gram is one of the first
// stride 4-grams of some variant, and the filter (a two-probe Bloom
// filter) holds all those. A clean byte costs a load, two multiplies and
// two bit tests per stride bytes; the automaton runs only around the
// positions the filter passes.
type gramFilter struct {
	stride int
	shift  uint
	bits   []uint64
}

func newGramFilter(patterns [][]byte) gramFilter {
	shortest := len(patterns[0])
	for _, p := range patterns {
		shortest = min(shortest, len(p))
	}
	f := gramFilter{stride: shortest - 3} // shortest >= MinSecretBytes > 4
	grams := len(patterns) * f.stride
	// 64 bits per gram: a clean 4-gram passes both probes about once in
	// (64/2)^2 = 1024 checks. 2^16 bits is 8 KiB, well inside L1.
	size := uint(16)
	for 1<<size < 64*grams && size < 24 {
		size++
	}
	f.shift = 32 - size
	f.bits = make([]uint64, (1<<size)/64)
	for _, p := range patterns {
		for j := 0; j < f.stride; j++ {
			g := binary.LittleEndian.Uint32(p[j:])
			for _, h := range [2]uint32{f.h1(g), f.h2(g)} {
				f.bits[h>>6] |= 1 << (h & 63)
			}
		}
	}
	return f
}

func (f *gramFilter) h1(g uint32) uint32 { return (g * 0x9E3779B1) >> f.shift }
func (f *gramFilter) h2(g uint32) uint32 { return (g * 0x85EBCA77) >> f.shift }

func (f *gramFilter) has(g uint32) bool {
	a, b := f.h1(g), f.h2(g)
	return f.bits[a>>6]&(1<<(a&63)) != 0 && f.bits[b>>6]&(1<<(b&63)) != 0
}
