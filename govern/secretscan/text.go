package secretscan

import (
	"encoding/binary"
	"math/bits"
)

// textStride is how far apart, in bytes, the text is sampled. A match of
// minLane symbols holds a sample whose next four symbols, and an 8-gram
// around them, lie inside it (see textMatches).
const textStride = minLane - 3

// textMatches finds the matches of ix's forms (if ix is set) and the
// base64 runs worth decoding (if runs is set) in the text segments,
// reading the normalised view in place. It samples the text every
// textStride bytes: from a sample, the next four symbols (a folded 4-gram)
// are checked against the forms' 4-grams; only one that passes has the
// 8-grams that begin four symbols before it and at it checked, and only an
// 8-gram that passes is looked up and extended. Why this finds every match
// of at least minLane symbols [a, b): consecutive samples' first symbols
// are at most textStride symbols apart (a sample's first symbol is looked
// for in its own textStride bytes only: past them, the next sample finds
// the same one), so one sample's first symbol k has a <= k < a+textStride,
// that is k <= b-4. Then [k, k+4) lies in [a, b); and if k >= a+4, the
// 8-gram [k-4, k+4) does, else [k, k+8) does (k+8 < a+12 <= b).
//
// The same samples find the base64 runs: a run of minRun >=
// 2*textStride+7 characters holds the eight bytes of two consecutive
// samples (the first begins at most textStride-1 bytes into it, the
// second's word ends at most 2*textStride+7 bytes in), so a sample whose
// word and the word before are both base64 characters has its run judged.
// runAt reads the run by the exact byte class, so where the samples fall
// does not change what is judged.
func (sc *scratch) textMatches(m *Matcher, ix *index, buf []byte, final bool, depth int) {
	skip := 0 // samples inside a match already found are not looked at
	runs := depth < maxDepth
	var quad []uint64
	var qshift uint
	if ix != nil {
		quad, qshift = ix.quad, ix.qshift
	}
	for si, seg := range sc.segs {
		lo, hi := seg[0], seg[1]
		open := si == len(sc.segs)-1 && hi == sc.end && !final // more may follow
		sc.run = runState{judged: -1, start: -1}
		if runs && quad == nil {
			sc.runSamples(m, buf, lo, hi, final, depth)
		}
		// prev: the word of the sample before is all base64; judged: the
		// samples before it are in runs judged already.
		p, prev, judged := lo, 0, lo
		for quad != nil {
			// Most samples are done in sampleRun; it stops at the others.
			var f uint32
			var st int
			if p, f, st = sampleRun(buf[:hi], p, quad, qshift, runs, prev, judged); p+8 > hi {
				break
			}
			prev = st & 1
			if st&sampleRunStarts != 0 {
				sc.runAt(m, buf, lo, hi, p-textStride, final, depth)
				judged = max(sc.run.judged, sc.run.stop) + textStride
				if f != 0 && !quadPasses(buf[p:p+8:p+8], f, quad, qshift) {
					p += textStride
					continue
				}
			}
			if f == 0 {
				// Fewer than four symbols here: the next ones, further on.
				var at [4]int
				if fourSymbolsNear(buf, p, hi, &at) && ix.maybeQuad(quadKey(buf, at[:])) {
					skip = sc.textSample(ix, buf, lo, hi, open, at[0], skip)
				}
			} else if p+int(f&63)>>3 >= skip {
				// The first four symbols of the eight bytes at p passed.
				at := [12]int{4: p + int(f&63)>>3, 5: p + int(f>>6&63)>>3, 6: p + int(f>>12&63)>>3, 7: p + int(f>>18&63)>>3}
				skip = max(skip, sc.textSeed(ix, buf, lo, hi, open, &at))
			}
			p += textStride
		}
		for ; p < hi && quad != nil; p += textStride {
			// The tail, shorter than a word.
			var at [4]int
			if fourSymbolsNear(buf, p, hi, &at) && ix.maybeQuad(quadKey(buf, at[:])) {
				skip = sc.textSample(ix, buf, lo, hi, open, at[0], skip)
			}
		}
		if open {
			if ix != nil {
				sc.holdText(buf, lo, hi)
			}
			if runs {
				sc.holdRun(buf, lo, hi)
			}
		}
	}
}

