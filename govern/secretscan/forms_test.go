package secretscan

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"

	"gotest.tools/v3/assert"
)

// tok is shaped like a GitHub token: what a granted agent's command has in
// its environment. tok2 is a second, unrelated credential.
const (
	tok  = "ghp_Zx9Yq8Wv7Ut6Sr5Qp4On3Ml2Kj1Ih0Gf9Ed"
	tok2 = "xoxb-26359420-FGqddMF8t08v8N7Oq4i57vs1"
)

// The tools, as Go: each prints b the way the tool does.

func xxdLines(b []byte, cols, group int, little bool) string {
	var out strings.Builder
	for off := 0; off < len(b); off += cols {
		line := b[off:min(off+cols, len(b))]
		fmt.Fprintf(&out, "%08x:", off)
		var hx strings.Builder
		for g := 0; g < len(line); g += group {
			part := slices.Clone(line[g:min(g+group, len(line))])
			if little {
				slices.Reverse(part)
			}
			hx.WriteString(" " + hex.EncodeToString(part))
		}
		width := cols*2 + (cols+group-1)/group
		fmt.Fprintf(&out, "%-*s  %s\n", width, hx.String(), printableCol(line))
	}
	return out.String()
}

func printableCol(b []byte) string {
	var s strings.Builder
	for _, c := range b {
		if c >= 0x20 && c < 0x7f {
			s.WriteByte(c)
		} else {
			s.WriteByte('.')
		}
	}
	return s.String()
}

func hexdumpC(b []byte) string {
	var out strings.Builder
	for off := 0; off < len(b); off += 16 {
		line := b[off:min(off+16, len(b))]
		fmt.Fprintf(&out, "%08x ", off)
		for i := 0; i < 16; i++ {
			if i == 8 {
				out.WriteByte(' ')
			}
			if i < len(line) {
				fmt.Fprintf(&out, " %02x", line[i])
			} else {
				out.WriteString("   ")
			}
		}
		fmt.Fprintf(&out, "  |%s|\n", printableCol(line))
	}
	fmt.Fprintf(&out, "%08x\n", len(b))
	return out.String()
}

// od prints b as od does: offset (octal, or none with -An), then per 16
// bytes the units format gives.
func od(b []byte, offsets bool, unit func(b []byte) (string, int)) string {
	var out strings.Builder
	for off := 0; off < len(b); off += 16 {
		if offsets {
			fmt.Fprintf(&out, "%07o", off)
		}
		line := b[off:min(off+16, len(b))]
		for i := 0; i < len(line); {
			s, n := unit(line[i:])
			out.WriteString(s)
			i += n
		}
		out.WriteByte('\n')
	}
	if offsets {
		fmt.Fprintf(&out, "%07o\n", len(b))
	}
	return out.String()
}

func odX1(b []byte) (string, int) { return fmt.Sprintf(" %02x", b[0]), 1 }
func odX2(b []byte) (string, int) { // od -x: little-endian 16-bit words, zero padded
	v := uint16(b[0])
	if len(b) > 1 {
		v |= uint16(b[1]) << 8
	}
	return fmt.Sprintf(" %04x", v), 2
}
func odO2(b []byte) (string, int) { // od's default: octal 16-bit words
	v := uint16(b[0])
	if len(b) > 1 {
		v |= uint16(b[1]) << 8
	}
	return fmt.Sprintf(" %06o", v), 2
}
func odX4(b []byte) (string, int) {
	var v uint32
	for i := 0; i < 4 && i < len(b); i++ {
		v |= uint32(b[i]) << (8 * i)
	}
	return fmt.Sprintf(" %08x", v), 4
}
func odC(b []byte) (string, int) {
	switch c := b[0]; {
	case c == '\n':
		return "  \\n", 1
	case c >= 0x20 && c < 0x7f:
		return fmt.Sprintf("%4c", c), 1
	default:
		return fmt.Sprintf(" %03o", c), 1
	}
}
func odD1(b []byte) (string, int) { return fmt.Sprintf(" %3d", b[0]), 1 }
func odB(b []byte) (string, int)  { return fmt.Sprintf(" %03o", b[0]), 1 }

