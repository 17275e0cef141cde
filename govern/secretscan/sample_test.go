package secretscan

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// The reference for textMatches: the sampling as it was before
// sampleRun, one sample at a time with the branches in the loop, and the
// base64 runs found by their own samples (every other sample's word, and
// the words around it) before the text is sampled. It shares everything
// else (textSample, textSeed, runAt, ...) with textMatches.
func (sc *scratch) refTextMatches(m *Matcher, ix *index, buf []byte, final bool, depth int) {
	skip := 0
	runs := depth < maxDepth
	var quad []uint64
	if ix != nil {
		quad = ix.quad
	}
	for si, seg := range sc.segs {
		lo, hi := seg[0], seg[1]
		open := si == len(sc.segs)-1 && hi == sc.end && !final
		sc.run = runState{judged: -1, start: -1}
		if runs {
			sc.refRunSamples(m, buf, lo, hi, final, depth)
		}
		p := lo
		for ; p+8 <= hi && quad != nil; p += textStride {
			w := binary.LittleEndian.Uint64(buf[p : p+8 : p+8])
			f := first4[(symMask(w)>>7*0x0102040810204080)>>56]
			if f == 0 {
				var at [4]int
				if fourSymbols(buf, p, hi, &at) && at[0] < p+textStride && ix.maybeQuad(quadKey(buf, at[:])) {
					skip = sc.textSample(ix, buf, lo, hi, open, at[0], skip)
				}
				continue
			}
			t0, t1, t2, t3 := f&63, f>>6&63, f>>12&63, f>>18&63
			key := uint32(byte(w>>t0)|0x20) | uint32(byte(w>>t1)|0x20)<<8 | uint32(byte(w>>t2)|0x20)<<16 | uint32(byte(w>>t3)|0x20)<<24
			if ix.maybeQuad(key) && p+int(t0>>3) >= skip {
				at := [12]int{4: p + int(t0>>3), 5: p + int(t1>>3), 6: p + int(t2>>3), 7: p + int(t3>>3)}
				skip = max(skip, sc.textSeed(ix, buf, lo, hi, open, &at))
			}
		}
		for ; p < hi && quad != nil; p += textStride {
			var at [4]int
			if fourSymbols(buf, p, hi, &at) && at[0] < p+textStride && ix.maybeQuad(quadKey(buf, at[:])) {
				skip = sc.textSample(ix, buf, lo, hi, open, at[0], skip)
			}
		}
		if open {
			if ix != nil {
				sc.holdText(buf, lo, hi)
			}
			if runs {
				sc.holdRun(buf, lo, hi)
			}
		}
	}
}

// refRunSamples: every other sample whose word, with 16 bytes around it,
// is base64 has its run judged.
func (sc *scratch) refRunSamples(m *Matcher, buf []byte, lo, hi int, final bool, depth int) {
	full := func(a int) bool {
		return a >= lo && a+8 <= hi && runMask(binary.LittleEndian.Uint64(buf[a:a+8])) == high
	}
	for p := lo; p+8 <= hi; p += 2 * textStride {
		if p < sc.run.judged || !full(p) {
			continue
		}
		if b, a := full(p-8), full(p+8); b && a || b && full(p-16) || a && full(p+16) {
			sc.runAt(m, buf, lo, hi, p, final, depth)
		}
	}
}

