package secretscan

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"
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

// Variants returns the forms a value can appear in: raw; base64 in the
// standard and URL alphabets at each of the three byte alignments (only
// the characters that depend on the value alone); URL-encoded with upper
// and lower hex; hex upper and lower; JSON-escaped; shell-escaped.
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
	var jb bytes.Buffer
	enc := json.NewEncoder(&jb)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	add(strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(jb.String(), `"`), "\n"), `"`))
	js, _ := json.Marshal(v)
	add(strings.TrimSuffix(strings.TrimPrefix(string(js), `"`), `"`))
	add(strings.ReplaceAll(v, "'", `'\''`))
	add(backslashEscape(v))
	return out
}

// base64Core encodes v as if k unknown bytes came before it and returns
// only the characters determined by v's bytes: char j of an encoding
// covers bits 6j..6j+5, that is bytes 6j/8 .. (6j+5)/8.
func base64Core(enc *base64.Encoding, v []byte, k int) string {
	buf := make([]byte, k+len(v)+2)
	copy(buf[k:], v)
	s := enc.EncodeToString(buf)
	var b strings.Builder
	for j := 0; j < len(s); j++ {
		first, last := 6*j/8, (6*j+5)/8
		if first >= k && last < k+len(v) {
			b.WriteByte(s[j])
		} else if b.Len() > 0 {
			break
		}
	}
	return b.String()
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