func wrap(s string, n int) string {
	var out strings.Builder
	for len(s) > n {
		out.WriteString(s[:n] + "\n")
		s = s[n:]
	}
	return out.String() + s + "\n"
}

func gz(b []byte) []byte {
	var out bytes.Buffer
	w := gzip.NewWriter(&out)
	w.Write(b)
	w.Close()
	return out.Bytes()
}

func zl(b []byte) []byte {
	var out bytes.Buffer
	w := zlib.NewWriter(&out)
	w.Write(b)
	w.Close()
	return out.Bytes()
}

func utf16le(s string, bom bool) []byte {
	var out []byte
	if bom {
		out = append(out, 0xff, 0xfe)
	}
	for _, u := range utf16.Encode([]rune(s)) {
		out = append(out, byte(u), byte(u>>8))
	}
	return out
}

func utf16be(s string) []byte {
	var out []byte
	for _, u := range utf16.Encode([]rune(s)) {
		out = append(out, byte(u>>8), byte(u))
	}
	return out
}

func rev(s string) string {
	b := []byte(s)
	slices.Reverse(b)
	return string(b)
}

func rot13s(s string) string {
	b := []byte(s)
	for i := range b {
		b[i] = rot13(b[i])
	}
	return string(b)
}

func perChar(s, format string) string {
	var out strings.Builder
	for _, c := range []byte(s) {
		fmt.Fprintf(&out, format, c)
	}
	return out.String()
}

// The attacker's side: what can be read back out of an output.

var (
	nonHex    = regexp.MustCompile(`[^0-9a-fA-F]`)
	nonB64    = regexp.MustCompile(`[^A-Za-z0-9+/_-]`)
	nonB32    = regexp.MustCompile(`[^A-Za-z2-7]`)
	nonAlnum  = regexp.MustCompile(`[^A-Za-z0-9]`)
	dumpOff   = regexp.MustCompile(`(?m)^ *[0-9a-f]{6,16}:? ?`)
	xxdChars  = regexp.MustCompile(`(?m)  (\S.{0,63})$`)
	hdChars   = regexp.MustCompile(`\|([^|\n]*)\|`)
	odCChars  = regexp.MustCompile(`(?m)^[0-7]{7}((?: {1,3}(?:\S|\\.|\d{3}))*)$`)
	numbers   = regexp.MustCompile(`\d+`)
	uEscapes  = regexp.MustCompile(`(?i)(?:\\|%|U\+)u?([0-9a-f]{4})`)
	xEscapes  = regexp.MustCompile(`(?i)(?:\\x|0x|%)([0-9a-f]{2})`)
	hexGroups = regexp.MustCompile(`\b[0-9a-f]{4,16}\b`)
)

// hexBytes decodes the hex digits of s at both alignments.
func hexBytes(s string) []string {
	d := nonHex.ReplaceAllString(s, "")
	var out []string
	for k := 0; k < 2 && k < len(d); k++ {
		b, _ := hex.DecodeString(d[k : k+(len(d)-k)/2*2])
		out = append(out, string(b))
	}
	return out
}

// b64Bytes decodes the base64 characters of s at the four alignments.
func b64Bytes(s string) []string {
	d := nonB64.ReplaceAllString(s, "")
	d = strings.NewReplacer("-", "+", "_", "/").Replace(d)
	var out []string
	for k := 0; k < 4 && k < len(d); k++ {
		c := d[k:]
		if len(c)%4 == 1 {
			c = c[:len(c)-1]
		}
		b, _ := base64.RawStdEncoding.DecodeString(c)
		out = append(out, string(b))
	}
	return out
}

func b32Bytes(s string, enc *base32.Encoding, alpha *regexp.Regexp) []string {
	d := strings.ToUpper(alpha.ReplaceAllString(s, ""))
	enc = enc.WithPadding(base32.NoPadding)
	var out []string
	for k := 0; k < 8 && k < len(d); k++ {
		c := d[k:]
		for len(c) > 0 {
			if b, err := enc.DecodeString(c); err == nil {
				out = append(out, string(b))
				break
			}
			c = c[:len(c)-1]
		}
	}
	return out
}

