package secretscan

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// chunked runs text through a Feed in the pieces next gives.
func chunked(m *Matcher, text []byte, next func() int) (string, int) {
	var out bytes.Buffer
	n := 0
	emit := func(v []byte, secret int) {
		if secret >= 0 {
			n++
			fmt.Fprintf(&out, "[R:%s]", m.ID(secret))
			return
		}
		out.Write(v)
	}
	f := m.Feed()
	for rest := text; len(rest) > 0; {
		k := min(max(next(), 1), len(rest))
		f.Write(rest[:k], emit)
		rest = rest[k:]
	}
	f.Close(emit)
	return out.String(), n
}

func whole(m *Matcher, text []byte) (string, int) {
	return chunked(m, text, func() int { return len(text) })
}

// streamCases are forms whose matches span lines, runs and dump columns:
// where a write boundary could fall inside what decides a match.
func streamCases() map[string]string {
	out := map[string]string{}
	for _, tc := range formCases() {
		switch tc.name {
		case "raw", "fold -w5", "sed s/./&-/g", "two lines", "spaced hex", "xxd", "xxd -c4", "hexdump -C",
			"od -x", "od -c", "base64 after 1", "base32", "gzip|base64", "utf-16|base64", `\u per char`:
			out[tc.name] = "ok  \tgithub.com/acme/widget\t0.1s\n" + tc.out(tok) + "\nnext " + tc.out(tok2) + "\ndone\n"
		}
	}
	return out
}

// TestFeedEveryCut: for every place one write boundary can fall, and for
// random small writes, the output is the whole text's.
func TestFeedEveryCut(t *testing.T) {
	t.Parallel()
	m := NewMatcher([]Secret{{ID: "gh", Value: tok}, {ID: "slack", Value: tok2}})
	for name, text := range streamCases() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := []byte(text)
			want, n := whole(m, b)
			assert.Check(t, n >= 2, want)
			assert.Check(t, !strings.Contains(want, tok) && !strings.Contains(want, tok2), want)
			for cut := 0; cut <= len(b); cut++ {
				first := true
				got, k := chunked(m, b, func() int {
					if first {
						first = false
						return max(cut, 1)
					}
					return len(b)
				})
				if got != want || k != n {
					t.Fatalf("cut at %d:\n%s\nwhole:\n%s", cut, got, want)
				}
			}
			rng := rand.New(rand.NewPCG(1, 2))
			for i := 0; i < 50; i++ {
				max := 1 + rng.IntN(40)
				got, _ := chunked(m, b, func() int { return 1 + rng.IntN(max) })
				assert.Equal(t, got, want)
			}
		})
	}
}

// TestFeedHoldsLittle: clean output is passed on as it comes: what a feed
// holds back after a line is a few symbols, not the line.
func TestFeedHoldsLittle(t *testing.T) {
	t.Parallel()
	m := NewMatcher([]Secret{{ID: "gh", Value: tok}})
	f := m.Feed()
	held := 0
	for _, line := range []string{
		"go: downloading golang.org/x/sys v0.50.0\n",
		"=== RUN   TestParseHandler/case_12\n",
		"--- PASS: TestParseHandler (0.01s)\n",
		"ok  \tgithub.com/acme/widget/internal/store\t0.412s\tcoverage: 81.2% of statements\n",
		"#12 sha256:3fa8c0de19b2c7d5a1e4f6b8c9d0e1f2a3b4c5d6e7f8091a2b3c4d5e6f708192 1.2MB / 50.0MB 0.4s\n",
		"downloading ..........................................................................\n",
	} {
		f.Write([]byte(line), func([]byte, int) {})
		held = max(held, f.Pending())
	}
	assert.Check(t, held <= 40, "held back %d bytes", held)
	// A dump line is judged whole, and a base64 run worth decoding is held
	// until it ends.
	f.Close(func([]byte, int) {})
	f.Write([]byte("00000000: 6768"), func([]byte, int) {})
	assert.Check(t, is.Equal(f.Pending(), len("00000000: 6768")))
	f.Close(func([]byte, int) {})
	f.Write([]byte("H4sIAAAAAAAA/0rPKIiPqrCMLLQILzMPLTELLjINLDDxzzP2zTHyzjL0zDBwT7N0TeEC"), func([]byte, int) {})
	assert.Check(t, f.Pending() > 60, "an unfinished gzip run is held: %d", f.Pending())
}

// TestFeedContext: a feed keeps only the current line (or MaxContext of
// it) as context, so memory stays bounded on a long line.
func TestFeedContext(t *testing.T) {
	t.Parallel()
	m := NewMatcher([]Secret{{ID: "gh", Value: tok}})
	f := m.Feed()
	line := bytes.Repeat([]byte("word "), 100000)
	var out bytes.Buffer
	for off := 0; off < len(line); off += 4096 {
		f.Write(line[off:min(off+4096, len(line))], func(v []byte, _ int) { out.Write(v) })
		assert.Assert(t, len(f.buf) <= MaxContext+4096+64, "buffer %d", len(f.buf))
	}
	f.Write([]byte(tok+"\n"), func(v []byte, _ int) { out.Write(v) })
	n := 0
	f.Close(func(v []byte, s int) {
		if s >= 0 {
			n++
		}
		out.Write(v)
	})
	assert.Equal(t, n, 1)
	assert.Equal(t, out.Len(), len(line)+1)
}

