package secretscan

// Feed scans a text that arrives in pieces, such as a command's output,
// and passes on what is final as soon as it is: it holds back only what a
// later byte could still make part of a match. For any split of a text
// into writes, what it passes on equals what Scan finds in the whole.
// It is not safe for concurrent use.
type Feed struct {
	m     *Matcher
	buf   []byte // context, then what is held back
	from  int
	spans []Span
}

// Emit receives a feed's output in order: text passed on as it is, or,
// when secret >= 0, the place of one redacted span holding that secret.
// The slice is valid only during the call.
type Emit func(verbatim []byte, secret int)

// Feed returns a feed over m.
func (m *Matcher) Feed() *Feed { return &Feed{m: m} }

// Write scans p after what came before and emits what became final.
func (f *Feed) Write(p []byte, emit Emit) {
	if f.m.Empty() {
		emit(p, -1)
		return
	}
	f.buf = append(f.buf, p...)
	f.step(false, emit)
}

// Close emits everything still held back; the feed can then start over.
func (f *Feed) Close(emit Emit) {
	if !f.m.Empty() {
		f.step(true, emit)
	}
	f.buf, f.from = f.buf[:0], 0
}

// Pending is how many bytes are held back.
func (f *Feed) Pending() int { return len(f.buf) - f.from }

func (f *Feed) step(final bool, emit Emit) {
	spans, safe := f.m.Scan(f.buf, f.from, final, f.spans[:0])
	f.spans = spans
	pos := f.from
	for _, s := range spans {
		if s.Start > pos {
			emit(f.buf[pos:s.Start], -1)
		}
		emit(nil, s.Secret)
		pos = s.End
	}
	if safe > pos {
		emit(f.buf[pos:safe], -1)
	}
	keep := ContextStart(f.buf, safe)
	f.buf = f.buf[:copy(f.buf, f.buf[keep:])]
	f.from = safe - keep
}
