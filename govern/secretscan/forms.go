package secretscan

import (
	"bytes"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// MinSecretBytes is the floor: a value shorter than this would match
// ordinary output everywhere, so such a credential is refused when it is
// configured or fetched rather than redacted as noise.
const MinSecretBytes = 8

// Secret is one credential value and its id.
type Secret struct {
	ID    string
	Value string
}

// Variants returns the exact forms a value can appear in: raw; base64 in
// the standard and URL alphabets at each of the three byte alignments
// (only the characters that depend on the value alone); URL-encoded with
// upper and lower hex; hex upper and lower; JSON-escaped; shell-escaped.
// A value too short to be told apart in the normalised forms (see
// laneForms) is matched through these, byte for byte.
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
	add(percentAll(v, "0123456789ABCDEF"))
	add(percentAll(v, "0123456789abcdef"))
	h := hex.EncodeToString([]byte(v))
	add(h)
	add(strings.ToUpper(h))
	add(jsonString(v, false))
	add(jsonString(v, true))
	add(strings.ReplaceAll(v, "'", `'\''`))
	add(backslashEscape(v))
	return out
}

// base64Core encodes v as if k unknown bytes came before it and returns
// only the characters determined by v's bytes: char j of an encoding
// covers bits 6j..6j+5, that is bytes 6j/8 .. (6j+5)/8.
func base64Core(enc *base64.Encoding, v []byte, k int) string {
	var b strings.Builder
	coreChars(enc.EncodeToString(padded(v, k, 2)), 6, k, len(v), func(c byte, _ int) { b.WriteByte(c) })
	return b.String()
}

// padded is v after k zero bytes and before tail more.
func padded(v []byte, k, tail int) []byte {
	buf := make([]byte, k+len(v)+tail)
	copy(buf[k:], v)
	return buf
}

// coreChars calls f for each character of s, an encoding of k unknown
// bytes then n value bytes at bits bits per character, that depends on the
// value's bytes only, with the index of the first value byte it covers.
func coreChars(s string, bits, k, n int, f func(c byte, val int)) {
	started := false
	for j := 0; j < len(s); j++ {
		first, last := bits*j/8, (bits*j+bits-1)/8
		if first >= k && last < k+n {
			f(s[j], first-k)
			started = true
		} else if started {
			return
		}
	}
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

// percentAll percent-encodes every byte, with upper- or lower-case hex.
func percentAll(v string, digits string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		b.WriteByte('%')
		b.WriteByte(digits[v[i]>>4])
		b.WriteByte(digits[v[i]&15])
	}
	return b.String()
}

// jsonString is v as the body of a JSON string, with or without the HTML
// escapes of <, > and &.
func jsonString(v string, html bool) string {
	var jb bytes.Buffer
	enc := json.NewEncoder(&jb)
	enc.SetEscapeHTML(html)
	enc.Encode(v)
	return strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(jb.String(), `"`), "\n"), `"`)
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

// How a match of a form is widened at the form's ends: a base64 or base32
// form is only the characters that depend on the value alone, so the
// characters that straddle its ends (and the padding) go with it.
const (
	kindPlain = iota
	kindBase64
	kindBase32
	kindBase32Hex
)

// laneForm is one printed form of a value as the normalised views see it:
// the ASCII letters and digits of the printed text, lower-cased, each with
// the index of the value byte it encodes; and the punctuation printed
// before the first of them and after the last.
type laneForm struct {
	kind        uint8
	sym         []byte
	val         []int32
	lead, trail []byte
}

// formWriter builds one printed form piece by piece, each piece printed
// for one value byte.
type formWriter struct {
	text []byte
	val  []int32
}

func (w *formWriter) put(s string, i int) {
	for k := 0; k < len(s); k++ {
		w.text = append(w.text, s[k])
		w.val = append(w.val, int32(i))
	}
}

func (w *formWriter) form(kind uint8) laneForm {
	f := laneForm{kind: kind}
	first, last := -1, -1
	for i, c := range w.text {
		if class[c]&clSym != 0 {
			if first < 0 {
				first = i
			}
			last = i
			f.sym = append(f.sym, fold[c])
			f.val = append(f.val, w.val[i])
		}
	}
	if first >= 0 {
		f.lead = bytes.Clone(w.text[:first])
		f.trail = bytes.Clone(w.text[last+1:])
	}
	return f
}