// TestFindArgument: the sandbox's check of one command-line argument
// sees the same forms as the redactor.
func TestFindArgument(t *testing.T) {
	t.Parallel()
	m := NewMatcher([]Secret{{ID: "gh", Value: tok}})
	for _, tc := range formCases() {
		arg := tc.out(tok)
		id, ok := m.Find([]byte(arg))
		assert.Check(t, ok && id == "gh", "%s: %q", tc.name, arg)
	}
	for _, arg := range []string{"--token-file=/run/secrets/gh", "-H", "Authorization: Bearer $GITHUB_TOKEN", "https://api.github.com/repos/acme/widget",
		base64.StdEncoding.EncodeToString([]byte("an ordinary argument, encoded")), strings.Repeat("0123456789abcdef", 4)} {
		_, ok := m.Find([]byte(arg))
		assert.Check(t, !ok, arg)
	}
}

// fuzzMatcher holds a token, a second one, a value short enough for the
// exact forms only and one whose pieces are not random.
var fuzzMatcher = NewMatcher([]Secret{{ID: "gh", Value: tok}, {ID: "slack", Value: tok2}, {ID: "pin", Value: "12345678"}, {ID: "words", Value: "second-secret-value"}})

// checkFeed is the fuzz target's body: data with a secret printed in one
// of the forms (and the second token raw) put in at a line boundary. The
// feed must not panic; its output for the writes seed picks must equal
// the whole text's; and the form, read back by the tool's inverse, must
// give nothing of the secret.
func checkFeed(t *testing.T, data []byte, seed uint64, form uint8, at uint16) {
	cases := formCases()
	tc := cases[int(form)%len(cases)]
	secret := []string{tok, tok2}[seed&1]
	p := int(at) % (len(data) + 1)
	printed := tc.out(secret)
	text := append(append(append([]byte{}, data[:p]...), "\n"+printed+"\n"+tok2+"\n"...), data[p:]...)
	want, n := whole(fuzzMatcher, text)
	rng := rand.New(rand.NewPCG(seed, seed>>9))
	limit := 1 + rng.IntN(64)
	got, k := chunked(fuzzMatcher, text, func() int { return 1 + rng.IntN(limit) })
	if got != want || k != n {
		t.Fatalf("writes of up to %d bytes give\n%q\nthe whole text gives\n%q", limit, got, want)
	}
	if n < 2 {
		t.Fatalf("%s: %d redactions in %q", tc.name, n, want)
	}
	v := secret
	if tc.secret != nil {
		v = tc.secret(secret)
	}
	for _, s := range []string{tok, tok2} {
		if strings.Contains(want, s) {
			t.Fatalf("%s: the value is left in %q", tc.name, want)
		}
	}
	// What the attacker reads back from where the form was.
	i := strings.Index(want, "\n[R:")
	if i < 0 {
		t.Fatalf("%s: no redaction after a line start in %q", tc.name, want)
	}
	region := want[i:]
	if j := strings.Index(region, "\n[R:slack]\n"); j >= 0 {
		region = region[:j]
	}
	if l := leak(v, tc.recover(region)); len(l) >= 8 {
		t.Fatalf("%s: %q read back from %q", tc.name, l, region)
	}
}

// FuzzFeed: the streaming redactor on any text, in any writes, with any
// form of a secret in it.
func FuzzFeed(f *testing.F) {
	f.Add([]byte("ok  \tgithub.com/acme/widget\t0.1s\n"), uint64(1), uint8(0), uint16(0))
	f.Add([]byte("00000000: 6768 705f  ghp_\nH4sI\n"), uint64(2), uint8(44), uint16(5))
	f.Add([]byte("=== RUN   TestX\n--- PASS: TestX (0.00s)\n"), uint64(3), uint8(60), uint16(17))
	f.Add([]byte{}, uint64(4), uint8(30), uint16(0))
	// Escapes around and in the text: percent-encoded bytes of the
	// secret's own choosing, HTML references, a cut-off escape.
	f.Add([]byte("GET /a?q=%41%2 HTTP/1.1 &amp; 100% done &#x4\n"), uint64(5), uint8(60), uint16(9))
	f.Add([]byte("<p title=\"&quot;&#35;\">%7e&lt;</p>\n"), uint64(6), uint8(61), uint16(3))
	f.Fuzz(checkFeed)
}

// TestFeedRandom runs the fuzz body on generated output, so that every
// go test run (and make test) covers what FuzzFeed does, for a bounded
// number of cases: each form, at several places in build-log-like text.
func TestFeedRandom(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 8))
	lines := []string{"ok  \tgithub.com/acme/widget\t0.1s\n", "00000010: 656e 5661 6c75 6530  enValue0\n", "  6867 5f70\n",
		"H4sIAAAAAAAA/0rPKI\n", "sha256:3fa8c0de19b2c7d5a1e4f6b8c9d0e1f2\n", "=== RUN   TestParse/case_1\n", "\tat com.acme.Main(Main.java:12)\n",
		"ZWNyZXQ=\n", "0000000 064147 057560\n", "[ 45%] Building CXX object\n", "x=1 y=2\r\n", "\x00\xff\xfe binary\n"}
	cases := formCases()
	for i := 0; i < 6*len(cases); i++ {
		var data []byte
		for range rng.IntN(12) {
			data = append(data, lines[rng.IntN(len(lines))]...)
		}
		checkFeed(t, data, rng.Uint64(), uint8(i%len(cases)), uint16(rng.IntN(len(data)+1)))
	}
}
