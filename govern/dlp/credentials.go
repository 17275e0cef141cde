package dlp

import (
	"bytes"
	"fmt"
	"io"

	"github.com/mitrity/mitrity/govern/secretscan"
)

// MinSecretBytes is the redaction floor (secretscan.MinSecretBytes).
const MinSecretBytes = secretscan.MinSecretBytes

// Secret is one injected credential value.
type Secret = secretscan.Secret

// Redactor replaces every form of a set of secrets with
// [REDACTED:credential:<id>]. What a form is, and how it is found, is
// secretscan's: the same matcher refuses a command line that carries one.
// It is immutable and safe for concurrent use; each output stream gets
// its own Stream.
type Redactor struct {
	m *secretscan.Matcher
	// values are the secrets as Pieces looks for them.
	values []pieceIndex
}

// pieceIndex is one value and where each byte occurs in it.
type pieceIndex struct {
	id, v string
	at    [256][]int
}

// NewRedactor builds a redactor over every form of every secret. A value
// shorter than MinSecretBytes is an error: it could not be told from
// ordinary output.
func NewRedactor(secrets []Secret) (*Redactor, error) {
	for _, s := range secrets {
		if len(s.Value) < MinSecretBytes {
			return nil, fmt.Errorf("credential %s: value is %d bytes; values shorter than %d bytes cannot be redacted reliably", s.ID, len(s.Value), MinSecretBytes)
		}
	}
	r := &Redactor{m: secretscan.NewMatcher(secrets), values: make([]pieceIndex, len(secrets))}
	for i, s := range secrets {
		x := &r.values[i]
		x.id, x.v = s.ID, s.Value
		for j := 0; j < len(s.Value); j++ {
			x.at[s.Value[j]] = append(x.at[s.Value[j]], j)
		}
	}
	return r, nil
}

// Variants returns the exact forms of a value (secretscan.Variants).
func Variants(v string) []string { return secretscan.Variants(v) }

// Redact returns b with every secret replaced, and the count per id.
func (r *Redactor) Redact(b []byte) ([]byte, map[string]int) {
	var out bytes.Buffer
	out.Grow(len(b))
	s := r.Stream(&out)
	s.Write(b)
	s.Close()
	return out.Bytes(), s.Counts()
}

// Stream redacts one output stream. It holds back only what a later byte
// could still make part of a match (secretscan.Feed), so a value split
// across writes is still caught, and for any split of an output into
// writes the result is the same.
type Stream struct {
	r      *Redactor
	w      io.Writer
	feed   *secretscan.Feed
	emit   secretscan.Emit
	counts map[string]int
	err    error
}

// Stream returns a redacting writer over w.
func (r *Redactor) Stream(w io.Writer) *Stream {
	s := &Stream{r: r, w: w, feed: r.m.Feed(), counts: map[string]int{}}
	s.emit = s.put
	return s
}

// Write accepts p (always all of it) and writes what is safe to w.
func (s *Stream) Write(p []byte) (int, error) {
	s.feed.Write(p, s.emit)
	return len(p), s.err
}

// Close writes everything held back.
func (s *Stream) Close() error {
	s.feed.Close(s.emit)
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

func (s *Stream) put(verbatim []byte, secret int) {
	if secret >= 0 {
		id := s.r.m.ID(secret)
		s.counts[id]++
		verbatim = []byte(CredentialMarker(id))
	}
	if s.err == nil && len(verbatim) > 0 {
		_, s.err = s.w.Write(verbatim)
	}
}

// CredentialMarker is what replaces a value of credential id:
// [REDACTED:credential:<id>].
func CredentialMarker(id string) string { return "[REDACTED:credential:" + id + "]" }

// Match is one redacted span of a text: where it is, and whose value it
// holds. It never carries the matched bytes.
type Match struct {
	Start, End int
	ID         string
}

// Matches returns the spans Redact replaces in b, in order, found in one
// scan of the whole of b: what a caller needs that redacts the pieces of a
// text it joined itself (the audit scrubs the strings one event records
// as one text, so that a value cut into pieces is still found).
func (r *Redactor) Matches(b []byte) []Match {
	spans, _ := r.m.Scan(b, 0, true, nil)
	if len(spans) == 0 {
		return nil
	}
	out := make([]Match, len(spans))
	for i, s := range spans {
		out[i] = Match{Start: s.Start, End: s.End, ID: r.m.ID(s.Secret)}
	}
	return out
}

// Piece bounds of Pieces: a piece is at least MinPieceBytes of a value
// as it is (raw, case kept), and the pieces found in a set of texts are
// redacted only when together they hold at least MinPiecesBytes of the
// value, or all of a shorter one.
const (
	MinPieceBytes  = 4
	MinPiecesBytes = 16
)

// Pieces finds a value cut into pieces that are recorded apart: texts
// are the strings of one record (an audit event's argv words, paths and
// names), in any order, with anything between the pieces. For each value,
// every run of at least MinPieceBytes bytes of a text that is also a run
// of the value (raw), and stands in the text between two bytes that are
// not letters or digits (or its ends), is a piece; when the pieces of all the texts cover
// at least MinPiecesBytes of the value (all of it if shorter), every one
// of them is returned, per text, to be redacted. A value held whole in
// one text is a piece like any other. What the matcher finds in other
// forms is Matches' (over the texts joined).
func (r *Redactor) Pieces(texts []string) [][]Match {
	var out [][]Match
	if len(r.values) == 0 {
		return nil
	}
	// A piece starts a word: where a byte follows one that is not a
	// letter or a digit, or at the text's start.
	starts := make([][]int, len(texts))
	for ti, t := range texts {
		for i := 0; i+MinPieceBytes <= len(t); i++ {
			if i == 0 || !alnum(t[i-1]) {
				starts[ti] = append(starts[ti], i)
			}
		}
	}
	for si := range r.values {
		x := &r.values[si]
		v, first := x.v, &x.at
		var covered []bool
		type hit struct{ text, start, end int }
		var hits []hit
		for ti, t := range texts {
			for _, i := range starts[ti] {
				for _, j := range first[t[i]] {
					if i > 0 && j > 0 && t[i-1] == v[j-1] {
						continue // not where a common run starts
					}
					k := 1
					for i+k < len(t) && j+k < len(v) && t[i+k] == v[j+k] {
						k++
					}
					// A piece is a whole word of its text: what stands
					// next to it there is not a letter or a digit.
					if k < MinPieceBytes || i+k < len(t) && alnum(t[i+k]) {
						continue
					}
					if covered == nil {
						covered = make([]bool, len(v))
					}
					for c := j; c < j+k; c++ {
						covered[c] = true
					}
					hits = append(hits, hit{ti, i, i + k})
				}
			}
		}
		n := 0
		for _, c := range covered {
			if c {
				n++
			}
		}
		if n == 0 || n < min(MinPiecesBytes, len(v)) {
			continue
		}
		if out == nil {
			out = make([][]Match, len(texts))
		}
		for _, h := range hits {
			out[h.text] = append(out[h.text], Match{Start: h.start, End: h.end, ID: x.id})
		}
	}
	return out
}

func alnum(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
