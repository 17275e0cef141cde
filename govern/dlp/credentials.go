package dlp

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strings"

	"github.com/coregx/ahocorasick"
)

// MinSecretBytes is the redaction floor: a value shorter than this would
// match ordinary output everywhere, so such a credential is refused when it
// is configured or fetched rather than redacted as noise.
const MinSecretBytes = 8

// Secret is one injected credential value.
type Secret struct {
	ID    string
	Value string
}

// Redactor replaces every form of a set of secrets with
// [REDACTED:credential:<id>]. It is immutable and safe for concurrent use;
// each output stream gets its own Stream.
type Redactor struct {
	ac      *ahocorasick.Automaton
	owners  []int // pattern -> index into ids
	ids     []string
	longest int
}

// NewRedactor builds one automaton over every variant of every secret.
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
	return r, nil
}

// Variants returns the forms a value can appear in: raw; base64 in the
// standard and URL alphabets at each of the three byte alignments (only
// the characters that depend on the value alone); URL-encoded with upper
// and lower hex; hex upper and lower; JSON-escaped; shell-escaped.
func Variants(v string) []string {
	out := []string{v}
	add := func(s string) {
		if len(s) >= MinSecretBytes {
			out = append(out, s)
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		for k := 0; k < 3; k++ {
			add(base64Core(enc, []byte(v), k))
		}
	}
	q := url.QueryEscape(v)
	add(q)
	add(lowerHexEscapes(q))
	p := url.PathEscape(v)
	add(p)
	add(lowerHexEscapes(p))
	add(percentAll(v, "%02X"))
	add(percentAll(v, "%02x"))
	h := hex.EncodeToString([]byte(v))
	add(h)
	add(strings.ToUpper(h))
	var jb bytes.Buffer
	enc := json.NewEncoder(&jb)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	add(strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(jb.String(), `"`), "\n"), `"`))
	js, _ := json.Marshal(v)
	add(strings.TrimSuffix(strings.TrimPrefix(string(js), `"`), `"`))
	add(strings.ReplaceAll(v, "'", `'\''`))
	add(backslashEscape(v))
	return out
}

// base64Core encodes v as if k unknown bytes came before it and returns
// only the characters determined by v's bytes: char j of an encoding
// covers bits 6j..6j+5, that is bytes 6j/8 .. (6j+5)/8.
func base64Core(enc *base64.Encoding, v []byte, k int) string {
	buf := make([]byte, k+len(v)+2)
	copy(buf[k:], v)
	s := enc.EncodeToString(buf)
	var b strings.Builder
	for j := 0; j < len(s); j++ {
		first, last := 6*j/8, (6*j+5)/8
		if first >= k && last < k+len(v) {
			b.WriteByte(s[j])
		} else if b.Len() > 0 {
			break
		}
	}
	return b.String()
}

func lowerHexEscapes(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			b.WriteByte('%')
			b.WriteString(strings.ToLower(s[i+1 : i+3]))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func percentAll(v, format string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		fmt.Fprintf(&b, "%%"+format[1:], v[i])
	}
	return b.String()
}

// backslashEscape is bash's printf %q form for a word without controls.
func backslashEscape(v string) string {
	var b strings.Builder
	for _, c := range []byte(v) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_-./:@%+=,", c) >= 0) {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String()
}

// match is one redaction found in a buffer.
type match struct{ start, end, owner int }

// find returns non-overlapping matches, leftmost first and, at the same
// start, longest first.
func (r *Redactor) find(b []byte) []match {
	if r.ac == nil || len(b) == 0 {
		return nil
	}
	all := r.ac.FindAllOverlapping(b)
	sort.Slice(all, func(i, j int) bool {
		if all[i].Start != all[j].Start {
			return all[i].Start < all[j].Start
		}
		return all[i].End > all[j].End
	})
	var out []match
	end := 0
	for _, m := range all {
		if m.Start < end {
			continue
		}
		out = append(out, match{m.Start, m.End, r.owners[m.PatternID]})
		end = m.End
	}
	return out
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
// across writes is still caught.
type Stream struct {
	r      *Redactor
	w      io.Writer
	buf    []byte
	counts map[string]int
	err    error
}

// Stream returns a redacting writer over w.
func (r *Redactor) Stream(w io.Writer) *Stream {
	return &Stream{r: r, w: w, counts: map[string]int{}}
}

// Write accepts p (always all of it) and writes what is safe to w.
func (s *Stream) Write(p []byte) (int, error) {
	s.buf = append(s.buf, p...)
	s.flush(false)
	return len(p), s.err
}

// Close writes everything held back.
func (s *Stream) Close() error {
	s.flush(true)
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

func (s *Stream) flush(final bool) {
	safe := len(s.buf)
	if !final {
		safe = len(s.buf) - max(s.r.longest-1, 0)
	}
	pos := 0
	for _, m := range s.r.find(s.buf) {
		if m.start >= safe {
			break
		}
		s.write(s.buf[pos:m.start])
		s.write([]byte("[REDACTED:credential:" + s.r.ids[m.owner] + "]"))
		s.counts[s.r.ids[m.owner]]++
		pos = m.end
	}
	if safe > pos {
		s.write(s.buf[pos:safe])
		pos = safe
	}
	s.buf = append(s.buf[:0], s.buf[pos:]...)
}

func (s *Stream) write(b []byte) {
	if s.err == nil && len(b) > 0 {
		_, s.err = s.w.Write(b)
	}
}