// refScan is scratch.scan with refTextMatches.
func (m *Matcher) refScan(buf []byte, from int, final bool) ([]Span, int) {
	sc := new(scratch)
	sc.reset()
	n := len(buf)
	sc.hold = n
	if !final {
		sc.hold = n - maxLeftExt
	}
	end := sc.route(buf, from, final)
	sc.end = end
	if m.fold != nil {
		sc.routeEscapes(buf, final)
	}
	if m.exact != nil {
		sc.exactMatches(m.exact, buf, from, final)
	}
	sc.binaryMatches(m, buf, from, final)
	sc.refTextMatches(m, m.fold, buf, final, 0)
	if m.fold != nil {
		for li := range sc.lanes {
			sc.laneMatches(m.fold, li, buf, end, final)
		}
	}
	spans := sc.spans
	slices.SortFunc(spans, func(a, b Span) int {
		if a.Start != b.Start {
			return a.Start - b.Start
		}
		if a.End != b.End {
			return b.End - a.End
		}
		return a.Secret - b.Secret
	})
	merged := spans[:0]
	for _, s := range spans {
		if k := len(merged) - 1; k >= 0 && s.Start < merged[k].End {
			merged[k].End = max(merged[k].End, s.End)
			continue
		}
		merged = append(merged, s)
	}
	safe := n
	if !final {
		safe = max(min(sc.hold, n), from)
		for i := len(merged) - 1; i >= 0; i-- {
			if merged[i].Start < safe && merged[i].End > safe {
				safe = merged[i].Start
			}
		}
	}
	var out []Span
	for _, s := range merged {
		if s.Start >= safe {
			break
		}
		out = append(out, s)
	}
	return out, safe
}

// diffText is text where the samples decide: every form of the secrets,
// base64 runs of every length around minRun (plain, of compressed or
// UTF-16 secrets, wrapped, padded, next to control bytes and DEL, which
// the word tests treat apart), hex, separators, stretches without
// symbols, planted at every phase of the sampling.
func diffText(rng *rand.Rand, secrets []string) []byte {
	const b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_"
	cases := formCases()
	pieces := []func() string{
		func() string { return cases[rng.IntN(len(cases))].out(secrets[rng.IntN(len(secrets))]) },
		func() string {
			v := secrets[rng.IntN(len(secrets))]
			s := cases[rng.IntN(len(cases))].out(v)
			a := rng.IntN(len(s) + 1)
			return s[a:min(len(s), a+rng.IntN(len(s)+1))] // a piece of a form
		},
		func() string {
			var b strings.Builder
			for range minRun - 16 + rng.IntN(40) {
				b.WriteByte(b64[rng.IntN(len(b64))])
			}
			return b.String()
		},
		func() string {
			v := secrets[rng.IntN(len(secrets))]
			var d []byte
			switch rng.IntN(3) {
			case 0:
				d = gz([]byte("export TOKEN=" + v + "\n"))
			case 1:
				d = utf16le("TOKEN="+v, rng.IntN(2) == 0)
			default:
				d = []byte("the token is " + v + " and more text")
			}
			s := base64.StdEncoding.EncodeToString(d)
			if rng.IntN(2) == 0 {
				s = wrap(s, []int{64, 76}[rng.IntN(2)])
			}
			return s
		},
		func() string { return hex.EncodeToString([]byte(secrets[rng.IntN(len(secrets))]))[:8+rng.IntN(40)] },
		func() string { return string([]byte{"\x0b\x0d\x0f\x10\x19\x7f\x00=\n "[rng.IntN(10)]}) },
		func() string { return strings.Repeat(" ", rng.IntN(45)) },
		func() string { return strings.Repeat("-", rng.IntN(50)) },
		func() string { return "ok  \tgithub.com/acme/widget\t0.1s\n" },
		func() string { return "/home/runner/work/app/app/crates/worker_pool" },
		func() string {
			return "#8 sha256:69ba9cc295b370c6fdc71672aa407722e9d2ab73be8f3687298fba88d23c591a 19.86MB\n"
		},
		func() string { return "00000010: 656e 5661 6c75 6530  enValue0\n" },
		func() string { return fmt.Sprintf("%d.%d ", rng.IntN(100), rng.IntN(100)) },
		func() string { return string(rune('a' + rng.IntN(26))) },
		func() string {
			// The shortest matches: minLane symbols of a value, spread
			// out, after a stretch of separators.
			v := secrets[rng.IntN(len(secrets))]
			a := rng.IntN(len(v) - minLane + 1)
			var b strings.Builder
			b.WriteString(strings.Repeat(" ", rng.IntN(2*textStride)))
			for i, c := range []byte(v[a:min(len(v), a+minLane+rng.IntN(2))]) {
				if i > 0 && rng.IntN(3) == 0 {
					b.WriteString(strings.Repeat(" ", 1+rng.IntN(6)))
				}
				b.WriteByte(c)
			}
			b.WriteString(strings.Repeat(" ", rng.IntN(maxGap+2)))
			return b.String()
		},
	}
	var b strings.Builder
	b.WriteString(strings.Repeat("x", rng.IntN(2*textStride))) // the phase
	for range 1 + rng.IntN(24) {
		b.WriteString(pieces[rng.IntN(len(pieces))]())
	}
	return []byte(b.String())
}

