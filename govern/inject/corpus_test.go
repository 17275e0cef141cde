package inject

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

type corpusCase struct {
	line int
	kind Kind // empty for clean cases
	text string
}

// loadCorpus reads testdata/NAME.txt: one case per line, # comments; a text
// starting with a double quote is a Go string literal. withKind says each
// line starts with the expected Kind.
func loadCorpus(t testing.TB, name string, withKind bool) []corpusCase {
	t.Helper()
	f, err := os.Open("testdata/" + name + ".txt")
	assert.NilError(t, err)
	defer f.Close()
	var out []corpusCase
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		c := corpusCase{line: n}
		if withKind {
			k, rest, ok := strings.Cut(line, " ")
			assert.Assert(t, ok, "%s.txt:%d: no kind", name, n)
			c.kind, line = Kind(k), rest
		}
		if strings.HasPrefix(line, `"`) {
			s, err := strconv.Unquote(line)
			assert.NilError(t, err, "%s.txt:%d", name, n)
			line = s
		}
		c.text = line
		out = append(out, c)
	}
	assert.NilError(t, sc.Err())
	return out
}

// TestCorpusHits: every injection in the corpus is found, with the kind
// the corpus names.
func TestCorpusHits(t *testing.T) {
	t.Parallel()
	cases := loadCorpus(t, "hits", true)
	assert.Assert(t, len(cases) >= 60, "the hit corpus has %d cases; keep at least 60", len(cases))
	kinds := map[Kind]int{}
	for _, c := range cases {
		kinds[c.kind]++
		got := Scan(c.text)
		found := false
		for _, f := range got {
			found = found || f.Kind == c.kind
		}
		assert.Check(t, found, "hits.txt:%d: want a %s finding in %q, got %v", c.line, c.kind, c.text, got)
	}
	for _, k := range []Kind{KindHiddenCharacters, KindRoleMarker, KindOverride, KindExfiltration} {
		assert.Check(t, kinds[k] > 0, "no hit case of kind %s", k)
	}
}

// TestFalsePositiveRate measures findings on ordinary developer commands
// and inputs, and fails above 1%. Every false positive is listed.
func TestFalsePositiveRate(t *testing.T) {
	t.Parallel()
	cases := loadCorpus(t, "clean", false)
	assert.Assert(t, len(cases) >= 150, "the clean corpus has %d cases; keep at least 150", len(cases))
	fp := 0
	for _, c := range cases {
		if got := Scan(c.text); len(got) > 0 {
			fp++
			t.Logf("false positive, clean.txt:%d: %q: %v", c.line, c.text, got)
		}
	}
	rate := float64(fp) / float64(len(cases))
	t.Logf("false-positive rate: %d of %d clean cases (%.2f%%)", fp, len(cases), 100*rate)
	assert.Assert(t, rate <= 0.01, "false-positive rate %.2f%% is above 1%%", 100*rate)
}
