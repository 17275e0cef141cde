package dlp

import (
	"math/rand/v2"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// unfiltered is b with every prefilter switched off: the reference the
// prefilters must not change.
func unfiltered(b Bindings) Bindings {
	m := matcher{kw: b.m.kw, kwDets: b.m.kwDets} // not the scratch pool, which must not be copied
	m.ds = make([]*Detector, len(b.m.ds))
	for i, d := range b.m.ds {
		c := *d
		dc := d.compiled()
		c.lazy = &compiledDetector{re: dc.re, end: dc.end}
		c.lazy.once.Do(func() {}) // compiled, without prefilters
		m.ds[i] = &c
	}
	return Bindings{m: &m}
}

// prefilterCorpus is text near the detectors' shapes: every fixture, and
// mutations of them that flip case, cut and splice.
func prefilterCorpus(t *testing.T) []string {
	var texts []string
	for _, fx := range readFixtures(t) {
		in, _, _ := unmark(fx.text, fx.label)
		texts = append(texts, in)
	}
	rng := rand.New(rand.NewPCG(21, 22))
	n := len(texts)
	for i := range 4 * n {
		s := []byte(texts[i%n])
		for range 1 + rng.IntN(4) {
			if len(s) == 0 {
				break
			}
			j := rng.IntN(len(s))
			switch rng.IntN(4) {
			case 0: // flip case
				if c := s[j]; 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' {
					s[j] ^= 0x20
				}
			case 1: // cut
				s = append(s[:j], s[min(j+1+rng.IntN(8), len(s)):]...)
			case 2: // splice in part of another fixture
				o := texts[rng.IntN(n)]
				k := rng.IntN(len(o) + 1)
				s = append(s[:j], append([]byte(o[k:min(k+20, len(o))]), s[j:]...)...)
			case 3: // a delimiter
				s[j] = " =:'\"/\n"[rng.IntN(7)]
			}
		}
		texts = append(texts, string(s))
	}
	return texts
}

// TestPrefiltersExact: the prefilters only skip work, never a hit.
func TestPrefiltersExact(t *testing.T) {
	t.Parallel()
	b := bindAll(t)
	ref := unfiltered(b)
	corpus := prefilterCorpus(t)
	corpus = append(corpus, strings.Join(corpus, "\n"))
	for _, text := range corpus {
		got, _ := b.Redact(text)
		want, _ := ref.Redact(text)
		assert.Check(t, got == want, "prefilters changed the result on %q\n got: %q\nwant: %q", text, got, want)
	}
}

func FuzzPrefilters(f *testing.F) {
	f.Add("api_key = \"Zx9q8w7e6r5t4y3u2i1o0pLkJhGf\"")
	f.Add("SNYK_TOKEN=ddB6ccC2-fdfb-03b9-6EE5-b144df5aEacb")
	f.Add("lob live_0123456789abcdef0123456789abcdef012")
	b := bindAll(f)
	ref := unfiltered(b)
	f.Fuzz(func(t *testing.T, text string) {
		got, _ := b.Redact(text)
		want, _ := ref.Redact(text)
		if got != want {
			t.Fatalf("prefilters changed %q: %q, unfiltered %q", text, got, want)
		}
	})
}

func TestPrefilterShapes(t *testing.T) {
	t.Parallel()
	c := mustCatalog()
	anchored := 0
	for _, d := range c.ds {
		if p := d.compiled().pre; !d.block() && p.anchored != nil {
			anchored++
			assert.Check(t, p.heads != nil, "%s: anchored without heads", d.Name)
		}
	}
	// Nearly every rule can be tried only where its keyword (or another
	// literal) stands, which is what keeps clean output fast.
	assert.Check(t, anchored*10 >= len(c.ds)*9, "%d of %d detectors anchored", anchored, len(c.ds))
}
