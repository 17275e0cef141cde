package dlp

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/coregx/ahocorasick"
)

// Detectors judge one line at a time: a line ends at \n or \r, and no
// match spans one. Bounds that keep a stream's holdback finite:
const (
	// LineWindow is the longest line judged whole. A longer one is judged
	// in windows of this size that overlap by WindowOverlap, so a match
	// of up to WindowOverlap bytes is never cut by a window edge; a longer
	// match that straddles an edge is redacted up to the edge only.
	LineWindow = 64 << 10
	// WindowOverlap is how far consecutive windows of a long line overlap.
	WindowOverlap = 4 << 10
	// MaxBlockBytes caps a block detector's hit (a private key): a block
	// whose END marker has not come within this many bytes of its BEGIN
	// marker is redacted up to the cap, and judging resumes there.
	MaxBlockBytes = 64 << 10
	// batchBytes is how much of a run of complete lines one pass of the
	// keyword automaton covers.
	batchBytes = 32 << 10
)

// matcher is a compiled Bindings: the selected detectors in priority
// order and one automaton over all their keywords, lower-cased.
type matcher struct {
	ds []*Detector
	// kw returns the keyword automaton, built on first use: building it
	// for every detector costs a few milliseconds, which a command that
	// prints nothing need not pay.
	kw     func() *ahocorasick.Automaton
	kwDets [][]int // keyword pattern -> indexes into ds
	// scratches are reused by the one-shot passes (Scan, Redact): an
	// upstream result is cleaned field by field, and a fresh scratch per
	// string cost a 32 KiB allocation each.
	scratches sync.Pool
}

// oneShot runs f with a pooled scratch.
func (m *matcher) oneShot(f func(sc *scratch)) {
	sc, _ := m.scratches.Get().(*scratch)
	if sc == nil {
		sc = new(scratch)
	}
	f(sc)
	if cap(sc.low) <= 4*batchBytes { // a huge text's buffer is not kept
		sc.found, sc.kwm, sc.lowSeg = sc.found[:0], nil, nil
		m.scratches.Put(sc)
	}
}

var (
	cacheMu sync.Mutex
	cache   = map[string]*matcher{}
)

// compiled returns the matcher for a sorted set of catalog indexes. The
// service binds once per execution; policies name few distinct sets, so
// the cache stays small (and is bounded anyway).
func compiled(c *catalog, sel []int) (*matcher, error) {
	var key strings.Builder
	for _, i := range sel {
		key.WriteString(strconv.Itoa(i))
		key.WriteByte(',')
	}
	cacheMu.Lock()
	m, ok := cache[key.String()]
	cacheMu.Unlock()
	if ok {
		return m, nil
	}
	m = &matcher{}
	ids := map[string]int{}
	var patterns [][]byte
	for _, i := range sel {
		d := c.ds[i]
		di := len(m.ds)
		m.ds = append(m.ds, d)
		for _, k := range d.Keywords {
			k = strings.ToLower(k)
			if k == "" {
				continue
			}
			if strings.ContainsAny(k, "\r\n") {
				// Judging is per line: such a keyword could never occur.
				return nil, fmt.Errorf("dlp: detector %s: keyword %q spans lines", d.Name, k)
			}
			p, seen := ids[k]
			if !seen {
				p = len(patterns)
				ids[k] = p
				patterns = append(patterns, []byte(k))
				m.kwDets = append(m.kwDets, nil)
			}
			if !slices.Contains(m.kwDets[p], di) {
				m.kwDets[p] = append(m.kwDets[p], di)
			}
		}
		if len(d.Keywords) == 0 {
			return nil, fmt.Errorf("dlp: detector %s has no keywords", d.Name)
		}
	}
	m.kw = sync.OnceValue(func() *ahocorasick.Automaton {
		ac, err := ahocorasick.NewBuilder().AddPatterns(patterns).Build()
		if err != nil {
			// Every detector has a keyword and none is empty: checked above.
			panic("dlp: keyword automaton: " + err.Error())
		}
		return ac
	})
	cacheMu.Lock()
	if len(cache) < 256 {
		cache[key.String()] = m
	}
	cacheMu.Unlock()
	return m, nil
}

// scratch is per-pass working memory, reused across lines and writes.
type scratch struct {
	low    []byte
	stamp  []uint32
	gen    uint32
	cands  []int
	kwm    []ahocorasick.Match // the current segment's keyword matches
	lowSeg []byte              // the current segment, lower-cased
	found  []found
}