// sampleRun reads the samples of b from p on, textStride apart, for as
// long as each has four symbols in its eight bytes whose folded 4-gram
// fails the filter quad and, with runs set, does not start a base64 run
// still to judge (its word and the word of the sample before, prev, are
// base64, and it is at or past judged): most samples, in a loop of their
// own, without branches but those, so that all it needs stays in
// registers. It returns the first other sample (or where b has no more
// words), its entry of first4 (0 when its word has fewer than four
// symbols) and its state: bit 0 set when its word is base64, and
// sampleRunStarts when it starts a run.
func sampleRun(b []byte, p int, quad []uint64, qshift uint, runs bool, prev, judged int) (int, uint32, int) {
	for ; p <= len(b)-8; p += textStride {
		w := binary.LittleEndian.Uint64(b[p:])
		x := w & lo7
		l := x | fold8
		mask := ((x+ge30)&^(x+ge3a) | (l+ge61)&^(l+ge7b)) & high &^ w // symMask(w)
		// The multiply gathers the mask's bits into a byte.
		f := first4[(mask>>7*0x0102040810204080)>>56]
		full := 0
		if runs {
			// Base64, or a control byte or DEL that mayRunPunct takes:
			// runAt turns those down.
			full = b2i(mayRunSym(w, mask) == high)
			if full&prev&b2i(p >= judged) != 0 {
				return p, f, full | sampleRunStarts
			}
			prev = full
		}
		if f == 0 {
			return p, 0, full
		}
		// Every iteration moves on by textStride, so the filter's loads
		// of consecutive samples overlap.
		key := uint64(byte(w>>(f&63))|0x20) | uint64(byte(w>>(f>>6&63))|0x20)<<8 | uint64(byte(w>>(f>>12&63))|0x20)<<16 | uint64(byte(w>>(f>>18&63))|0x20)<<24
		h := key * 0x9E3779B97F4A7C15
		if bb := bloomBits(h); quad[h>>qshift]&bb == bb {
			return p, f, full
		}
	}
	return p, 0, prev
}

const sampleRunStarts = 2

// quadPasses is sampleRun's filter test of the word b, whose first four
// symbols f gives.
func quadPasses(b []byte, f uint32, quad []uint64, qshift uint) bool {
	w := binary.LittleEndian.Uint64(b)
	key := uint64(byte(w>>(f&63))|0x20) | uint64(byte(w>>(f>>6&63))|0x20)<<8 | uint64(byte(w>>(f>>12&63))|0x20)<<16 | uint64(byte(w>>(f>>18&63))|0x20)<<24
	h := key * 0x9E3779B97F4A7C15
	bb := bloomBits(h)
	return quad[h>>qshift]&bb == bb
}