// leak returns the longest piece of secret found in any of got, by
// letters and digits, case folded.
func leak(secret string, got []string) string {
	s := strings.ToLower(nonAlnum.ReplaceAllString(secret, ""))
	best := ""
	for _, g := range got {
		g = strings.ToLower(nonAlnum.ReplaceAllString(g, ""))
		for i := 0; i < len(s); i++ {
			for j := i + len(best) + 1; j <= len(s); j++ {
				if !strings.Contains(g, s[i:j]) {
					break
				}
				best = s[i:j]
			}
		}
	}
	return best
}

type formCase struct {
	name    string
	out     func(v string) string     // what the command prints
	recover func(out string) []string // what an attacker reads back
	// secret is what the attacker must not read back (the value itself,
	// unless set), and part a control for an output that holds only
	// part of it.
	secret func(v string) string
	part   bool
}

func both(fs ...func(string) []string) func(string) []string {
	return func(s string) []string {
		var out []string
		for _, f := range fs {
			out = append(out, f(s)...)
		}
		return out
	}
}

func as(s string) []string { return []string{s} }

func dumpHex(s string) []string {
	return hexBytes(dumpOff.ReplaceAllString(xxdChars.ReplaceAllString(hdChars.ReplaceAllString(s, ""), ""), ""))
}

func dumpChars(s string) []string {
	var out strings.Builder
	for _, m := range hdChars.FindAllStringSubmatch(s, -1) {
		out.WriteString(m[1])
	}
	for _, m := range xxdChars.FindAllStringSubmatch(s, -1) {
		out.WriteString(m[1])
	}
	return as(out.String())
}

// words decodes the little-endian words of a dump back into bytes.
func words(s string) []string {
	var out []byte
	for _, g := range hexGroups.FindAllString(dumpOff.ReplaceAllString(s, ""), -1) {
		b, _ := hex.DecodeString(g)
		slices.Reverse(b)
		out = append(out, b...)
	}
	return as(string(out))
}

func octWords(s string) []string {
	var out []byte
	for _, f := range strings.Fields(dumpOff.ReplaceAllString(s, "")) {
		if v, err := strconv.ParseUint(f, 8, 16); err == nil && len(f) == 6 {
			out = append(out, byte(v), byte(v>>8))
		}
	}
	return as(string(out))
}

func codes(base int) func(string) []string {
	return func(s string) []string {
		var out []byte
		for _, n := range numbers.FindAllString(s, -1) {
			if v, err := strconv.ParseUint(n, base, 8); err == nil {
				out = append(out, byte(v))
			}
		}
		return as(string(out))
	}
}

func odChars(s string) []string {
	var out strings.Builder
	for _, m := range odCChars.FindAllStringSubmatch(s, -1) {
		out.WriteString(strings.ReplaceAll(m[1], " ", ""))
	}
	return as(out.String())
}

func inflate(s string) []string {
	var out []string
	for _, b := range b64Bytes(s) {
		if r, err := gzip.NewReader(strings.NewReader(b)); err == nil {
			d, _ := readAll(r)
			out = append(out, string(d))
		}
		if r, err := zlib.NewReader(strings.NewReader(b)); err == nil {
			d, _ := readAll(r)
			out = append(out, string(d))
		}
	}
	return out
}

func fromUTF16(s string) []string {
	var out []string
	for _, b := range b64Bytes(s) {
		out = append(out, strings.ReplaceAll(b, "\x00", ""))
	}
	return out
}

func unescapeU(s string) []string {
	var out []byte
	for _, m := range uEscapes.FindAllStringSubmatch(s, -1) {
		v, _ := strconv.ParseUint(m[1], 16, 16)
		out = append(out, byte(v))
	}
	return as(string(out))
}

func unescapeX(s string) []string {
	var out []byte
	for _, m := range xEscapes.FindAllStringSubmatch(s, -1) {
		v, _ := strconv.ParseUint(m[1], 16, 8)
		out = append(out, byte(v))
	}
	return as(string(out))
}

// escapeSome writes every third byte of v in format a or b, by turns,
// and the rest literally.
func escapeSome(v, a, b string) string {
	var sb strings.Builder
	for i := 0; i < len(v); i++ {
		switch i % 6 {
		case 1:
			fmt.Fprintf(&sb, a, v[i])
		case 4:
			fmt.Fprintf(&sb, b, v[i])
		default:
			sb.WriteByte(v[i])
		}
	}
	return sb.String()
}

