package secretscan

import (
	"bytes"
	"slices"
)

// The bounds of normalised matching. See docs/dlp.md, "Credential forms".
const (
	// minLane is the shortest match in a normalised view: a whole form of
	// at least this many symbols, or a fragment of one.
	minLane = 16
	// fragBytes is how many bytes of the value a fragment must encode as
	// well: so a fragment is at least 16 hex digits, 24 decimal digits,
	// 40 characters of \uXXXX or 64 binary digits.
	fragBytes = 8
	// maxGap is the most bytes that may stand between two symbols of one
	// match in text: a longer run of other output breaks the value.
	// dumpGap is the same across the lines of a hex dump, where a line's
	// other columns stand between (xxd -c 64 prints 170 bytes).
	maxGap  = 32
	dumpGap = 256
	// maxLeftExt and maxRightExt bound how far a match is widened past
	// its symbols (punctuation of the form, base64 quanta and padding).
	maxLeftExt  = 8
	maxRightExt = 8
	// maxDumpLine is the longest line read as a line of a hex dump.
	maxDumpLine = 400
	// MaxContext is how much already-released text before the scan
	// position Scan needs at most: the current line's start (so a hex
	// dump line is read as one) when the line is shorter than this.
	MaxContext = 512
)

// The normalised view of a text is its ASCII letters and digits ("symbols"),
// lower-cased, one after another: everything else (space, punctuation,
// line ends, NUL, other bytes) only separates them, so a value printed
// with separators in it, wrapped, split over lines or case-changed reads
// the same as the value. The text itself is read in this view without
// being copied (textMatches). Hex dump lines are read in three views of
// their own ("lanes"), each joined across the dump's lines:
const (
	// laneData is the data columns (not the offset or the characters).
	laneData = iota
	// laneChars is the character columns (xxd, hexdump -C, od -z): the
	// value read off between the hex.
	laneChars
	// laneWords is the data of dumps printed as little-endian words (od -x,
	// od, hexdump, xxd -e, od -t x4), turned back into byte order.
	laneWords
	// laneDecoded is the text around percent and HTML escapes, decoded
	// (see routeEscapes).
	laneDecoded
	nLanes
)

// Span is a range of a scanned text that holds one secret, in some form.
type Span struct {
	Start, End int
	Secret     int // index into the secrets given to NewMatcher
}

type lane struct {
	sym []byte
	pos []int32
}

// dumpLine is a line read as a line of a hex dump: [start, end) without
// the line end; the data columns are [data, dataEnd), the character column
// [chars, end).
type dumpLine struct {
	start, end    int
	lineEnd, next int // the line end ('\n'), and where the next line starts
	data, dataEnd int
	chars         int
	words         uint8 // wordsHex or wordsOct: lane laneWords reads the data
}

const (
	wordsNone = iota
	wordsHex
	wordsOct
)

type seenRegion struct {
	lane, delta, end int
}

// scratch is one scan's working memory, reused through the matcher's pool.
type scratch struct {
	lanes [nLanes]lane
	segs  [][2]int // the text outside dump lines, in order
	dumps []dumpLine
	spans []Span
	seen  []seenRegion
	hold  int
	end   int // where routing stopped
	run   runState
	toks  [][2]int
}

func (sc *scratch) reset() {
	for i := range sc.lanes {
		sc.lanes[i].sym = sc.lanes[i].sym[:0]
		sc.lanes[i].pos = sc.lanes[i].pos[:0]
	}
	sc.segs = sc.segs[:0]
	sc.dumps = sc.dumps[:0]
	sc.spans = sc.spans[:0]
	sc.seen = sc.seen[:0]
}

func (sc *scratch) holdAt(p int) { sc.hold = min(sc.hold, p) }

