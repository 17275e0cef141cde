package secretscan

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"strings"
	"sync"
)

// Matcher finds any form of any of its secrets in a text. It is immutable
// and safe for concurrent use.
type Matcher struct {
	ids   []string
	fold  *index // the forms the normalised views match
	exact *index // exact forms of values too short for the views
	// binary is the decoded bytes of values that are base64 or hex, when
	// they are binary (hold a byte >= 0x80): matched byte for byte, only
	// in text that holds such a byte. binaryMax is the longest.
	binary    *index
	binaryMax int
	pool      sync.Pool
}

// NewMatcher builds a matcher over every form of every secret; values
// shorter than MinSecretBytes are left out (they cannot be told from
// ordinary text).
func NewMatcher(secrets []Secret) *Matcher {
	m := &Matcher{}
	seen := map[string]bool{}
	var folded, exact, binary []indexForm
	for _, s := range secrets {
		if len(s.Value) < MinSecretBytes {
			continue
		}
		id := len(m.ids)
		m.ids = append(m.ids, s.ID)
		v := []byte(s.Value)
		runs := eligible(v)
		forms := laneForms(v)
		for _, f := range forms {
			if len(f.sym) < minLane || seen[string(f.sym)] {
				continue
			}
			seen[string(f.sym)] = true
			folded = append(folded, indexForm{secret: id, laneForm: f, runs: runs})
		}
		if d, ok := decodedValue(s.Value); ok {
			// Key material printed in base64 or hex: its bytes are the
			// secret, and every form of them is one of the value's.
			druns := eligible(d)
			if !mostlyText(d) {
				druns = make([]int16, len(d)) // random bytes: all one run
			}
			for _, f := range laneForms(d) {
				if len(f.sym) < minLane || seen[string(f.sym)] {
					continue
				}
				seen[string(f.sym)] = true
				folded = append(folded, indexForm{secret: id, laneForm: f, runs: druns})
			}
			if raw := laneForms(d)[0]; len(raw.sym) < minLane && !seen["\x00"+string(d)] {
				// Printed raw (base64 -d): too few symbols for the views.
				seen["\x00"+string(d)] = true
				if hasHigh(d) {
					binary = append(binary, indexForm{secret: id, laneForm: laneForm{sym: d}})
				} else {
					exact = append(exact, indexForm{secret: id, laneForm: laneForm{sym: d}})
				}
			}
		}
		if len(forms[0].sym) >= minLane {
			continue // the raw form is long enough for the views
		}
		for _, x := range Variants(s.Value) {
			if !seen["\x00"+x] {
				seen["\x00"+x] = true
				exact = append(exact, indexForm{secret: id, laneForm: laneForm{sym: []byte(x)}})
			}
		}
	}
	if len(folded) > 0 {
		m.fold = newIndex(8, minLane, folded).withQuads()
	}
	if len(exact) > 0 {
		shortest := len(exact[0].sym)
		for _, f := range exact {
			shortest = min(shortest, len(f.sym))
		}
		m.exact = newIndex(4, shortest, exact)
	}
	if len(binary) > 0 {
		shortest := len(binary[0].sym)
		for _, f := range binary {
			shortest = min(shortest, len(f.sym))
			m.binaryMax = max(m.binaryMax, len(f.sym))
		}
		m.binary = newIndex(4, shortest, binary)
	}
	m.pool.New = func() any { return new(scratch) }
	return m
}

// Empty reports whether the matcher has nothing to find.
func (m *Matcher) Empty() bool { return m == nil || m.fold == nil && m.exact == nil && m.binary == nil }

// ID returns the id of secret i, as given to NewMatcher.
func (m *Matcher) ID(i int) string { return m.ids[i] }

func (m *Matcher) scratch() *scratch { return m.pool.Get().(*scratch) }

// findWhole is the longest text Find scans in one piece; a longer one goes
// through a Feed, so memory stays bounded.
const findWhole = 256 << 10

