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
	return &Redactor{m: secretscan.NewMatcher(secrets)}, nil
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
		verbatim = []byte("[REDACTED:credential:" + id + "]")
	}
	if s.err == nil && len(verbatim) > 0 {
		_, s.err = s.w.Write(verbatim)
	}
}