// scan is Scan at a nesting depth (decoded payloads are scanned at depth+1).
func (sc *scratch) scan(m *Matcher, buf []byte, from int, final bool, depth int, dst []Span) ([]Span, int) {
	sc.reset()
	n := len(buf)
	sc.hold = n
	if !final {
		// The widening of a match that starts in what comes next may
		// reach this far back.
		sc.hold = n - maxLeftExt
	}
	end := sc.route(buf, from, final)
	sc.end = end
	if m.fold != nil {
		sc.routeEscapes(buf, final)
	}
	if m.exact != nil {
		sc.exactMatches(m.exact, buf, from, final)
	}
	sc.binaryMatches(m, buf, from, final)
	sc.textMatches(m, m.fold, buf, final, depth)
	if m.fold != nil {
		for li := range sc.lanes {
			sc.laneMatches(m.fold, li, buf, end, final)
		}
	}
	spans := sc.spans
	slices.SortFunc(spans, func(a, b Span) int {
		if a.Start != b.Start {
			return a.Start - b.Start
		}
		if a.End != b.End {
			return b.End - a.End
		}
		return a.Secret - b.Secret // the same span whatever order the scan found them in
	})
	merged := spans[:0]
	for _, s := range spans {
		if k := len(merged) - 1; k >= 0 && s.Start < merged[k].End {
			merged[k].End = max(merged[k].End, s.End)
			continue
		}
		merged = append(merged, s)
	}
	safe := n
	if !final {
		safe = max(min(sc.hold, n), from)
		for i := len(merged) - 1; i >= 0; i-- {
			if merged[i].Start < safe && merged[i].End > safe {
				safe = merged[i].Start
			}
		}
	}
	for _, s := range merged {
		if s.Start >= safe {
			break
		}
		dst = append(dst, s)
	}
	return dst, safe
}

// route reads buf from from on, line by line: dump lines into the lanes,
// the rest into segments of text. It returns where it stopped: at the
// start of a last, unfinished line that may turn out to be a dump line
// (held back whole), or at the end.
func (sc *scratch) route(buf []byte, from int, final bool) int {
	ls := -1 // the current line's start, if known
	if nl := bytes.LastIndexByte(buf[:from], '\n'); nl >= 0 {
		ls = nl + 1
	} else if from < MaxContext {
		ls = 0
	}
	seg := from
	p := from
	defer func() {
		if p > seg {
			sc.segs = append(sc.segs, [2]int{seg, min(p, len(buf))})
		}
	}()
	for p < len(buf) {
		le, complete := len(buf), final
		if k := bytes.IndexByte(buf[p:], '\n'); k >= 0 {
			le, complete = p+k, true
		}
		if c := buf[max(ls, 0)]; ls >= 0 && le-ls <= maxDumpLine && (class[c]&clHex != 0 || c == ' ' || c == '\t') {
			switch dumpStart(buf[ls:le], complete) {
			case dumpUndecided:
				sc.holdAt(ls)
				p = max(ls, from)
				return p
			case dumpMaybe:
				if !complete {
					sc.holdAt(ls)
					p = max(ls, from)
					return p
				}
				if d, ok := sc.parseDump(buf, ls, le); ok {
					if p > seg {
						sc.segs = append(sc.segs, [2]int{seg, p})
					}
					sc.routeDump(buf, d, from)
					p, ls = le+1, le+1
					seg = min(p, len(buf))
					continue
				}
			}
		}
		p, ls = le+1, le+1
	}
	p = len(buf)
	return p
}

// skel appends the symbols of b[from:to].
func (l *lane) skel(b []byte, from, to int) {
	n := len(l.sym)
	need := n + to - from
	l.sym = slices.Grow(l.sym, need-n)
	l.pos = slices.Grow(l.pos, need-n)
	sym, pos := l.sym[:need], l.pos[:need]
	b = b[:to]
	for i := from; i < len(b); i++ {
		c := b[i]
		sym[n] = fold[c]
		pos[n] = int32(i)
		n += int(class[c] & clSym)
	}
	l.sym, l.pos = sym[:n], pos[:n]
}

