package secretscan

import (
	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// percentKeep percent-encodes every byte of v that keep does not leave
// literal, with upper- or lower-case hex; a space becomes plus when set.
func percentKeep(v string, keep func(c byte) bool, lower, plus bool) string {
	digits := "0123456789ABCDEF"
	if lower {
		digits = "0123456789abcdef"
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case plus && c == ' ':
			b.WriteByte('+')
		case keep(c):
			b.WriteByte(c)
		default:
			b.WriteByte('%')
			b.WriteByte(digits[c>>4])
			b.WriteByte(digits[c&15])
		}
	}
	return b.String()
}

func alnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }

func keepSet(set string) func(byte) bool {
	return func(c byte) bool { return alnum(c) || strings.IndexByte(set, c) >= 0 }
}

// htmlEscape is Python's html.escape (quote=True) or jq's @html.
func htmlEscape(v string, jq bool) string {
	apos := "&#x27;"
	if jq {
		apos = "&#39;"
	}
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", apos).Replace(v)
}

// entityAll writes every punctuation byte as a numeric reference.
func entityAll(v string, hexa bool) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case alnum(c):
			b.WriteByte(c)
		case hexa:
			fmt.Fprintf(&b, "&#x%X;", c)
		default:
			fmt.Fprintf(&b, "&#%d;", c)
		}
	}
	return b.String()
}

// escapedEncodings are the outputs of the encoders the review ran, and
// others, for v.
func escapedEncodings(v string, rng *rand.Rand) map[string]string {
	out := map[string]string{
		// Python: unreserved A-Za-z0-9_.-~ and safe (default "/").
		"python quote":          percentKeep(v, keepSet("_.-~/"), false, false),
		"python quote safe=''":  percentKeep(v, keepSet("_.-~"), false, false),
		"python quote_plus":     percentKeep(v, keepSet("_.-~"), false, true),
		"encodeURIComponent":    percentKeep(v, keepSet("-_.!~*'()"), false, false),
		"jq @uri (1.6)":         percentKeep(v, keepSet("-_.!~*'()"), false, false),
		"jq @uri (1.7)":         percentKeep(v, keepSet("-_.~"), false, false),
		"php rawurlencode":      percentKeep(v, keepSet("-_.~"), false, false),
		"php urlencode":         percentKeep(v, keepSet("-_."), false, true),
		"encodeURI":             percentKeep(v, keepSet("-_.!~*'();/?:@&=+$,#"), false, false),
		"node URL password":     percentKeep(v, keepSet("!$&'()*+,-._~"), false, false),
		"lower hex, keep /":     percentKeep(v, keepSet("/"), true, false),
		"html.escape":           htmlEscape(v, false),
		"jq @html":              htmlEscape(v, true),
		"entities decimal":      entityAll(v, false),
		"entities hex":          entityAll(v, true),
		"entities of url-enc'd": htmlEscape(percentKeep(v, keepSet("&"), false, false), true),
	}
	for k := range 4 {
		// A random subset of bytes escaped, each in a random hex case.
		var b strings.Builder
		for i := 0; i < len(v); i++ {
			c := v[i]
			if c == ' ' {
				b.WriteString([]string{"+", "%20"}[rng.IntN(2)])
				continue
			}
			if alnum(c) && rng.IntN(4) != 0 || !alnum(c) && rng.IntN(2) == 0 {
				b.WriteByte(c)
				continue
			}
			h := fmt.Sprintf("%02X", c)
			if rng.IntN(2) == 0 {
				h = strings.ToLower(h[:1]) + h[1:]
			}
			if rng.IntN(2) == 0 {
				h = h[:1] + strings.ToLower(h[1:])
			}
			b.WriteString("%" + h)
		}
		out[fmt.Sprintf("random subset %d", k)] = b.String()
	}
	return out
}

var escapedValues = []string{
	"Xk9#mP2$vL7&nQ4+wR8/tY3=zB6!cF1@", // the review's
	"#Xk9mP2$vL7 nQ4+wR8/tY3=zB6!cF1@!",
	"p@ss w0rd/with:many;chars?Zq81&=",
	"AbC~dEf*gHi(jKl)mNo'pQr\"sTu<vWx>yZ0",
}

