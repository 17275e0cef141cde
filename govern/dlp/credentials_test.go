package dlp

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
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
		"json":         string(js),
		"shell quoted": fmt.Sprintf("'%s'", strings.ReplaceAll(v, "'", `'\''`)),
	}
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

// BenchmarkRedactCredentials: 64 MiB of build-log-like output with 10
// injected credentials, clean and with a hit every 64 KiB. Target ≥ 500 MB/s.
func BenchmarkRedactCredentials(b *testing.B) {
	var secrets []Secret
	for i := 0; i < 10; i++ {
		secrets = append(secrets, Secret{ID: fmt.Sprintf("cred%d", i), Value: fmt.Sprintf("tok_%02d_%s", i, strings.Repeat("Zq9x", 8))})
	}
	r, err := NewRedactor(secrets)
	if err != nil {
		b.Fatal(err)
	}
	line := "2026-11-30T00:00:00Z go build -trimpath -o bin/app ./cmd/app: compiling 142 packages (cache hit 97%)\n"
	clean := []byte(strings.Repeat(line, (64<<20)/len(line)))
	hits := bytes.Clone(clean)
	for off := 0; off+64 < len(hits); off += 64 << 10 {
		copy(hits[off:], secrets[off%10].Value)
	}
	for name, data := range map[string][]byte{"clean": clean, "hits": hits} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				s := r.Stream(io.Discard)
				for off := 0; off < len(data); off += 32 << 10 {
					s.Write(data[off:min(off+32<<10, len(data))])
				}
				s.Close()
			}
		})
	}
}