var mixedEscapes = regexp.MustCompile(`%[0-9a-fA-F]{2}|&#[0-9]+;|&#[xX][0-9a-fA-F]+;`)

// unescapeMixed decodes percent escapes and numeric HTML references.
func unescapeMixed(s string) []string {
	return as(mixedEscapes.ReplaceAllStringFunc(s, func(m string) string {
		var v uint64
		switch {
		case m[0] == '%':
			v, _ = strconv.ParseUint(m[1:], 16, 8)
		case m[2] == 'x' || m[2] == 'X':
			v, _ = strconv.ParseUint(m[3:len(m)-1], 16, 8)
		default:
			v, _ = strconv.ParseUint(m[2:len(m)-1], 10, 8)
		}
		return string([]byte{byte(v)})
	}))
}

func unb64twice(s string) []string {
	var out []string
	for _, b := range b64Bytes(s) {
		out = append(out, b64Bytes(b)...)
	}
	return out
}

func formCases() []formCase {
	b64 := func(prefix string, enc *base64.Encoding) func(v string) string {
		return func(v string) string { return wrap(enc.EncodeToString([]byte(prefix+v+"\n")), 76) }
	}
	hexOf := func(v string) string { return hex.EncodeToString([]byte(v)) }
	return []formCase{
		{name: "raw", out: func(v string) string { return "token=" + v + "\n" }, recover: as},
		{name: "upper", out: strings.ToUpper, recover: as},
		{name: "lower", out: strings.ToLower, recover: as},
		{name: "rev", out: func(v string) string { return rev(v) + "\n" }, recover: func(s string) []string { return as(rev(s)) }},
		{name: "rot13", out: func(v string) string { return rot13s(v) + "\n" }, recover: func(s string) []string { return as(rot13s(s)) }},
		{name: "rev rot13", out: func(v string) string { return rev(rot13s(v)) }, recover: func(s string) []string { return as(rot13s(rev(s))) }},
		{name: "fold -w5", out: func(v string) string { return wrap(v, 5) }, recover: as},
		{name: "fold -w1", out: func(v string) string { return wrap(v, 1) }, recover: as},
		{name: "two lines", out: func(v string) string { return v[:len(v)/2] + "\n" + v[len(v)/2:] + "\n" }, recover: as},
		{name: "halves apart", out: func(v string) string {
			return "first half: " + v[:len(v)/2] + "\nsome other output in between\nsecond: " + v[len(v)/2:] + "\n"
		}, recover: as, part: true},
		{name: "cut -c3-", out: func(v string) string { return v[2:] + "\n" }, recover: as, part: true},
		{name: "sed s/./&-/g", out: func(v string) string { return perChar(v, "%c-") }, recover: as},
		{name: "spaced chars", out: func(v string) string { return perChar(v, "%c  ") }, recover: as},
		{name: "python list", out: func(v string) string { return "['" + strings.Join(strings.Split(v, ""), "', '") + "']" }, recover: as},
		{name: "utf-16 raw", out: func(v string) string { return string(utf16le(v, true)) }, recover: as},
		{name: `\u per char`, out: func(v string) string { return perChar(v, `\u%04x`) }, recover: unescapeU},
		{name: `\U+ per char`, out: func(v string) string { return perChar(v, "U+%04X ") }, recover: unescapeU},
		{name: `\x per byte`, out: func(v string) string { return perChar(v, `\x%02x`) }, recover: unescapeX},
		{name: "xxd -i", out: func(v string) string { return wrap(perChar(v, "0x%02x, "), 72) }, recover: unescapeX},
		{name: "percent every byte", out: func(v string) string { return perChar(v, "%%%02X") }, recover: unescapeX},
		{name: "decimal codes", out: func(v string) string { return perChar(v, "%d ") }, recover: codes(10)},
		{name: "decimal list", out: func(v string) string {
			var n []string
			for _, c := range []byte(v) {
				n = append(n, strconv.Itoa(int(c)))
			}
			return "[" + strings.Join(n, ", ") + "]"
		}, recover: codes(10)},
		{name: "octal escapes", out: func(v string) string { return perChar(v, `\%03o`) }, recover: codes(8)},
		{name: "printf %o", out: func(v string) string { return perChar(v, "%o ") }, recover: codes(8)},
		{name: "binary", out: func(v string) string { return perChar(v, "%08b ") }, recover: codes(2)},
		{name: "hex", out: func(v string) string { return hexOf(v) + "\n" }, recover: hexBytes},
		{name: "HEX", out: func(v string) string { return strings.ToUpper(hexOf(v)) }, recover: hexBytes},
		{name: "hex with prefix", out: func(v string) string { return hexOf("k=" + v) }, recover: hexBytes},
		{name: "xxd -p", out: func(v string) string { return wrap(hexOf(v+"\n"), 60) }, recover: hexBytes},
		{name: "spaced hex", out: func(v string) string { return perChar(v, "%02x ") }, recover: hexBytes},
		{name: "colon hex", out: func(v string) string { return strings.TrimSuffix(perChar(v, "%02X:"), ":") }, recover: hexBytes},
		{name: "od -An -tx1", out: func(v string) string { return od([]byte(v+"\n"), false, odX1) }, recover: hexBytes},
		{name: "od -tx1", out: func(v string) string { return od([]byte(v+"\n"), true, odX1) }, recover: dumpHex},
		{name: "od -An -td1", out: func(v string) string { return od([]byte(v+"\n"), false, odD1) }, recover: codes(10)},
		{name: "od -b", out: func(v string) string { return od([]byte(v+"\n"), true, odB) }, recover: func(s string) []string {
			return codes(8)(dumpOff.ReplaceAllString(s, ""))
		}},
		{name: "od -c", out: func(v string) string { return od([]byte(v+"\n"), true, odC) }, recover: odChars},
		{name: "od -x", out: func(v string) string { return od([]byte(v+"\n"), true, odX2) }, recover: words},
		{name: "od -An -x", out: func(v string) string { return od([]byte(v+"\n"), false, odX2) }, recover: words},
		{name: "od -x odd", out: func(v string) string { return od([]byte("x"+v+"\n"), true, odX2) }, recover: words},
		{name: "od -t x4", out: func(v string) string { return od([]byte("ab"+v+"\n"), true, odX4) }, recover: words},
		{name: "od", out: func(v string) string { return od([]byte(v+"\n"), true, odO2) }, recover: octWords},
		{name: "hexdump", out: func(v string) string { return od([]byte(v+"\n"), true, odX2) }, recover: words},
		{name: "hexdump -C", out: func(v string) string { return hexdumpC([]byte(v + "\n")) }, recover: both(dumpHex, dumpChars)},
		{name: "hexdump -C offset 5", out: func(v string) string { return hexdumpC([]byte("abcd " + v + "\n")) }, recover: both(dumpHex, dumpChars)},
		{name: "xxd", out: func(v string) string { return xxdLines([]byte(v+"\n"), 16, 2, false) }, recover: both(dumpHex, dumpChars)},
		{name: "xxd -c4", out: func(v string) string { return xxdLines([]byte(v+"\n"), 4, 2, false) }, recover: both(dumpHex, dumpChars)},
		{name: "xxd -c1", out: func(v string) string { return xxdLines([]byte(v+"\n"), 1, 1, false) }, recover: both(dumpHex, dumpChars)},
		{name: "xxd -c32 -g1", out: func(v string) string { return xxdLines([]byte(v+"\n"), 32, 1, false) }, recover: both(dumpHex, dumpChars)},
		{name: "xxd -e", out: func(v string) string { return xxdLines([]byte(v+"\n"), 16, 4, true) }, recover: both(words, dumpChars)},
		{name: "base64", out: b64("", base64.StdEncoding), recover: b64Bytes},
		{name: "base64 after 1", out: b64("a", base64.StdEncoding), recover: b64Bytes},
		{name: "base64 after 2", out: b64("ab", base64.StdEncoding), recover: b64Bytes},
		{name: "basic auth", out: func(v string) string {
			return "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("ci:"+v)) + "\n"
		}, recover: b64Bytes},
		{name: "base64url", out: func(v string) string { return base64.RawURLEncoding.EncodeToString([]byte("xy" + v)) }, recover: b64Bytes},
		{name: "base64 -w0 no newline", out: func(v string) string { return base64.StdEncoding.EncodeToString([]byte(v)) }, recover: b64Bytes},
		{name: "base64 upper", out: func(v string) string { return strings.ToUpper(base64.StdEncoding.EncodeToString([]byte(v))) }, recover: as,
			secret: func(v string) string { return base64.StdEncoding.EncodeToString([]byte(v))[:len(v)*4/3] }},
		{name: "base32", out: func(v string) string { return wrap(base32.StdEncoding.EncodeToString([]byte(v+"\n")), 76) },
			recover: func(s string) []string { return b32Bytes(s, base32.StdEncoding, nonB32) }},
		{name: "base32 after 3", out: func(v string) string { return base32.StdEncoding.EncodeToString([]byte("abc" + v)) },
			recover: func(s string) []string { return b32Bytes(s, base32.StdEncoding, nonB32) }},
		{name: "base32hex", out: func(v string) string { return base32.HexEncoding.EncodeToString([]byte(v + "\n")) },
			recover: func(s string) []string {
				return b32Bytes(s, base32.HexEncoding, regexp.MustCompile(`[^0-9A-Va-v]`))
			}},
		{name: "url query", out: func(v string) string { return "https://x/?t=" + url.QueryEscape(v) }, recover: as},
		// Encoders that leave a set of bytes of their own choosing literal:
		// here every third byte escaped, in mixed hex case, or as HTML
		// references.
		{name: "percent some bytes", out: func(v string) string { return "https://x/?t=" + escapeSome(v, "%%%02x", "%%%02X") + "&x=1" }, recover: unescapeMixed},
		{name: "html references", out: func(v string) string { return "<a title=\"" + escapeSome(v, "&#%d;", "&#x%x;") + "\">" }, recover: unescapeMixed},
		{name: "json", out: func(v string) string { b, _ := json.Marshal(map[string]string{"token": v}); return string(b) }, recover: as},
		{name: "shell %q", out: func(v string) string { return backslashEscape(v) }, recover: as},
		{name: "gzip|base64", out: func(v string) string { return wrap(base64.StdEncoding.EncodeToString(gz([]byte(v+"\n"))), 76) }, recover: inflate},
		{name: "gzip|base64 env", out: func(v string) string {
			return wrap(base64.StdEncoding.EncodeToString(gz([]byte("PATH=/usr/bin\nHOME=/root\nGITHUB_TOKEN="+v+"\nSHELL=/bin/bash\n"))), 76)
		}, recover: inflate},
		{name: "zlib|base64", out: func(v string) string { return base64.StdEncoding.EncodeToString(zl([]byte(v))) }, recover: inflate},
		{name: "utf-16|base64", out: func(v string) string { return wrap(base64.StdEncoding.EncodeToString(utf16le(v+"\n", true)), 76) }, recover: fromUTF16},
		{name: "utf-16le|base64", out: func(v string) string { return base64.StdEncoding.EncodeToString(utf16le(v, false)) }, recover: fromUTF16},
		{name: "utf-16be|base64", out: func(v string) string { return base64.StdEncoding.EncodeToString(utf16be(v)) }, recover: fromUTF16},
		{name: "utf-16be hex", out: func(v string) string { return hex.EncodeToString(utf16be(v)) }, recover: func(s string) []string {
			var out []string
			for _, h := range hexBytes(s) {
				out = append(out, strings.ReplaceAll(h, "\x00", ""))
			}
			return out
		}},
		{name: "base64|base64", out: func(v string) string {
			return base64.StdEncoding.EncodeToString([]byte(base64.StdEncoding.EncodeToString([]byte(v))))
		}, recover: unb64twice},
		{name: "hex|base64", out: func(v string) string { return base64.StdEncoding.EncodeToString([]byte(hexOf(v))) },
			recover: func(s string) []string {
				var out []string
				for _, b := range b64Bytes(s) {
					out = append(out, hexBytes(b)...)
				}
				return out
			}},
	}
}

