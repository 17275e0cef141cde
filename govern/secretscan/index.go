package secretscan

import (
	"encoding/binary"
	"math/bits"
)

// index finds where a text may hold a piece of one of a set of forms. It
// keeps every form's symbols one after another and, for every g-byte gram
// inside a form, where it stands. A scan reads one gram every stride
// symbols: a gram that no form holds fails a Bloom filter (one 64-bit word,
// two bits) and costs nothing more; one that passes is looked up, and
// each place it stands in a form is a seed, extended both ways for as long
// as text and form agree. Every run of stride+g-1 symbols holds a sampled
// gram, so every match at least that long is found, whatever the phase of
// the sampling.
type index struct {
	g      int // gram length: 4 or 8
	stride int
	text   []byte
	owner  []int32 // text position -> form
	val    []int32 // text position -> value byte it encodes
	run    []int16 // text position -> eligible run of the value, or -1
	forms  []formInfo
	bloom  []uint64
	bshift uint
	quad   []uint64 // Bloom filter of the 4-grams (folded index only)
	qshift uint
	slots  []int32 // text position+1 of a gram; 0 is empty
	sshift uint
}

type formInfo struct {
	start, end  int32 // in text
	secret      int32
	kind        uint8
	lead, trail []byte
}

func (f *formInfo) len() int { return int(f.end - f.start) }

type indexForm struct {
	secret int
	laneForm
	runs []int16 // of the value, per value byte; nil: no fragments
}

// newIndex builds an index of grams of length g over forms, sampled so
// that a match of minMatch symbols is always seen.
func newIndex(g, minMatch int, forms []indexForm) *index {
	ix := &index{g: g, stride: minMatch - g + 1}
	grams := 0
	for _, f := range forms {
		start := int32(len(ix.text))
		ix.text = append(ix.text, f.sym...)
		for i := range f.sym {
			ix.owner = append(ix.owner, int32(len(ix.forms)))
			v, r := int32(0), int16(-1)
			if f.val != nil {
				v = f.val[i]
				if f.runs != nil {
					r = f.runs[v]
				}
			}
			ix.val = append(ix.val, v)
			ix.run = append(ix.run, r)
		}
		ix.forms = append(ix.forms, formInfo{start: start, end: int32(len(ix.text)), secret: int32(f.secret), kind: f.kind, lead: f.lead, trail: f.trail})
		grams += max(len(f.sym)-g+1, 0)
	}
	ix.bloom, ix.bshift = newBloom(grams)
	nslots := 1 << max(4, bits.Len(uint(grams*2)))
	ix.slots = make([]int32, nslots)
	ix.sshift = uint(64 - bits.TrailingZeros(uint(nslots)))
	for fi := range ix.forms {
		f := &ix.forms[fi]
		for q := int(f.start); q+g <= int(f.end); q++ {
			key := ix.key(ix.text, q)
			h := key * 0x9E3779B97F4A7C15
			ix.bloom[h>>ix.bshift] |= bloomBits(h)
			s := (key * 0xC2B2AE3D27D4EB4F) >> ix.sshift
			for ix.slots[s] != 0 {
				s = (s + 1) & uint64(nslots-1)
			}
			ix.slots[s] = int32(q + 1)
		}
	}
	return ix
}

// withQuads adds a filter of the forms' 4-grams, for sampling a text
// without building its views (see textMatches).
func (ix *index) withQuads() *index {
	ix.quad, ix.qshift = newBloom(len(ix.text) / 2)
	for fi := range ix.forms {
		f := &ix.forms[fi]
		for q := int(f.start); q+4 <= int(f.end); q++ {
			h := uint64(binary.LittleEndian.Uint32(ix.text[q:])) * 0x9E3779B97F4A7C15
			ix.quad[h>>ix.qshift] |= bloomBits(h)
		}
	}
	return ix
}

// newBloom sizes a filter at 16 bits a gram: two bits in one word, so a
// gram no form holds passes about one time in 150.
func newBloom(grams int) ([]uint64, uint) {
	words := 1 << max(6, bits.Len(uint(grams*16/64)))
	return make([]uint64, words), uint(64 - bits.TrailingZeros(uint(words)))
}

// maybeQuad reports whether some form may hold the folded 4-gram key.
func (ix *index) maybeQuad(key uint32) bool {
	h := uint64(key) * 0x9E3779B97F4A7C15
	m := bloomBits(h)
	return ix.quad[h>>ix.qshift]&m == m
}

func bloomBits(h uint64) uint64 {
	return 1<<(h>>20&63) | 1<<(h>>26&63)
}

// key is the gram at b[i:], which has at least g bytes.
func (ix *index) key(b []byte, i int) uint64 {
	if ix.g == 8 {
		return binary.LittleEndian.Uint64(b[i:])
	}
	return uint64(binary.LittleEndian.Uint32(b[i:]))
}

// maybe reports whether some form may hold the gram key.
func (ix *index) maybe(key uint64) bool {
	h := key * 0x9E3779B97F4A7C15
	m := bloomBits(h)
	return ix.bloom[h>>ix.bshift]&m == m
}

// seeds calls f with every text position that holds the gram key.
func (ix *index) seeds(key uint64, f func(q int)) {
	mask := uint64(len(ix.slots) - 1)
	for s := (key * 0xC2B2AE3D27D4EB4F) >> ix.sshift; ix.slots[s] != 0; s = (s + 1) & mask {
		if q := int(ix.slots[s] - 1); ix.key(ix.text, q) == key {
			f(q)
		}
	}
}

// fragment reports whether text[a:b], a piece of one form, may be matched
// on its own: it is taken from one eligible run of the value and encodes
// at least fragBytes of it.
func (ix *index) fragment(a, b int) bool {
	r := ix.run[a]
	if r < 0 || ix.run[b-1] != r {
		return false
	}
	lo, hi := ix.val[a], ix.val[b-1]
	if lo > hi {
		lo, hi = hi, lo
	}
	return hi-lo+1 >= fragBytes
}
