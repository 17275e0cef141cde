package dlp

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
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

// realisticSecrets are n credentials in the shapes real ones have:
// GitHub, Slack, npm and AWS keys, hex and base64 API keys, JWTs,
// passwords with punctuation.
func realisticSecrets(rng *rand.Rand, n int) []Secret {
	const b62 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	const b64 = b62 + "+/"
	pick := func(alpha string, k int) string {
		b := make([]byte, k)
		for i := range b {
			b[i] = alpha[rng.IntN(len(alpha))]
		}
		return string(b)
	}
	shapes := []func() string{
		func() string { return "ghp_" + pick(b62, 36) },
		func() string { return "github_pat_" + pick(b62, 22) + "_" + pick(b62, 59) },
		func() string {
			return "xoxb-" + pick("0123456789", 12) + "-" + pick("0123456789", 13) + "-" + pick(b62, 24)
		},
		func() string { return "npm_" + pick(b62, 36) },
		func() string { return pick(b64, 40) }, // an AWS secret access key
		func() string { return pick("0123456789abcdef", 32) },
		func() string { return pick("0123456789abcdef", 64) },
		func() string { return pick(b64, 43) + "=" },
		func() string {
			seg := func(k int) string { return pick(b62+"-_", k) }
			return "eyJhbGciOiJIUzI1NiJ9." + seg(60) + "." + seg(43)
		},
		func() string { return pick(b62+"!@#$%^&*()-_=+[]{}:;,.?", 20) },
	}
	var out []Secret
	for i := range n {
		out = append(out, Secret{ID: fmt.Sprintf("cred%d", i), Value: shapes[i%len(shapes)]()})
	}
	return out
}

// ordinaryOutput is output that holds no credential: generated build
// logs, real ones (go build -x, go test -v), the near misses of
// testdata/clean, and the repository's own files.
func ordinaryOutput(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{"generated build log": buildLog(rand.New(rand.NewPCG(21, 22)), 8<<20)}
	logs, err := filepath.Glob("testdata/ordinary/*.gz")
	assert.NilError(t, err)
	assert.Assert(t, len(logs) > 0)
	for _, f := range logs {
		z, err := os.Open(f)
		assert.NilError(t, err)
		r, err := gzip.NewReader(z)
		assert.NilError(t, err)
		b, err := io.ReadAll(r)
		assert.NilError(t, err)
		z.Close()
		out[f] = b
	}
	clean, err := filepath.Glob("testdata/clean/*.log")
	assert.NilError(t, err)
	for _, f := range clean {
		b, err := os.ReadFile(f)
		assert.NilError(t, err)
		out[f] = b
	}
	var repo bytes.Buffer
	root := filepath.Join("..", "..")
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != root && (strings.HasPrefix(n, ".") || n == "node_modules" || n == "bin" || n == "fuzz") {
				return filepath.SkipDir
			}
			return nil
		}
		if fi, err := d.Info(); err != nil || fi.Size() > 1<<20 || strings.HasSuffix(p, ".gz") {
			return err
		}
		b, err := os.ReadFile(p)
		repo.Write(b)
		return err
	})
	assert.NilError(t, err)
	assert.Assert(t, repo.Len() > 1<<20, "the repository walk found only %d bytes", repo.Len())
	out["repository files"] = repo.Bytes()
	return out
}

// TestOrdinaryOutputUntouched is the false-positive argument made
// concrete: with 60 credentials of real shapes loaded, about 15 MiB of
// ordinary output (build logs, test logs, source, go.sum hashes, YAML)
// comes out byte for byte. Matches of 16 symbols and more (and, for a
// fragment, 8 value bytes: 2^64 at least, 2^82 for a random 40-character
// token) do not happen by chance in it.
func TestOrdinaryOutputUntouched(t *testing.T) {
	t.Parallel()
	r, err := NewRedactor(realisticSecrets(rand.New(rand.NewPCG(31, 32)), 60))
	assert.NilError(t, err)
	total := 0
	for name, text := range ordinaryOutput(t) {
		total += len(text)
		out, counts := r.Redact(text)
		if len(counts) == 0 {
			continue
		}
		for i := 0; i < len(out) && i < len(text); i++ {
			if out[i] != text[i] {
				t.Errorf("%s: redacted %v at %q", name, counts, text[max(i-60, 0):min(i+100, len(text))])
				break
			}
		}
	}
	t.Logf("%d bytes of ordinary output", total)
}