// laneForms returns the forms of v that the normalised views match:
// raw, reversed, rot13 and reversed rot13; hex, and hex with \x, 0x, \u
// (per character) and UTF-16 (big and little endian) around or in it;
// decimal, octal (zero-padded or not) and binary per byte; base64 and
// base32 (both alphabets) at every byte alignment; URL-encoded and
// JSON-escaped where they differ from raw. Shell and JSON escapes that
// only add punctuation need no form of their own: the views drop it.
func laneForms(v []byte) []laneForm {
	var out []laneForm
	emit := func(kind uint8, fill func(w *formWriter)) {
		var w formWriter
		fill(&w)
		out = append(out, w.form(kind))
	}
	perByte := func(order []int, piece func(c byte) string) func(w *formWriter) {
		return func(w *formWriter) {
			for _, i := range order {
				w.put(piece(v[i]), i)
			}
		}
	}
	fwd := make([]int, len(v))
	rev := make([]int, len(v))
	for i := range v {
		fwd[i], rev[i] = i, len(v)-1-i
	}
	raw := func(c byte) string { return string(c) }
	emit(kindPlain, perByte(fwd, raw))
	emit(kindPlain, perByte(rev, raw))
	emit(kindPlain, perByte(fwd, func(c byte) string { return string(rot13(c)) }))
	emit(kindPlain, perByte(rev, func(c byte) string { return string(rot13(c)) }))
	hex2 := func(c byte) string { return hex.EncodeToString([]byte{c}) }
	emit(kindPlain, perByte(fwd, hex2))
	emit(kindPlain, perByte(fwd, func(c byte) string { return `\x` + hex2(c) }))
	emit(kindPlain, perByte(fwd, func(c byte) string { return "0x" + hex2(c) }))
	emit(kindPlain, perByte(fwd, func(c byte) string { return strconv.Itoa(int(c)) }))
	emit(kindPlain, perByte(fwd, func(c byte) string { return leftPad(strconv.FormatInt(int64(c), 8), 3) }))
	emit(kindPlain, perByte(fwd, func(c byte) string { return strconv.FormatInt(int64(c), 8) }))
	emit(kindPlain, perByte(fwd, func(c byte) string { return leftPad(strconv.FormatInt(int64(c), 2), 8) }))
	// Per character: \uXXXX (JSON, JavaScript, Python), and UTF-16 in hex.
	units := func(fill func(w *formWriter, u uint16, i int)) func(w *formWriter) {
		return func(w *formWriter) {
			for i := 0; i < len(v); {
				r, n := utf8.DecodeRune(v[i:])
				if r == utf8.RuneError && n <= 1 {
					r = rune(v[i])
				}
				if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
					fill(w, uint16(r1), i)
					fill(w, uint16(r2), i)
				} else {
					fill(w, uint16(r), i)
				}
				i += max(n, 1)
			}
		}
	}
	hex4 := func(u uint16) string { return leftPad(strconv.FormatUint(uint64(u), 16), 4) }
	emit(kindPlain, units(func(w *formWriter, u uint16, i int) { w.put(`\u`+hex4(u), i) }))
	emit(kindPlain, units(func(w *formWriter, u uint16, i int) { w.put(hex4(u), i) }))
	emit(kindPlain, units(func(w *formWriter, u uint16, i int) { h := hex4(u); w.put(h[2:]+h[:2], i) }))
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		for k := 0; k < 3; k++ {
			emit(kindBase64, func(w *formWriter) {
				coreChars(enc.EncodeToString(padded(v, k, 2)), 6, k, len(v), func(c byte, i int) { w.put(string(c), i) })
			})
		}
	}
	for _, b32 := range []struct {
		kind uint8
		enc  *base32.Encoding
	}{{kindBase32, base32.StdEncoding}, {kindBase32Hex, base32.HexEncoding}} {
		kind, enc := b32.kind, b32.enc
		for k := 0; k < 5; k++ {
			emit(kind, func(w *formWriter) {
				coreChars(enc.EncodeToString(padded(v, k, 4)), 5, k, len(v), func(c byte, i int) { w.put(string(c), i) })
			})
		}
	}
	emit(kindPlain, perByte(fwd, func(c byte) string { return url.QueryEscape(string([]byte{c})) }))
	emit(kindPlain, perByte(fwd, func(c byte) string { return url.PathEscape(string([]byte{c})) }))
	for _, html := range []bool{false, true} {
		emit(kindPlain, func(w *formWriter) {
			for i := 0; i < len(v); {
				r, n := utf8.DecodeRune(v[i:])
				if r == utf8.RuneError && n == 1 {
					w.put(`\ufffd`, i) // what encoding/json writes for a byte that is not UTF-8
				} else {
					w.put(jsonRune(r, html), i)
				}
				i += n
			}
		})
	}
	return out
}