// TestSamplingAsReference: textMatches finds what the reference finds,
// and holds back what it holds back, on text full of what the samples
// decide on, at every phase, whole and with the scan cut at every
// context offset and end (where Feed's writes fall).
func TestSamplingAsReference(t *testing.T) {
	t.Parallel()
	secrets := []string{tok, tok2, "Zx9q8w7e6r5t4y3u2i1o0pLkJhGf", "9f8e7d6c5b4a39281706f5e4d3c2b1a0"}
	var ss []Secret
	for i, v := range secrets {
		ss = append(ss, Secret{ID: fmt.Sprint(i), Value: v})
	}
	m := NewMatcher(ss)
	rng := rand.New(rand.NewPCG(3, 4))
	n := 3000
	if testing.Short() {
		n = 300
	}
	found := 0
	for i := range n {
		text := diffText(rng, secrets)
		check := func(buf []byte, from int, final bool) {
			t.Helper()
			want, wsafe := m.refScan(buf, from, final)
			got, gsafe := m.Scan(buf, from, final, nil)
			if !slices.Equal(got, want) || gsafe != wsafe {
				t.Fatalf("case %d, from %d, final %v, %q:\ngot  %v safe %d\nwant %v safe %d", i, from, final, buf, got, gsafe, want, wsafe)
			}
			found += len(got)
		}
		check(text, 0, true)
		for range 4 {
			end := rng.IntN(len(text) + 1)
			from := ContextStart(text, rng.IntN(end+1))
			from += rng.IntN(end - from + 1)
			check(text[:end], from, false)
			check(text[:end], from, true)
		}
	}
	if found < n {
		t.Fatalf("only %d matches in %d cases: the text does not hold the forms", found, n)
	}
}

// TestRunsEveryPhase: a base64 run of a compressed or UTF-16 secret is
// decoded wherever the samples fall in it and whatever stands next to
// it, control bytes and DEL included.
func TestRunsEveryPhase(t *testing.T) {
	t.Parallel()
	m := NewMatcher([]Secret{{ID: "gh", Value: tok}})
	runs := []string{
		base64.StdEncoding.EncodeToString(gz([]byte("export GH=" + tok + "\n"))),
		base64.StdEncoding.EncodeToString(utf16le("GH="+tok, false)),
	}
	for _, run := range runs {
		for _, next := range []string{" ", "\n", "\x10", "\x0b", "\x7f", "\x00", "."} {
			for k := range 3 * textStride {
				text := []byte(strings.Repeat("ab", k)[:k] + next + run + next + "done\n")
				spans, _ := m.Scan(text, 0, true, nil)
				if len(spans) != 1 || spans[0].Start > k+1 || spans[0].End < k+1+len(run) {
					t.Fatalf("%q before, phase %d: %v in %q", next, k, spans, text)
				}
			}
		}
	}
}

