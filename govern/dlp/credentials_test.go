package dlp

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

const token = "ghp_Zx9Yq8Wv7Ut6Sr5Qp4On3Ml2Kj1Ih0Gf9Ed"

func forms(v string) map[string]string {
	b64 := func(enc *base64.Encoding, prefix string) string {
		return enc.EncodeToString([]byte(prefix + v + "\n"))
	}
	js, _ := json.Marshal(map[string]string{"token": v})
	return map[string]string{
		"raw":          "token=" + v + "\n",
		"b64 std 0":    b64(base64.StdEncoding, ""),
		"b64 std 1":    b64(base64.StdEncoding, "a"),
		"b64 std 2":    b64(base64.StdEncoding, "ab"),
		"b64 std 3":    b64(base64.StdEncoding, "Authorization: Basic "),
		"b64 url 1":    b64(base64.URLEncoding, "x"),
		"b64 raw url":  base64.RawURLEncoding.EncodeToString([]byte("xy" + v)),
		"hex lower":    hex.EncodeToString([]byte(v)),
		"hex upper":    strings.ToUpper(hex.EncodeToString([]byte("k=" + v))),
		"url query":    "https://x/?t=" + url.QueryEscape(v),
		"pct every up": "curl -d t=" + pctEvery(v, "%%%02X"),
		"pct every lo": "curl -d t=" + pctEvery(v, "%%%02x"),
		"json":         string(js),
		"shell quoted": fmt.Sprintf("'%s'", strings.ReplaceAll(v, "'", `'\''`)),
	}
}

// pctEvery percent-encodes every byte of v with format.
func pctEvery(v, format string) string {
	var b strings.Builder
	for _, c := range []byte(v) {
		fmt.Fprintf(&b, format, c)
	}
	return b.String()
}

func TestRedactsEveryForm(t *testing.T) {
	t.Parallel()
	for _, value := range []string{token, `p@ss w0rd/with+"quotes"&'single'?=%`} {
		r, err := NewRedactor([]Secret{{ID: "github_token", Value: value}})
		assert.NilError(t, err)
		for name, text := range forms(value) {
			out, counts := r.Redact([]byte(text))
			assert.Check(t, counts["github_token"] >= 1, "%s: %q not redacted: %q", name, text, out)
			assert.Check(t, is.Contains(string(out), "[REDACTED:credential:github_token]"), name)
			assert.Check(t, !strings.Contains(string(out), value), name)
		}
	}
}

func TestSplitAcrossWrites(t *testing.T) {
	t.Parallel()
	r, err := NewRedactor([]Secret{{ID: "a", Value: token}, {ID: "b", Value: "second-secret-value"}})
	assert.NilError(t, err)
	text := "start " + token + " middle " + base64.StdEncoding.EncodeToString([]byte("x"+token)) + " second-secret-value end"
	want, counts := r.Redact([]byte(text))
	assert.Equal(t, counts["a"], 2)
	assert.Equal(t, counts["b"], 1)
	// Every split point, and random chunkings, give the same output.
	for cut := 0; cut <= len(text); cut++ {
		var out bytes.Buffer
		s := r.Stream(&out)
		s.Write([]byte(text[:cut]))
		s.Write([]byte(text[cut:]))
		assert.NilError(t, s.Close())
		assert.Equal(t, out.String(), string(want), "cut at %d", cut)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200; i++ {
		var out bytes.Buffer
		s := r.Stream(&out)
		for rest := text; rest != ""; {
			n := 1 + rng.IntN(7)
			n = min(n, len(rest))
			s.Write([]byte(rest[:n]))
			rest = rest[n:]
		}
		s.Close()
		assert.Equal(t, out.String(), string(want))
		assert.Equal(t, s.Total(), 3)
	}
}

func TestShortValuesRefused(t *testing.T) {
	t.Parallel()
	_, err := NewRedactor([]Secret{{ID: "pin", Value: "1234567"}})
	assert.ErrorContains(t, err, "shorter than 8 bytes")
}

func TestCleanTextUntouched(t *testing.T) {
	t.Parallel()
	r, err := NewRedactor([]Secret{{ID: "a", Value: token}})
	assert.NilError(t, err)
	text := []byte(strings.Repeat("go: downloading golang.org/x/sys v0.47.0\nok  \tgithub.com/x/y\t0.1s\n", 100))
	out, counts := r.Redact(text)
	assert.DeepEqual(t, out, text)
	assert.Equal(t, len(counts), 0)
	empty, err := NewRedactor(nil)
	assert.NilError(t, err)
	out, _ = empty.Redact(text)
	assert.DeepEqual(t, out, text)
}