type found struct{ start, end, det int }

// emitFunc receives the output in order: verbatim text (h nil), or a hit
// whose span is replaced.
type emitFunc func(verbatim []byte, h *Hit)

// advance judges buf from its start, which must be a segment boundary,
// as far as it can without seeing past buf's end (all of it when eof). It
// emits what it judged and returns how many bytes that was, and, when it
// stopped short, the length buf must reach before another call without a
// new line ending can make progress (a waiting block needs its END line
// or its cap). Every decision depends only on the
// bytes and on eof, never on how they were split into calls: that is what
// makes a Stream's output equal Redact's.
func (m *matcher) advance(buf []byte, eof bool, sc *scratch, emit emitFunc) (consumed, need int) {
	if len(sc.stamp) < len(m.ds) {
		sc.stamp = make([]uint32, len(m.ds))
	}
	pos := 0
	// The first line goes alone: when a stream comes back to a block that
	// was waiting for its END line, only that line needs the keyword pass.
	single := true
	for pos < len(buf) {
		rest := buf[pos:]
		nl := indexTerm(rest[:min(len(rest), LineWindow+1)])
		switch {
		case nl >= 0:
			end := pos + nl + 1
			if !single && len(rest) > nl+1 {
				// More complete lines in the same automaton pass.
				if t := lastTerm(rest[:min(len(rest), batchBytes)]); t+1 > nl+1 {
					end = pos + t + 1
				}
			}
			single = false
			next, wait := m.lines(buf, pos, end, eof, sc, emit)
			if wait {
				return next, next + MaxBlockBytes
			}
			pos = next
		case len(rest) > LineWindow:
			next, wait := m.segment(buf, pos, pos+LineWindow, false, m.candidates(rest[:LineWindow], sc), eof, sc, emit)
			if wait {
				return next, next + MaxBlockBytes
			}
			pos = next
		case eof:
			next, wait := m.segment(buf, pos, len(buf), true, m.candidates(rest, sc), eof, sc, emit)
			if wait { // cannot happen at eof; stay safe
				return next, len(buf) + 1
			}
			pos = next
		default:
			return pos, pos + LineWindow + 1
		}
	}
	return pos, 0
}

// lines judges the complete lines in buf[from:to] (to is just past a line
// ending) with one automaton pass, emitting runs of clean lines whole.
func (m *matcher) lines(buf []byte, from, to int, eof bool, sc *scratch, emit emitFunc) (next int, wait bool) {
	matches := m.keywords(buf[from:to], sc)
	run := from // start of the pending verbatim run
	ls := from
	mi := 0
	for ls < to {
		le := ls + indexTerm(buf[ls:to])
		// Keyword matches never span a line ending, so those ending by le
		// lie in this line.
		first := mi
		for mi < len(matches) && from+matches[mi].End <= le {
			mi++
		}
		if first == mi {
			ls = le + 1
			continue
		}
		cands := m.collect(matches[first:mi], sc)
		sc.lowSeg = sc.low[ls-from : le-from]
		sc.kwm = sc.kwm[:0]
		for _, k := range matches[first:mi] {
			k.Start, k.End = k.Start+from-ls, k.End+from-ls
			sc.kwm = append(sc.kwm, k)
		}
		if run < ls {
			emit(buf[run:ls], nil)
		}
		n, w := m.segment(buf, ls, le, true, cands, eof, sc, emit)
		if w || n != le+1 {
			// A block took over (or must wait): the rest of the batch is
			// judged afresh from where it ended.
			return n, w
		}
		ls, run = n, n
	}
	if run < to {
		emit(buf[run:to], nil)
	}
	return to, false
}