// TestFourSymbolsNear: fourSymbolsNear is fourSymbols with the first of
// the four in the sample's own textStride bytes, on text of sparse
// symbols and gaps about maxGap.
func TestFourSymbolsNear(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	for range 200000 {
		b := make([]byte, rng.IntN(120))
		for i := range b {
			b[i] = " .-\n\x00"[rng.IntN(5)]
			if rng.IntN(8+rng.IntN(40)) == 0 {
				b[i] = "aZ9"[rng.IntN(3)]
			}
		}
		p := rng.IntN(len(b) + 1)
		hi := p + rng.IntN(len(b)-p+1)
		var got, want [4]int
		ok := fourSymbolsNear(b, p, hi, &got)
		wok := fourSymbols(b, p, hi, &want) && want[0] < p+textStride
		if ok != wok || ok && got != want {
			t.Fatalf("%q from %d to %d: %v %v, want %v %v", b, p, hi, ok, got, wok, want)
		}
	}
}

// TestRunExtent: runAt reads the run that holds a sample word by word to
// the same bounds as byte by byte, next to every kind of byte.
func TestRunExtent(t *testing.T) {
	t.Parallel()
	m := NewMatcher([]Secret{{ID: "gh", Value: tok}})
	rng := rand.New(rand.NewPCG(9, 10))
	const chars = "aZ9+/-_=\x0b\x0d\x0f\x10\x19\x7f\x80 .\n"
	for range 100000 {
		b := make([]byte, 8+rng.IntN(100))
		for i := range b {
			b[i] = 'A'
			if rng.IntN(6) == 0 {
				b[i] = chars[rng.IntN(len(chars))]
			}
		}
		lo := rng.IntN(len(b) - 7)
		hi := lo + 8 + rng.IntN(len(b)-lo-7)
		p := lo + rng.IntN(hi-lo-7)
		sc := new(scratch)
		sc.run = runState{judged: -1, start: -1}
		sc.hold = len(b)
		sc.runAt(m, b, lo, hi, p, true, 0)
		if runMask(binary.LittleEndian.Uint64(b[p:])) != high {
			if sc.run.judged != -1 {
				t.Fatalf("%q, %d in [%d, %d): judged %+v, not a run word", b, p, lo, hi, sc.run)
			}
			continue
		}
		start, stop := p, p+8
		for start > lo && class[b[start-1]]&clRun != 0 {
			start--
		}
		for stop < hi && class[b[stop]]&clRun != 0 {
			stop++
		}
		if sc.run.start != start || sc.run.judged != stop {
			t.Fatalf("%q, %d in [%d, %d): run %+v, want [%d, %d)", b, p, lo, hi, sc.run, start, stop)
		}
	}
}

// FuzzSamplingAsReference: TestSamplingAsReference on any text, cut
// anywhere.
func FuzzSamplingAsReference(f *testing.F) {
	rng := rand.New(rand.NewPCG(11, 12))
	for range 8 {
		f.Add(diffText(rng, []string{tok, tok2}), uint16(0), uint16(0xffff))
	}
	f.Add([]byte("u=https://x/?t="+escapeSome(tok, "%%%02x", "%%%02X")+"&y="+escapeSome(tok2, "&#%d;", "&#x%x;")+" %4"), uint16(20), uint16(0xffff))
	m := NewMatcher([]Secret{{ID: "gh", Value: tok}, {ID: "slack", Value: tok2}})
	f.Fuzz(func(t *testing.T, text []byte, from, end uint16) {
		text = text[:min(len(text), int(end))]
		for _, final := range []bool{false, true} {
			fr := ContextStart(text, min(int(from), len(text)))
			fr += min(int(from)%(MaxContext+1), len(text)-fr)
			want, wsafe := m.refScan(text, fr, final)
			got, gsafe := m.Scan(text, fr, final, nil)
			if !slices.Equal(got, want) || gsafe != wsafe {
				t.Fatalf("from %d, final %v, %q:\ngot  %v safe %d\nwant %v safe %d", fr, final, text, got, gsafe, want, wsafe)
			}
		}
	})
}