// redact runs text through a Feed in pieces of the given size and marks
// each span.
func redact(m *Matcher, text string, piece int) (string, int) {
	var out strings.Builder
	n := 0
	emit := func(v []byte, secret int) {
		if secret >= 0 {
			n++
			out.WriteString("[R]")
			return
		}
		out.Write(v)
	}
	f := m.Feed()
	for rest := text; rest != ""; {
		k := min(piece, len(rest))
		f.Write([]byte(rest[:k]), emit)
		rest = rest[k:]
	}
	f.Close(emit)
	return out.String(), n
}

// TestForms: every way a standard tool prints a value, read back by the
// inverse of that tool, gives the attacker nothing: a control shows the
// inverse does recover the value from the unredacted output.
func TestForms(t *testing.T) {
	t.Parallel()
	m := NewMatcher([]Secret{{ID: "gh", Value: tok}, {ID: "slack", Value: tok2}})
	for _, tc := range formCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, v := range []string{tok, tok2} {
				body := tc.out(v)
				text := "before\n" + body + "\nafter\n"
				secret := v
				if tc.secret != nil {
					secret = tc.secret(v)
				}
				want := strings.ToLower(nonAlnum.ReplaceAllString(secret, ""))
				if l := leak(secret, tc.recover(body)); l != want && !(tc.part && len(l) >= 16) {
					t.Fatalf("control: the inverse reads back only %q from %q", l, body)
				}
				got, n := redact(m, text, len(text))
				assert.Check(t, n > 0, "nothing redacted in %q", text)
				inner := strings.TrimSuffix(strings.TrimPrefix(got, "before\n"), "\nafter\n")
				if l := leak(secret, tc.recover(inner)); len(l) >= 6 {
					t.Errorf("%q read back from\n%s", l, got)
				}
				if l := leak(v, as(got)); len(l) >= 6 {
					t.Errorf("%q left in the output\n%s", l, got)
				}
				assert.Check(t, strings.HasPrefix(got, "before\n") && strings.HasSuffix(got, "\nafter\n"), got)
				id, ok := m.Find([]byte(text))
				assert.Check(t, ok, "Find")
				assert.Check(t, id == "gh" || id == "slack")
			}
		})
	}
}

