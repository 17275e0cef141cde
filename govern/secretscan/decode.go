package secretscan

import (
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"compress/zlib"
	"encoding/base64"
	"io"
)

// Decoding. Some forms only decoding shows: a value compressed then
// base64-encoded (gzip | base64), or turned into UTF-16 first (iconv |
// base64), or encoded twice. So every run of base64 characters of at least
// minRun is judged by what its first minRun characters decode to: the
// header of gzip, zlib or bzip2, UTF-16 text, or printable text. Such a run
// (up to maxRun characters, wrapped lines joined) is decoded, decompressed
// up to maxInflate bytes, and the result scanned as output is; if it holds
// a secret, the whole run is redacted. Any other run costs the decoding of
// its first characters only.
const (
	minRun     = 36
	maxRun     = 64 << 10
	maxInflate = 1 << 20
	maxDepth   = 2 // a decoded payload is scanned, and its own runs decoded, once more
)

// What a run's start decodes to.
const (
	runPlain = iota
	runGzip
	runZlib
	runBzip2
	runText // printable or UTF-16
)

// b64val is each base64 character's value, in either alphabet.
var b64val = func() (t [256]byte) {
	const std = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	for i := range t {
		t[i] = 0xff
	}
	for i := range len(std) {
		t[std[i]] = byte(i)
	}
	t['-'], t['_'] = 62, 63
	return t
}()

// judgeRun decodes the first minRun characters of a run.
func judgeRun(head []byte) int {
	// The first three bytes rule out most runs.
	v0, v1, v2, v3 := b64val[head[0]], b64val[head[1]], b64val[head[2]], b64val[head[3]]
	d0, d1, d2 := v0<<2|v1>>4, v1<<4|v2>>2, v2<<6|v3
	switch {
	case d0 == 0x1f && d1 == 0x8b && d2 == 8: // gzip
	case d0 == 0x78 && (0x7800|uint16(d1))%31 == 0: // zlib
	case d0 == 'B' && d1 == 'Z' && d2 == 'h': // bzip2
	case d0 == 0xff && d1 == 0xfe || d0 == 0xfe && d1 == 0xff: // UTF-16 byte order marks
	case d1 == 0 && printable(d0) && printable(d2), d0 == 0 && d2 == 0 && printable(d1): // UTF-16
	case printable(d0) && printable(d1) && printable(d2):
	default:
		return runPlain
	}
	var d [minRun * 3 / 4]byte
	enc := base64.RawStdEncoding
	if bytes.ContainsAny(head, "-_") {
		enc = base64.RawURLEncoding
	}
	if _, err := enc.Decode(d[:], head); err != nil {
		return runPlain
	}
	switch {
	case d[0] == 0x1f && d[1] == 0x8b && d[2] == 8:
		return runGzip
	case d[0] == 0x78 && (uint16(d[0])<<8|uint16(d[1]))%31 == 0 && d[1]&0x20 == 0:
		return runZlib
	case d[0] == 'B' && d[1] == 'Z' && d[2] == 'h' && d[3] >= '1' && d[3] <= '9':
		return runBzip2
	case d[0] == 0xff && d[1] == 0xfe || d[0] == 0xfe && d[1] == 0xff:
		return runText // UTF-16 with a byte order mark
	}
	text, le, be := true, true, true
	for i, c := range d {
		p := printable(c)
		text = text && p
		if i%2 == 0 {
			le = le && p
			be = be && c == 0
		} else {
			le = le && c == 0
			be = be && p
		}
	}
	if text || le || be {
		return runText
	}
	return runPlain
}

func printable(c byte) bool { return c >= 0x20 && c < 0x7f || c == '\t' || c == '\n' || c == '\r' }

// runEnd returns where the run at start ends: at the first byte that is
// not a base64 character, after its padding, or after maxRun characters.
// A line end continues the run when the line is as long as the lines of
// wrapped base64 are (76: base64; 64: openssl base64, PEM) and so are the
// lines before it in the run. done is false when what comes next could
// still extend it.
func runEnd(buf []byte, start int, final bool) (int, bool) {
	i, line, width := start, 0, 0
	for i < len(buf) && i-start < maxRun {
		c := buf[i]
		switch {
		case class[c]&clRun != 0:
			i++
			line++
			continue
		case c == '=':
			for i < len(buf) && buf[i] == '=' && i-start < maxRun {
				i++
			}
			return i, i < len(buf) || final || i-start >= maxRun
		case c == '\r' || c == '\n':
			if width == 0 && (line == 64 || line == 76) {
				width = line
			}
			if line != width || width == 0 {
				return i, true
			}
			k := i
			if buf[k] == '\r' {
				k++
			}
			if k < len(buf) && buf[k] == '\n' {
				k++
			}
			if k >= len(buf) {
				return i, final
			}
			if class[buf[k]]&clRun == 0 {
				return i, true
			}
			i, line = k, 0
			continue
		}
		return i, true
	}
	return i, i < len(buf) || final || i-start >= maxRun
}

// decoded decodes a run and scans what it holds; it returns the first
// secret found.
func (m *Matcher) decoded(run []byte, kind, depth int) (int, bool) {
	var chars []byte
	url := false
	for _, c := range run {
		switch {
		case c == '-' || c == '_':
			url = true
			fallthrough
		case class[c]&clRun != 0:
			chars = append(chars, c)
		}
	}
	if len(chars)%4 == 1 {
		chars = chars[:len(chars)-1]
	}
	enc := base64.RawStdEncoding
	if url {
		enc = base64.RawURLEncoding
	}
	data := make([]byte, enc.DecodedLen(len(chars)))
	k, _ := enc.Decode(data, chars)
	data = data[:k]
	var r io.Reader
	var err error
	switch kind {
	case runGzip:
		r, err = gzip.NewReader(bytes.NewReader(data))
	case runZlib:
		r, err = zlib.NewReader(bytes.NewReader(data))
	case runBzip2:
		r = bzip2.NewReader(bytes.NewReader(data))
	}
	if err != nil {
		return 0, false
	}
	if r != nil {
		// A truncated or corrupt stream still gives what came before.
		data, _ = io.ReadAll(io.LimitReader(r, maxInflate))
	}
	sc := m.scratch()
	defer m.pool.Put(sc)
	spans, _ := sc.scan(m, data, 0, true, depth+1, nil)
	if len(spans) == 0 {
		return 0, false
	}
	return spans[0].Secret, true
}