func (l *lane) add(c byte, p int) {
	l.sym = append(l.sym, c)
	l.pos = append(l.pos, int32(p))
}

// laneMatches finds the matches of ix's forms in lane li, appends them as
// spans and holds back what a later byte could still make part of one.
func (sc *scratch) laneMatches(ix *index, li int, buf []byte, end int, final bool) {
	l := &sc.lanes[li]
	n := len(l.sym)
	if n == 0 {
		return
	}
	sc.seen = sc.seen[:0]
	for p := 0; p+8 <= n; p += ix.stride {
		key := ix.key(l.sym, p)
		if !ix.maybe(key) {
			continue
		}
		ix.seeds(key, func(q int) { sc.region(ix, li, buf, p, q, final) })
	}
	if final {
		return
	}
	// A match still to come may begin in the last minLane-1 symbols
	// (a longer beginning holds a seed, and was held above), unless a gap
	// wider than maxGap cuts them off.
	if end-int(l.pos[n-1])-1 > dumpGap {
		return
	}
	h := max(n-(minLane-1), 0)
	for k := n - 1; k > h; k-- {
		if l.pos[k]-l.pos[k-1] > dumpGap+1 {
			h = k
			break
		}
	}
	sc.holdAt(int(l.pos[h]) - maxLeftExt)
}

// region extends the seed at lane position p, text position q, to where
// lane and form stop agreeing, and keeps it if it is a match.
func (sc *scratch) region(ix *index, li int, buf []byte, p, q int, final bool) {
	delta := q - p
	w := 0
	for _, s := range sc.seen {
		if s.end > p {
			if s.lane == li && s.delta == delta {
				return // inside a region already found
			}
			sc.seen[w] = s
			w++
		}
	}
	sc.seen = sc.seen[:w]
	l := &sc.lanes[li]
	sym, pos := l.sym, l.pos
	for k := p + 1; k < p+ix.g; k++ {
		if pos[k]-pos[k-1] > dumpGap+1 {
			return
		}
	}
	f := &ix.forms[ix.owner[q]]
	la, ta := p, q
	for la > 0 && ta > int(f.start) && sym[la-1] == ix.text[ta-1] && pos[la]-pos[la-1] <= dumpGap+1 {
		la, ta = la-1, ta-1
	}
	lb, tb := p+ix.g, q+ix.g
	for lb < len(sym) && tb < int(f.end) && sym[lb] == ix.text[tb] && pos[lb]-pos[lb-1] <= dumpGap+1 {
		lb, tb = lb+1, tb+1
	}
	sc.seen = append(sc.seen, seenRegion{li, delta, lb})
	fa, fb := ta-int(f.start), tb-int(f.start)
	whole := fa == 0 && fb == f.len()
	s, e := int(pos[la]), int(pos[lb-1])+1
	if !final && lb == len(sym) && fb < f.len() && sc.end-e <= dumpGap {
		sc.holdAt(s - maxLeftExt) // it may go on
		return
	}
	if lb-la < minLane || !whole && !ix.fragment(ta, tb) {
		return
	}
	if li == laneDecoded {
		e = escapeEnd(buf, int(pos[lb-1]))
		s, e = widenDecoded(buf, s, e, f, fa == 0, fb == f.len())
		if !final && e+maxRightExt > len(buf) {
			sc.holdAt(s - maxLeftExt)
			return
		}
		sc.spans = append(sc.spans, Span{s, e, int(f.secret)})
		return
	}
	if li == laneWords {
		for e < len(buf) && class[buf[e]]&clHex != 0 {
			e++ // the rest of the word
		}
	}
	if d := sc.dumpAt(int(pos[lb-1])); d != nil {
		e = max(e, d.end) // the line's character column repeats the value
	}
	s, e = widen(buf, s, e, f, fa == 0, fb == f.len())
	if !final && e+maxRightExt > len(buf) {
		sc.holdAt(s - maxLeftExt) // the widening may need more
		return
	}
	sc.spans = append(sc.spans, Span{s, e, int(f.secret)})
}