func readAll(r interface{ Read([]byte) (int, error) }) ([]byte, error) {
	var out bytes.Buffer
	_, err := out.ReadFrom(r)
	return out.Bytes(), err
}

var _ = os.Getenv

// TestFragmentsOnlyOfRandomRuns: a piece of a value is redacted on its own
// only when it comes from a run that looks generated; the pieces a value
// shares with others (a JWT's header, a URL's host and path, a word) are
// redacted only within the whole value.
func TestFragmentsOnlyOfRandomRuns(t *testing.T) {
	t.Parallel()
	const jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
	const dsn = "postgres://app:s3cr3t-passw0rd@db.internal.example:5432/application"
	m := NewMatcher([]Secret{{ID: "jwt", Value: jwt}, {ID: "dsn", Value: dsn}, {ID: "words", Value: "correct horse battery staple"}})
	for _, tc := range []struct {
		text string
		hit  bool
	}{
		{"Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIyIn0.c2lnbmF0dXJl", false}, // another JWT, same header
		{"connecting to db.internal.example:5432/application", false},
		{"the correct horse battery", false},
		{"sig=dozjgNryP4J3jVmNHl0w5N_XgL0n3I9", true}, // the signature is random
		{jwt, true},
		{strings.ToUpper(dsn), true},
		{"CORRECT-HORSE-BATTERY-STAPLE", true},
	} {
		_, ok := m.Find([]byte(tc.text))
		assert.Check(t, ok == tc.hit, "%q: found %v", tc.text, ok)
	}
}

// TestJSONRune: the JSON form is what encoding/json prints.
func TestJSONRune(t *testing.T) {
	t.Parallel()
	for _, html := range []bool{false, true} {
		for r := rune(0); r < 0x3000; r++ {
			var got strings.Builder
			got.WriteString(jsonRune(r, html))
			if want := jsonString(string(r), html); got.String() != want {
				t.Fatalf("%U (html %v): %q, encoding/json %q", r, html, got.String(), want)
			}
		}
	}
}