// runSamples reads a segment for base64 runs when there are no forms to
// sample it for: the same samples, the same test.
func (sc *scratch) runSamples(m *Matcher, buf []byte, lo, hi int, final bool, depth int) {
	prev, judged := 0, lo
	for p := lo; p+8 <= hi; p += textStride {
		full := b2i(runExact(binary.LittleEndian.Uint64(buf[p:p+8:p+8])) == high)
		if full&prev&b2i(p >= judged) != 0 {
			sc.runAt(m, buf, lo, hi, p-textStride, final, depth)
			judged = max(sc.run.judged, sc.run.stop) + textStride
		}
		prev = full
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// runState is what the samples of one segment know about base64 runs.
type runState struct {
	judged int // the end of the last run judged
	start  int // its start
	stop   int // the end of the last run decoded
}

// runAt is called for a sample whose eight bytes are base64 characters:
// it judges the run that holds them, unless it did already.
func (sc *scratch) runAt(m *Matcher, buf []byte, lo, hi, p int, final bool, depth int) {
	r := &sc.run
	if p < r.judged || p < r.stop || runExact(binary.LittleEndian.Uint64(buf[p:p+8])) != high {
		return
	}
	// Word by word: a word that is not all base64 says how many of its
	// bytes next to the run are. Byte by byte only near lo and hi. The run
	// is the same whatever sample of it this is.
	start := p
	for start-8 >= lo {
		rm := runExact(binary.LittleEndian.Uint64(buf[start-8:]))
		if rm != high {
			start -= bits.LeadingZeros64(^rm&high) >> 3
			break
		}
		start -= 8
	}
	if start-8 < lo {
		for start > lo && class[buf[start-1]]&clRun != 0 {
			start--
		}
	}
	stop, done := p+8, false
	for stop+8 <= hi {
		rm := runExact(binary.LittleEndian.Uint64(buf[stop:]))
		if rm != high {
			stop += bits.TrailingZeros64(^rm&high) >> 3
			break
		}
		stop += 8
	}
	if stop+8 > hi {
		for stop < hi && class[buf[stop]]&clRun != 0 {
			stop++
		}
	}
	r.judged, r.start = stop, start
	if start == lo && lo > 0 && class[buf[lo-1]]&clRun != 0 {
		return // begun before lo: judged then
	}
	if stop-start < minRun {
		return // holdRun holds it if it may grow
	}
	kind := judgeRun(buf[start : start+minRun])
	if kind == runPlain {
		return
	}
	stop, done = runEnd(buf, start, final)
	if !done {
		sc.holdAt(start)
		return
	}
	r.stop = stop
	if secret, ok := m.decoded(buf[start:stop], kind, depth); ok {
		sc.spans = append(sc.spans, Span{start, stop, secret})
	}
}

// holdRun holds back a run at the end of an open segment that was not
// judged yet: it may still grow into one worth decoding. One that was
// judged plain stays so: the judgement reads its first minRun bytes.
func (sc *scratch) holdRun(buf []byte, lo, hi int) {
	start := hi
	for start > lo && class[buf[start-1]]&clRun != 0 {
		start--
	}
	switch {
	case start == hi, start == sc.run.start && sc.run.judged == hi && hi-start >= minRun:
	case start == lo && lo > 0 && class[buf[lo-1]]&clRun != 0:
	default:
		sc.holdAt(start)
	}
}

// fourSymbols finds the first four symbols from p on, no two more than
// maxGap bytes apart (a wider gap starts the four over), before hi.
func fourSymbols(buf []byte, p, hi int, at *[4]int) bool {
	k := 0
	for j := p; j < hi; j++ {
		if class[buf[j]]&clSym == 0 {
			continue
		}
		if k > 0 && j-at[k-1]-1 > maxGap {
			k = 0
		}
		at[k] = j
		if k++; k == 4 {
			return true
		}
	}
	return false
}

// fourSymbolsNear is fourSymbols for the sample at p, when the first of
// the four must lie in its own textStride bytes (past them, the next
// sample finds the same four): it stops as soon as they cannot.
func fourSymbolsNear(buf []byte, p, hi int, at *[4]int) bool {
	k := 0
	near := p + textStride
	for j := p; j < hi; j++ {
		if class[buf[j]]&clSym == 0 {
			if k == 0 && j+1 >= near {
				return false
			}
			continue
		}
		if k > 0 && j-at[k-1]-1 > maxGap {
			k = 0
		}
		if k == 0 && j >= near {
			return false
		}
		at[k] = j
		if k++; k == 4 {
			return true
		}
	}
	return false
}

// textSample checks the sample whose first symbol is at first (its 4-gram
// passed the filter) and returns the new skip.
func (sc *scratch) textSample(ix *index, buf []byte, lo, hi int, open bool, first, skip int) int {
	var at [12]int
	if first < skip || !fourSymbols(buf, first, hi, (*[4]int)(at[4:8])) || at[4] != first {
		return skip
	}
	return max(skip, sc.textSeed(ix, buf, lo, hi, open, &at))
}

// quadKey is the folded 4-gram of the symbols at the four positions.
func quadKey(buf []byte, at []int) uint32 {
	return uint32(fold[buf[at[0]]]) | uint32(fold[buf[at[1]]])<<8 | uint32(fold[buf[at[2]]])<<16 | uint32(fold[buf[at[3]]])<<24
}

func gram8(buf []byte, at []int) uint64 {
	return uint64(quadKey(buf, at[:4])) | uint64(quadKey(buf, at[4:8]))<<32
}

// textSeed checks the 8-grams around the four symbols at at[4:8] and
// extends those that some form holds. It returns the end of the last match
// it found, or 0.
func (sc *scratch) textSeed(ix *index, buf []byte, lo, hi int, open bool, at *[12]int) int {
	// The four symbols before at[4] and after at[7]: from the word before
	// and the word after when each holds four, else walked to.
	nb, na := 0, 0
	if b := at[4] - 8; b >= lo {
		w := binary.LittleEndian.Uint64(buf[b:at[4]])
		if f := last4[(symMask(w)>>7*0x0102040810204080)>>56]; f != 0 {
			for i := range 4 {
				at[i] = b + int(f>>(6*i)&63)>>3
			}
			nb = 4
		}
	}
	if a := at[7] + 1; a+8 <= hi {
		w := binary.LittleEndian.Uint64(buf[a : a+8])
		if f := first4[(symMask(w)>>7*0x0102040810204080)>>56]; f != 0 {
			for i := range 4 {
				at[8+i] = a + int(f>>(6*i)&63)>>3
			}
			na = 4
		}
	}
	if nb < 4 {
		for i := at[4]; nb < 4; nb++ {
			if i = symBefore(buf, i, lo); i < 0 {
				break
			}
			at[3-nb] = i
		}
	}
	if na < 4 {
		for i := at[7]; na < 4; na++ {
			j, _ := symAfter(buf, i, hi)
			if j < 0 {
				break
			}
			i = j
			at[8+na] = i
		}
	}
	found := 0
	try := func(seed []int) {
		key := gram8(buf, seed)
		if !ix.maybe(key) {
			return
		}
		ix.seeds(key, func(q int) {
			if e := sc.textRegion(ix, buf, lo, hi, open, seed, q); e > found {
				found = e
			}
		})
	}
	if nb == 4 {
		try(at[0:8])
	}
	if na == 4 {
		try(at[4:12])
	}
	return found
}

// textRegion extends the seed (the positions of eight symbols that equal
// the form text at q) both ways for as long as text and form agree, and
// keeps the result if it is a match. It returns the match's end, or 0.
func (sc *scratch) textRegion(ix *index, buf []byte, lo, hi int, open bool, seed []int, q int) int {
	f := &ix.forms[ix.owner[q]]
	ta, s := q, seed[0]
	for ta > int(f.start) {
		j := symBefore(buf, s, lo)
		if j < 0 || fold[buf[j]] != ix.text[ta-1] {
			break
		}
		ta, s = ta-1, j
	}
	tb, last := q+8, seed[7]
	more := false // the text ended while the form went on
	for tb < int(f.end) {
		j, atEnd := symAfter(buf, last, hi)
		if j < 0 {
			more = atEnd
			break
		}
		if fold[buf[j]] != ix.text[tb] {
			break
		}
		tb, last = tb+1, j
	}
	fa, fb := ta-int(f.start), tb-int(f.start)
	if open && more {
		sc.holdAt(s - maxLeftExt) // it may go on
		return 0
	}
	if tb-ta < minLane || !(fa == 0 && fb == f.len()) && !ix.fragment(ta, tb) {
		return 0
	}
	s, e := widen(buf, s, last+1, f, fa == 0, fb == f.len())
	if open && e+maxRightExt > hi {
		sc.holdAt(s - maxLeftExt) // the widening may need more
		return 0
	}
	sc.spans = append(sc.spans, Span{s, e, int(f.secret)})
	return e
}

// symBefore returns the position of the last symbol before i, not before
// lo and at most maxGap bytes of separators away, or -1.
func symBefore(buf []byte, i, lo int) int {
	for j := i - 1; j >= lo && i-1-j <= maxGap; j-- {
		if class[buf[j]]&clSym != 0 {
			return j
		}
	}
	return -1
}

// symAfter returns the position of the first symbol after i, before hi and
// at most maxGap bytes of separators away, or -1; atEnd reports that hi
// came first.
func symAfter(buf []byte, i, hi int) (int, bool) {
	for j := i + 1; j-i-1 <= maxGap; j++ {
		if j >= hi {
			return -1, true
		}
		if class[buf[j]]&clSym != 0 {
			return j, false
		}
	}
	return -1, false
}

// holdText holds back the end of an open segment that a match still to
// come may begin in: the last minLane-1 symbols, unless a gap wider than
// maxGap cuts them off. A longer beginning holds a sample, and was held
// back as a match that may go on.
func (sc *scratch) holdText(buf []byte, lo, hi int) {
	j := symBefore(buf, hi, lo)
	if j < 0 {
		return
	}
	for n := 1; n < minLane-1; n++ {
		k := symBefore(buf, j, lo)
		if k < 0 {
			break
		}
		j = k
	}
	sc.holdAt(j - maxLeftExt)
}

// first4 is, for each set of symbol bytes in a word (bit i: byte i), the
// bit offsets of the first four of them, 6 bits each, or 0 if fewer;
// last4 those of the last four, in order.
var first4, last4 = func() (t, u [256]uint32) {
	for m := range 256 {
		var off []uint32
		for b := range 8 {
			if m&(1<<b) != 0 {
				off = append(off, uint32(8*b))
			}
		}
		if n := len(off); n >= 4 {
			t[m] = 1<<31 | off[0] | off[1]<<6 | off[2]<<12 | off[3]<<18
			u[m] = 1<<31 | off[n-4] | off[n-3]<<6 | off[n-2]<<12 | off[n-1]<<18
		}
	}
	return t, u
}()