// segment judges buf[ls:se]: a whole line (final; a line ending, if any,
// follows at se) or a window of a long line. cands are the detectors whose
// keywords occur in it.
func (m *matcher) segment(buf []byte, ls, se int, final bool, cands []int, eof bool, sc *scratch, emit emitFunc) (next int, wait bool) {
	seg := buf[ls:se]
	limit := len(seg) // hits must start before limit
	if !final {
		limit = LineWindow - WindowOverlap
	}
	end := se
	if final && se < len(buf) {
		end = se + 1 // the line ending
	}
	if len(cands) == 0 {
		if !final {
			end = ls + limit
		}
		emit(buf[ls:end], nil)
		return end, false
	}

	// A block opening in this segment ends the segment there.
	bs, be, bd := -1, 0, -1
	for _, di := range cands {
		d := m.ds[di]
		if !d.block() {
			continue
		}
		if loc := d.compiled().re.FindIndex(seg); loc != nil && loc[0] < limit && (bs < 0 || loc[0] < bs) {
			bs, be, bd = loc[0], loc[1], di
		}
	}
	if bs >= 0 {
		if p := m.emitHits(buf, ls, ls+bs, bs, cands, sc, emit); p < ls+bs {
			emit(buf[p:ls+bs], nil)
		}
		from, capEnd := ls+be, ls+bs+MaxBlockBytes
		searchEnd := min(len(buf), capEnd)
		if !eof && len(buf) < capEnd {
			// Only complete lines: an END marker never spans a line
			// ending, so one found there is the one the whole text has.
			searchEnd = lastTerm(buf[:searchEnd])
		}
		e := -1
		if searchEnd > from {
			if loc := m.ds[bd].compiled().end.FindIndex(buf[from:searchEnd]); loc != nil {
				e = from + loc[1]
			}
		}
		switch {
		case e >= 0:
		case len(buf) >= capEnd:
			e = capEnd
		case eof:
			e = len(buf)
		default:
			return ls + bs, true
		}
		emit(nil, &Hit{Detector: m.ds[bd].Name, Start: ls + bs, End: e})
		return e, false
	}

	last := m.emitHits(buf, ls, se, limit, cands, sc, emit)
	next = end
	if !final {
		next = max(ls+limit, last)
	}
	if last < next {
		emit(buf[last:next], nil)
	}
	return next, false
}

// emitHits judges buf[ls:se] with the line detectors among cands and
// emits it, with the hits that start before ls+limit replaced, up to the
// end of the last hit; it returns that end (ls when there was none). The
// caller emits the rest.
func (m *matcher) emitHits(buf []byte, ls, se, limit int, cands []int, sc *scratch, emit emitFunc) int {
	seg := buf[ls:se]
	sc.found = sc.found[:0]
	for _, di := range cands {
		d := m.ds[di]
		if d.block() {
			continue
		}
		c := d.compiled()
		switch p := &c.pre; {
		case p.anchored != nil && p.atKw:
			if !m.anchoredMatch(p, di, seg, sc.kwm) {
				continue
			}
		case p.anchored != nil:
			if !p.atLits(seg, sc.lowSeg[:len(seg)]) {
				continue
			}
		case p.relaxed != nil:
			if !p.relaxed.Match(seg) {
				continue
			}
		}
		for _, loc := range c.re.FindAllSubmatchIndex(seg, -1) {
			if s, e, ok := d.judge(seg, loc); ok && s < limit {
				sc.found = append(sc.found, found{s, e, di})
			}
		}
	}
	slices.SortFunc(sc.found, func(a, b found) int {
		if a.start != b.start {
			return a.start - b.start
		}
		if a.end != b.end {
			return b.end - a.end
		}
		return a.det - b.det
	})
	pos := 0
	for _, f := range sc.found {
		if f.start < pos {
			continue // overlaps a hit already taken
		}
		if pos < f.start {
			emit(seg[pos:f.start], nil)
		}
		emit(nil, &Hit{Detector: m.ds[f.det].Name, Start: ls + f.start, End: ls + f.end})
		pos = f.end
	}
	return ls + pos
}

// anchoredMatch tries the anchored prefilter at each of detector di's
// keywords in seg.
func (m *matcher) anchoredMatch(p *prefilters, di int, seg []byte, kwm []ahocorasick.Match) bool {
	for _, k := range kwm {
		if k.Start < len(seg) && slices.Contains(m.kwDets[k.PatternID], di) && p.maybeAt(seg[k.Start:]) && p.anchored.Match(seg[k.Start:]) {
			return true
		}
	}
	return false
}

// judge applies a line detector's secret group, entropy and allowlists to
// one match and returns the span to redact.
func (d *Detector) judge(seg []byte, loc []int) (start, end int, ok bool) {
	ms, me := loc[0], loc[1]
	ss, se, grouped := d.secret(loc)
	if ss < 0 || se <= ss {
		return 0, 0, false
	}
	secret := seg[ss:se]
	if d.Entropy > 0 && entropy(secret) <= d.Entropy {
		return 0, 0, false
	}
	if len(d.allow) > 0 && d.allowed(string(secret), string(seg[ms:me]), string(seg)) {
		return 0, 0, false
	}
	// The redacted span is the secret group when the rule names it, or
	// when only a delimiter (at most two bytes: a quote, `\n`) follows it
	// in the match. A first group that sits inside the token (a JWT's
	// header, a webhook URL's path segment) would leave the rest of the
	// token visible, so there the whole match goes: fail closed.
	if grouped && d.SecretGroup == 0 && me-se > 2 {
		ss, se = ms, me
	}
	return ss, se, true
}