// Find returns the id of a secret one of whose forms b contains.
func (m *Matcher) Find(b []byte) (id string, ok bool) {
	if m.Empty() {
		return "", false
	}
	if len(b) <= findWhole {
		spans, _ := m.Scan(b, 0, true, nil)
		if len(spans) == 0 {
			return "", false
		}
		return m.ids[spans[0].Secret], true
	}
	found := -1
	f := m.Feed()
	note := func(_ []byte, secret int) {
		if secret >= 0 && found < 0 {
			found = secret
		}
	}
	for off := 0; off < len(b) && found < 0; off += 64 << 10 {
		f.Write(b[off:min(off+64<<10, len(b))], note)
	}
	if found < 0 {
		f.Close(note)
	}
	if found < 0 {
		return "", false
	}
	return m.ids[found], true
}

// Scan finds the secrets in buf[from:]. buf[:from] is context, already
// passed on: it must hold the current line from its start, or at least
// MaxContext bytes of it (ContextStart says where to cut). With final
// unset, more text may follow: Scan then holds back the end of buf that a
// later byte could still make part of a match, and returns in safe where
// that begins. The spans returned (sorted, disjoint, appended to dst) all
// lie in buf[from:safe]; the rest of that range holds no secret.
func (m *Matcher) Scan(buf []byte, from int, final bool, dst []Span) (spans []Span, safe int) {
	if m.Empty() {
		return dst, len(buf)
	}
	sc := m.scratch()
	defer m.pool.Put(sc)
	return sc.scan(m, buf, from, final, 0, dst)
}

// ContextStart returns where the context Scan needs before safe begins:
// the line end before the line that holds safe, or MaxContext bytes back.
func ContextStart(buf []byte, safe int) int {
	lo := max(0, safe-MaxContext)
	if nl := bytes.LastIndexByte(buf[lo:safe], '\n'); nl >= 0 {
		return lo + nl
	}
	return lo
}

// Byte classes.
const (
	clSym = 1 << iota // an ASCII letter or digit: a symbol of the views
	clHex             // a hex digit
	clRun             // a base64 character of either alphabet, not '='
)

var class, fold = func() (c [256]uint8, f [256]byte) {
	for i := range 256 {
		b := byte(i)
		lower, upper, digit := b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z', b >= '0' && b <= '9'
		f[i] = b
		if upper {
			f[i] = b + 'a' - 'A'
		}
		if lower || upper || digit {
			c[i] |= clSym | clRun
		}
		if digit || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F' {
			c[i] |= clHex
		}
		if b == '+' || b == '/' || b == '-' || b == '_' {
			c[i] |= clRun
		}
	}
	return c, f
}()

// minDecoded is the fewest bytes a value that is itself hex or base64
// must decode to for its decoded bytes to be matched as well.
const minDecoded = 16

// decodedValue returns the bytes a value encodes when it is hex (even
// length) or base64 in the standard or URL alphabet, padded or not, and
// they are at least minDecoded.
func decodedValue(v string) ([]byte, bool) {
	v = strings.TrimSpace(v)
	if len(v)%2 == 0 && len(v) >= 2*minDecoded {
		if d, err := hex.DecodeString(v); err == nil {
			return d, true
		}
	}
	if len(v) < minDecoded*4/3 {
		return nil, false
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if d, err := enc.Strict().DecodeString(v); err == nil && len(d) >= minDecoded {
			return d, true
		}
	}
	return nil, false
}

// mostlyText reports whether at least three quarters of b is printable.
func mostlyText(b []byte) bool {
	n := 0
	for _, c := range b {
		if printable(c) {
			n++
		}
	}
	return n*4 >= len(b)*3
}

// hasHigh reports whether b holds a byte >= 0x80, eight bytes at a time.
func hasHigh(b []byte) bool {
	for ; len(b) >= 32; b = b[32:] {
		le := binary.LittleEndian
		if (le.Uint64(b)|le.Uint64(b[8:])|le.Uint64(b[16:])|le.Uint64(b[24:]))&high != 0 {
			return true
		}
	}
	for ; len(b) >= 8; b = b[8:] {
		if binary.LittleEndian.Uint64(b)&high != 0 {
			return true
		}
	}
	for _, c := range b {
		if c >= 0x80 {
			return true
		}
	}
	return false
}