// jsonRune is r as encoding/json writes it in a string.
func jsonRune(r rune, html bool) string {
	switch {
	case r == '"' || r == '\\':
		return `\` + string(r)
	case r == '\n':
		return `\n`
	case r == '\r':
		return `\r`
	case r == '\t':
		return `\t`
	case r == '\b':
		return `\b`
	case r == '\f':
		return `\f`
	case r < 0x20 || html && (r == '<' || r == '>' || r == '&') || r == 0x2028 || r == 0x2029:
		return `\u` + leftPad(strconv.FormatUint(uint64(r), 16), 4)
	}
	return string(r)
}

func rot13(c byte) byte {
	switch {
	case c >= 'a' && c <= 'z':
		return 'a' + (c-'a'+13)%26
	case c >= 'A' && c <= 'Z':
		return 'A' + (c-'A'+13)%26
	}
	return c
}

func leftPad(s string, n int) string {
	for len(s) < n {
		s = "0" + s
	}
	return s
}

// eligible marks the bytes of v that fragments may be taken from: those
// in a run of at least minLane characters of [A-Za-z0-9+/=_-] that mixes
// upper case, lower case and digits, or is hex with both letters and
// digits, and that is not base64 of text. Such a run is what a generated
// token looks like; a run of one class (a word, a number), of two (a
// path, a field name), or that decodes to text (a JWT's header and
// claims, an encoded config) is matched only as part of the whole value:
// pieces of it are shared with other values. It returns, per byte of v,
// the run's number, or -1.
func eligible(v []byte) []int16 {
	runs := make([]int16, len(v))
	id := int16(0)
	for i := 0; i < len(v); {
		if class[v[i]]&clRun == 0 && v[i] != '=' {
			runs[i] = -1
			i++
			continue
		}
		j := i
		var upper, lower, digit, nonHex bool
		for ; j < len(v) && (class[v[j]]&clRun != 0 || v[j] == '='); j++ {
			c := v[j]
			upper = upper || c >= 'A' && c <= 'Z'
			lower = lower || c >= 'a' && c <= 'z'
			digit = digit || c >= '0' && c <= '9'
			nonHex = nonHex || class[c]&clHex == 0
		}
		ok := j-i >= minLane && (upper && lower && digit || !nonHex && digit && (upper || lower)) && !encodedText(v[i:j])
		for k := i; k < j; k++ {
			runs[k] = -1
			if ok {
				runs[k] = id
			}
		}
		if ok {
			id++
		}
		i = j
	}
	return runs
}

// encodedText reports whether run, read as base64 from its start, decodes
// to mostly printable text.
func encodedText(run []byte) bool {
	n, text := 0, 0
	for k := 0; k+4 <= len(run); k += 4 {
		var q [4]byte
		for i := range q {
			q[i] = b64val[run[k+i]]
		}
		if (q[0]|q[1]|q[2]|q[3])&0x80 != 0 {
			break // '=' or a character of neither alphabet
		}
		for _, c := range [3]byte{q[0]<<2 | q[1]>>4, q[1]<<4 | q[2]>>2, q[2]<<6 | q[3]} {
			n++
			if printable(c) {
				text++
			}
		}
	}
	return n >= 6 && text*4 >= n*3
}
