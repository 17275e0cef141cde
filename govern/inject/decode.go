package inject

import (
	"encoding/base64"
	"encoding/hex"
	"strings"
	"unicode"
	"unicode/utf8"
)

const (
	// maxDepth bounds how many encodings are peeled off one segment
	// (base64 of hex of percent-encoding is depth 3).
	maxDepth = 3
	// minSegment is the shortest encoded run worth decoding: shorter runs
	// are ordinary words and identifiers far more often than payloads.
	minSegment = 16
	// minPrintable is the share of printable characters a decoded segment
	// needs to be treated as text rather than binary.
	minPrintable = 0.85
)

// reEscapes finds \xNN and \uNNNN escapes; the other encodings are found
// by hand-written scanners (runs of one alphabet), which are an order of
// magnitude faster than regexp on large stdin.
var reEscapes = compiled(`\\(?:x[0-9A-Fa-f]{2}|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8})`)

// segment is a decoded piece of a layer: where it started in the layer's
// fold text, what encoding it was, and the decoded text.
type segment struct {
	start int
	enc   string
	text  string
}

// decodeSegments finds encoded runs in s and returns those that decode to
// mostly printable text.
func decodeSegments(s string) []segment {
	var out []segment
	for _, r := range runs(s, &base64Chars, minSegment) {
		run := s[r[0]:r[1]]
		for r[1] < len(s) && s[r[1]] == '=' && r[1]-r[0] < len(run)+2 {
			r[1]++
		}
		if t, ok := decodeBase64(s[r[0]:r[1]]); ok {
			out = append(out, segment{r[0], "base64", t})
		}
	}
	for _, r := range runs(s, &hexChars, minSegment) {
		run := s[r[0] : r[1]-(r[1]-r[0])%2]
		b, err := hex.DecodeString(run)
		if err == nil && printable(b) {
			out = append(out, segment{r[0], "hex", string(b)})
		}
	}
	// \xNN and \uNNNN escapes usually sit among literal text
	// (printf 'ig\x6eore ...'), so the whole text is unescaped as one layer.
	if strings.Count(s, "\\") >= 4 {
		if esc := reEscapes().FindAllStringIndex(s, -1); len(esc) >= 4 {
			if t := unescape(s); printable([]byte(t)) {
				out = append(out, segment{esc[0][0], "escapes", t})
			}
		}
	}
	if strings.Count(s, "%") >= 3 {
		for _, r := range runs(s, &percentRunChars, minSegment) {
			run := s[r[0]:r[1]]
			if strings.Count(run, "%") < 3 {
				continue
			}
			if t, ok := percentDecode(run); ok && printable([]byte(t)) {
				out = append(out, segment{r[0], "percent", t})
			}
		}
	}
	return out
}

// runs returns the [start, end) of every maximal run of bytes in s that
// are in class, at least min long.
func runs(s string, class *[256]bool, min int) [][2]int {
	var out [][2]int
	for i := 0; i < len(s); {
		if !class[s[i]] {
			i++
			continue
		}
		j := i + 1
		for j < len(s) && class[s[j]] {
			j++
		}
		if j-i >= min {
			out = append(out, [2]int{i, j})
		}
		i = j
	}
	return out
}

// Byte classes of the encodings: base64 (standard and URL alphabets), hex,
// and what a percent-encoded segment is made of (anything but whitespace,
// quotes and angle brackets).
var base64Chars, hexChars, percentRunChars = func() (b, h, p [256]bool) {
	for c := 0; c < 256; c++ {
		b[c] = c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '-' || c == '_'
		h[c] = isHex(byte(c))
		p[c] = c > ' ' && c != '"' && c != '\'' && c != '<' && c != '>' && c != 0x7f
	}
	return
}()

func decodeBase64(run string) (string, bool) {
	std := strings.ContainsAny(run, "+/")
	url := strings.ContainsAny(run, "-_")
	if std && url {
		return "", false
	}
	run = strings.TrimRight(run, "=")
	if len(run)%4 == 1 {
		run = run[:len(run)-1]
	}
	enc := base64.RawStdEncoding
	if url {
		enc = base64.RawURLEncoding
	}
	b, err := enc.DecodeString(run)
	if err != nil || !printable(b) {
		return "", false
	}
	return string(b), true
}

// printable reports whether b is UTF-8 text with at most a small share of
// control or unassigned characters; random bytes almost never are.
func printable(b []byte) bool {
	if len(b) < 4 || !utf8.Valid(b) {
		return false
	}
	total, good := 0, 0
	for _, r := range string(b) {
		total++
		// Format characters (tags, bidi, joiners) are text, and hiding
		// them under an encoding is exactly what this looks for.
		if unicode.IsPrint(r) || unicode.Is(unicode.Cf, r) || r == '\n' || r == '\t' || r == '\r' {
			good++
		}
	}
	return float64(good) >= minPrintable*float64(total)
}

func unescape(s string) string {
	return reEscapes().ReplaceAllStringFunc(s, func(e string) string {
		var v rune
		for _, c := range e[2:] {
			v = v<<4 | rune(unhex(byte(c)))
		}
		if e[1] == 'x' {
			// \xNN are bytes; keep ASCII, let the rest be replaced below.
			if v < 0x80 {
				return string(rune(v))
			}
			return string([]byte{byte(v)})
		}
		return string(v)
	})
}

func percentDecode(s string) (string, bool) {
	var b strings.Builder
	changed := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
			changed = true
		case c == '+':
			b.WriteByte(' ')
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), changed
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10
	}
	return 0
}