// TestEscapedEncodings: any choice of the bytes to percent-encode or to
// write as HTML references is redacted whole, in Find (the exec guard) and
// in a feed, written at once or in random pieces.
func TestEscapedEncodings(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 8))
	for _, v := range escapedValues {
		m := NewMatcher([]Secret{{ID: "db", Value: v}})
		for name, enc := range escapedEncodings(v, rng) {
			t.Run(name, func(t *testing.T) {
				if enc == v {
					return // the encoder leaves this value as it is
				}
				for _, ctx := range []string{"%s", "pass=%s\n", "url: https://u:%s@db.example/x done\n", "[\"%s\"]"} {
					text := fmt.Sprintf(ctx, enc)
					_, ok := m.Find([]byte(text))
					assert.Check(t, ok, "argv %q of %q", text, v)
					got, n := whole(m, []byte(text))
					assert.Check(t, n >= 1 && !strings.Contains(got, enc), "%q -> %q", text, got)
					assert.Check(t, fmt.Sprintf(ctx, "[R:db]") == got, "%q -> %q: not the whole encoding", text, got)
					cut, _ := chunked(m, []byte(text), func() int { return 1 + rng.IntN(7) })
					assert.Check(t, cut == got, "%q in pieces -> %q, whole %q", text, cut, got)
				}
			})
		}
	}
}

// TestEscapesOrdinary: escapes in ordinary output change nothing.
func TestEscapesOrdinary(t *testing.T) {
	m := NewMatcher([]Secret{{ID: "db", Value: escapedValues[0]}})
	for _, text := range []string{
		"GET /search?q=Xk9%20mP2%20and%26more 200\n", "100% done &amp; ok &#35; &#x23; &nbsp;\n",
	} {
		got, n := whole(m, []byte(text))
		assert.Check(t, n == 0 && got == text, "%q -> %q", text, got)
	}
}

// TestDecodedValueForms: a value that is itself base64 or hex has its
// bytes matched in their forms too: xxd -p, od, base32 of base64 -d.
func TestDecodedValueForms(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	key := make([]byte, 48)
	for i := range key {
		key[i] = byte(rng.Uint32())
	}
	encs := map[string]string{
		"base64":        base64.StdEncoding.EncodeToString(key),
		"base64url":     base64.URLEncoding.EncodeToString(key[:47]),
		"base64 raw":    base64.RawStdEncoding.EncodeToString(key[:46]),
		"base64url raw": base64.RawURLEncoding.EncodeToString(key[:20]),
		"hex":           hex.EncodeToString(key[:32]),
		"HEX":           strings.ToUpper(hex.EncodeToString(key[:16])),
	}
	for vname, v := range encs {
		var d []byte
		switch {
		case strings.HasPrefix(vname, "hex"), vname == "HEX":
			d, _ = hex.DecodeString(v)
		case vname == "base64":
			d = key
		case vname == "base64url":
			d = key[:47]
		case vname == "base64 raw":
			d = key[:46]
		default:
			d = key[:20]
		}
		m := NewMatcher([]Secret{{ID: "k", Value: v}})
		xxd := hex.EncodeToString(d)
		var xxdp, od strings.Builder
		for i := 0; i < len(xxd); i += 60 {
			xxdp.WriteString(xxd[i:min(i+60, len(xxd))] + "\n")
		}
		for i := 0; i < len(d); i += 16 {
			for _, c := range d[i:min(i+16, len(d))] {
				fmt.Fprintf(&od, " %02x", c)
			}
			od.WriteString("\n")
		}
		forms := map[string]string{
			"xxd -p":              xxdp.String(),
			"od -An -tx1":         od.String(),
			"base32":              base32.StdEncoding.EncodeToString(d) + "\n",
			"base64 -d|base64url": base64.RawURLEncoding.EncodeToString(d) + "\n",
			"head -c 12 of hex":   hex.EncodeToString(d[:12]) + "\n",
		}
		if len(d) >= MinSecretBytes {
			forms["raw bytes"] = "x " + string(d) + " y\n"
		}
		if vname != "hex" && vname != "HEX" {
			forms["hex of raw"] = hex.EncodeToString(d) + "\n"
		}
		for fname, text := range forms {
			t.Run(vname+"/"+fname, func(t *testing.T) {
				_, ok := m.Find([]byte(text))
				assert.Check(t, ok, "%q", text)
				got, n := whole(m, []byte(text))
				assert.Check(t, n >= 1, "%q -> %q", text, got)
				if fname != "raw bytes" {
					assert.Check(t, strings.Trim(got, "\n") == strings.Trim(strings.Repeat("[R:k]", n), "\n") || !strings.ContainsAny(strings.ReplaceAll(got, "[R:k]", ""), "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"), "%q -> %q", text, got)
				}
			})
		}
	}
	// A plain password that happens to be of base64's alphabet is still
	// matched as itself.
	m := NewMatcher([]Secret{{ID: "p", Value: "Xk9mP2vL7nQ4wR8tY3zB6cF1"}})
	_, n := whole(m, []byte("Xk9mP2vL7nQ4wR8tY3zB6cF1\n"))
	assert.Check(t, n == 1)
}