// widen extends [s, e) over what printed the form's ends: its punctuation,
// and for base64 and base32 the characters that straddle the value's ends
// and the padding.
func widen(buf []byte, s, e int, f *formInfo, atStart, atEnd bool) (int, int) {
	switch f.kind {
	case kindBase64:
		if atStart {
			for k := 0; k < 3 && s > 0 && class[buf[s-1]]&clRun != 0; k++ {
				s--
			}
		}
		if atEnd {
			for k := 0; k < 3 && e < len(buf) && class[buf[e]]&clRun != 0; k++ {
				e++
			}
			for k := 0; k < 2 && e < len(buf) && buf[e] == '='; k++ {
				e++
			}
		}
		return s, e
	case kindBase32, kindBase32Hex:
		in := func(c byte) bool {
			c = fold[c]
			if f.kind == kindBase32 {
				return c >= 'a' && c <= 'z' || c >= '2' && c <= '7'
			}
			return c >= '0' && c <= '9' || c >= 'a' && c <= 'v'
		}
		if atStart && s > 0 && in(buf[s-1]) {
			s--
		}
		if atEnd {
			if e < len(buf) && in(buf[e]) {
				e++
			}
			for k := 0; k < 6 && e < len(buf) && buf[e] == '='; k++ {
				e++
			}
		}
		return s, e
	}
	if atStart && len(f.lead) > 0 && s >= len(f.lead) && bytes.EqualFold(buf[s-len(f.lead):s], f.lead) {
		s -= len(f.lead)
	}
	if atEnd && len(f.trail) > 0 && e+len(f.trail) <= len(buf) && bytes.EqualFold(buf[e:e+len(f.trail)], f.trail) {
		e += len(f.trail)
	}
	return s, e
}

// exactMatches finds the exact forms of ix (values too short for the
// normalised views) in buf[from:].
func (sc *scratch) exactMatches(ix *index, buf []byte, from int, final bool) {
	n := len(buf)
	for p := from; p+ix.g <= n; p += ix.stride {
		key := ix.key(buf, p)
		if !ix.maybe(key) {
			continue
		}
		ix.seeds(key, func(q int) {
			f := &ix.forms[ix.owner[q]]
			s := p - (q - int(f.start))
			e := s + f.len()
			switch {
			case s < from:
			case e > n:
				if !final {
					sc.holdAt(s)
				}
			case bytes.Equal(buf[s:e], ix.text[f.start:f.end]):
				sc.spans = append(sc.spans, Span{s, e, int(f.secret)})
			}
		})
	}
	if !final {
		// A form that begins in the last stride+g-2 bytes may hold no
		// sampled gram yet.
		sc.holdAt(n - (ix.stride + ix.g - 2))
	}
}

// binaryMatches finds the binary decoded values (see Matcher.binary)
// byte for byte. Each holds a byte >= 0x80, so text without one holds
// none of them: most output costs a word-wide test. Unless final, the end
// that could still begin one is held back.
func (sc *scratch) binaryMatches(m *Matcher, buf []byte, from int, final bool) {
	if m.binary == nil {
		return
	}
	if hasHigh(buf[from:]) {
		sc.exactMatches(m.binary, buf, from, final)
	}
	if !final {
		sc.holdAt(len(buf) - (m.binaryMax - 1))
	}
}

// dumpAt returns the dump line that holds position p, if any.
func (sc *scratch) dumpAt(p int) *dumpLine {
	i, _ := slices.BinarySearchFunc(sc.dumps, p, func(d dumpLine, p int) int {
		if d.end <= p {
			return -1
		}
		if d.start > p {
			return 1
		}
		return 0
	})
	if i < len(sc.dumps) && sc.dumps[i].start <= p && p < sc.dumps[i].end {
		return &sc.dumps[i]
	}
	return nil
}