// secret returns the span of a match's secret group (the whole match
// when the detector has none) and whether it is a group.
func (d *Detector) secret(loc []int) (start, end int, grouped bool) {
	if d.SecretGroup > 0 && 2*d.SecretGroup+1 < len(loc) {
		return loc[2*d.SecretGroup], loc[2*d.SecretGroup+1], true
	}
	if d.SecretGroup == 0 {
		for g := 1; 2*g+1 < len(loc); g++ {
			if loc[2*g] >= 0 && loc[2*g+1] > loc[2*g] {
				return loc[2*g], loc[2*g+1], true
			}
		}
	}
	return loc[0], loc[1], false
}

// allowed reports whether one of d's allowlists excuses a match.
func (d *Detector) allowed(secret, match, line string) bool {
	for _, a := range d.allow {
		if a.allows(secret, match, line) {
			return true
		}
	}
	return false
}

// entropy is the Shannon entropy of b in bits per byte.
func entropy(b []byte) float64 {
	if len(b) == 0 {
		return 0
	}
	var counts [256]int
	for _, c := range b {
		counts[c]++
	}
	n := float64(len(b))
	h := 0.0
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}

// keywords returns the keyword matches in text, ignoring ASCII case.
func (m *matcher) keywords(text []byte, sc *scratch) []ahocorasick.Match {
	if cap(sc.low) < len(text) {
		sc.low = make([]byte, len(text), max(len(text), batchBytes))
	}
	low := sc.low[:len(text)]
	lower(low, text)
	return m.kw().FindAllOverlapping(low)
}

// candidates returns the detectors whose keywords occur in seg, and
// keeps the keyword matches in sc.kwm.
func (m *matcher) candidates(seg []byte, sc *scratch) []int {
	sc.kwm = m.keywords(seg, sc)
	sc.lowSeg = sc.low[:len(seg)]
	return m.collect(sc.kwm, sc)
}

// collect turns keyword matches into the detectors they stand for, in
// priority order, each once.
func (m *matcher) collect(matches []ahocorasick.Match, sc *scratch) []int {
	sc.gen++
	if sc.gen == 0 { // wrapped: old stamps could collide
		clear(sc.stamp)
		sc.gen = 1
	}
	sc.cands = sc.cands[:0]
	for _, k := range matches {
		for _, di := range m.kwDets[k.PatternID] {
			if sc.stamp[di] != sc.gen {
				sc.stamp[di] = sc.gen
				sc.cands = append(sc.cands, di)
			}
		}
	}
	slices.Sort(sc.cands)
	return sc.cands
}

// lower writes src with ASCII letters lower-cased into dst, eight bytes
// at a time: the keyword pass reads every byte of output, so this loop is
// most of the cost on clean text.
func lower(dst, src []byte) {
	const (
		ones = 0x0101010101010101
		high = 0x8080808080808080
	)
	i := 0
	for ; i+8 <= len(src); i += 8 {
		x := binary.LittleEndian.Uint64(src[i:])
		// For each byte below 0x80: bit 7 of (b + 0x3f) is set iff b >= 'A';
		// bit 7 of (b + 0x25) is set iff b > 'Z'. Bytes >= 0x80 are left.
		ascii := ^x & high
		b := x &^ high
		upper := (b + ones*(0x80-'A')) &^ (b + ones*(0x80-'Z'-1)) & ascii
		x |= (upper >> 2)
		binary.LittleEndian.PutUint64(dst[i:], x)
	}
	for ; i < len(src); i++ {
		c := src[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst[i] = c
	}
}

// indexTerm returns the index of the first line ending (\n or \r) in b,
// or -1.
func indexTerm(b []byte) int {
	n := bytes.IndexByte(b, '\n')
	if n < 0 {
		return bytes.IndexByte(b, '\r')
	}
	if r := bytes.IndexByte(b[:n], '\r'); r >= 0 {
		return r
	}
	return n
}

// lastTerm returns the index of the last line ending in b, or -1.
func lastTerm(b []byte) int {
	n := bytes.LastIndexByte(b, '\n')
	if r := bytes.LastIndexByte(b[n+1:], '\r'); r >= 0 {
		return n + 1 + r
	}
	return n
}
