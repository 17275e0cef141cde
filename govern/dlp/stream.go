package dlp

import (
	"errors"
	"io"
)

// ErrStreamClosed is returned by a write after Close.
var ErrStreamClosed = errors.New("dlp: write to a closed stream")

// DetectorStream redacts detector hits in what is written to it and
// passes the result on as soon as no later byte can change it: each
// complete line at once, a line longer than LineWindow window by window,
// and a private key block when its END line (or MaxBlockBytes) has come.
// So it holds back at most the current partial line (up to LineWindow
// bytes) or one open block (up to MaxBlockBytes). For any split of an
// input into writes, the output equals Bindings.Redact of the whole input.
// It is not safe for concurrent use.
type DetectorStream struct {
	m      *matcher
	w      io.Writer
	buf    []byte // written, not yet judged
	base   int    // stream offset of buf[0]
	need   int    // len(buf) at which judging can progress without a new line ending
	sc     scratch
	emitFn emitFunc
	counts map[string]int
	total  int
	err    error
	closed bool
}

// Stream returns a redacting writer over w. With no detectors bound it
// passes everything through at once.
func (b Bindings) Stream(w io.Writer) *DetectorStream {
	s := &DetectorStream{m: b.m, w: w, counts: map[string]int{}}
	s.emitFn = s.emit
	return s
}

// Write accepts all of p and writes to the underlying writer what can no
// longer change. The error is the underlying writer's first error; after
// one, nothing more is written.
func (s *DetectorStream) Write(p []byte) (int, error) {
	if s.closed {
		return 0, ErrStreamClosed
	}
	if s.m == nil {
		s.write(p)
		return len(p), s.err
	}
	s.buf = append(s.buf, p...)
	if len(s.buf) >= s.need || indexTerm(p) >= 0 {
		s.judge(false)
	}
	return len(p), s.err
}

// Close judges and writes everything held back. It does not close the
// underlying writer.
func (s *DetectorStream) Close() error {
	if s.closed {
		return s.err
	}
	s.closed = true
	if s.m != nil {
		s.judge(true)
	}
	return s.err
}

// Counts returns hits so far per detector name: the kinds of
// mitrity_redactions_total{kind="dlp:<detector>"}.
func (s *DetectorStream) Counts() map[string]int { return s.counts }

// Total is the number of hits so far.
func (s *DetectorStream) Total() int { return s.total }

// Pending is how many bytes are held back, not yet judged.
func (s *DetectorStream) Pending() int { return len(s.buf) }

func (s *DetectorStream) judge(eof bool) {
	n, need := s.m.advance(s.buf, eof, &s.sc, s.emitFn)
	s.base += n
	s.buf = s.buf[:copy(s.buf, s.buf[n:])]
	s.need = max(need-n, 0)
}

func (s *DetectorStream) emit(verbatim []byte, h *Hit) {
	if h == nil {
		s.write(verbatim)
		return
	}
	s.counts[h.Detector]++
	s.total++
	s.write([]byte(marker(h.Detector)))
}

func (s *DetectorStream) write(b []byte) {
	if s.err == nil && len(b) > 0 {
		_, s.err = s.w.Write(b)
	}
}
