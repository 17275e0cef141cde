package dlp

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

func bindAll(t testing.TB) Bindings {
	t.Helper()
	b, err := Bind([]string{"all"})
	assert.NilError(t, err)
	return b
}

// streamed writes text to a DetectorStream in chunks cut by cuts (each a
// length, reused cyclically) and returns the output.
func streamed(t testing.TB, b Bindings, text string, cut func() int) (string, *DetectorStream) {
	t.Helper()
	var out bytes.Buffer
	s := b.Stream(&out)
	for rest := text; rest != ""; {
		n := min(max(cut(), 1), len(rest))
		_, err := s.Write([]byte(rest[:n]))
		assert.NilError(t, err)
		rest = rest[n:]
	}
	assert.NilError(t, s.Close())
	return out.String(), s
}

// streamCorpus is output with every kind of hit in it: the fixture true
// positives, blocks that end and blocks that do not, CRLF lines, and lines
// longer than a window with secrets at the window edges.
func streamCorpus(t *testing.T) []string {
	t.Helper()
	var texts []string
	var all strings.Builder
	for _, fx := range readFixtures(t) {
		in, _, _ := unmark(fx.text, fx.label)
		texts = append(texts, in)
		all.WriteString(in)
		all.WriteString("\n")
	}
	texts = append(texts, all.String())
	tok := "ghp_" + strings.Repeat("aB3d", 9)
	pem := "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----\n"
	long := strings.Repeat("x", LineWindow-WindowOverlap-10) + " " + tok + " " + strings.Repeat("y ", LineWindow) + tok
	texts = append(texts,
		"ok\r\n"+tok+"\r\nnext "+tok+"\r",
		"before "+pem+"after "+tok+"\n",
		"head\n"+strings.Replace(pem, "-----END", "\n-----END", 1)+strings.Repeat("line\n", 10),
		"-----BEGIN PRIVATE KEY-----\n"+strings.Repeat("QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=\n", MaxBlockBytes/37+5)+"visible after the cap "+tok+"\n",
		"unterminated -----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\nno end",
		long,
		long+"\n"+tok+"\n",
		strings.Repeat("z", 3*LineWindow+17),
		string(withLines(buildLog(rand.New(rand.NewPCG(3, 4)), 256<<10), 40, func(i int) string { return detectorSamples()[i%10] })),
	)
	return texts
}

// TestStreamMatchesRedact is the stream's contract: for any split of an
// input into writes, the output equals Redact of the whole input.
func TestStreamMatchesRedact(t *testing.T) {
	t.Parallel()
	b := bindAll(t)
	rng := rand.New(rand.NewPCG(5, 6))
	for i, text := range streamCorpus(t) {
		want, hits := b.Redact(text)
		splits := map[string]func() int{
			"whole":  func() int { return len(text) },
			"bytes":  func() int { return 1 },
			"small":  func() int { return 1 + rng.IntN(13) },
			"medium": func() int { return 1 + rng.IntN(700) },
			"large":  func() int { return 1 + rng.IntN(3*LineWindow) },
		}
		if len(text) > 1<<16 {
			delete(splits, "bytes") // quadratic in test time only
		}
		for name, cut := range splits {
			got, s := streamed(t, b, text, cut)
			assert.Check(t, got == want, "text %d, %s split: stream and Redact differ\n got: %.300q\nwant: %.300q", i, name, got, want)
			assert.Check(t, s.Total() == len(hits), "text %d, %s split: total %d, Redact %d hits", i, name, s.Total(), len(hits))
			counts := map[string]int{}
			for _, h := range hits {
				counts[h.Detector]++
			}
			if len(hits) > 0 {
				assert.DeepEqual(t, s.Counts(), counts)
			}
		}
	}
}

// TestStreamEveryCut splits small texts at every point.
func TestStreamEveryCut(t *testing.T) {
	t.Parallel()
	b := bindAll(t)
	tok := "xoxb-" + "263594206564-2343594206574-FGqddMF8t08v8N7Oq4i57vs1"
	texts := []string{
		"a " + tok + " b\nc\n",
		"x\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n-----END OPENSSH PRIVATE KEY-----\ntail " + tok,
		"psql postgres://app:s3cr3t-pw@db.internal:5432/app\r\n",
	}
	for _, text := range texts {
		want, _ := b.Redact(text)
		for cut := 0; cut <= len(text); cut++ {
			var out bytes.Buffer
			s := b.Stream(&out)
			s.Write([]byte(text[:cut]))
			s.Write([]byte(text[cut:]))
			assert.NilError(t, s.Close())
			assert.Equal(t, out.String(), want, "cut at %d", cut)
		}
	}
}

// TestStreamHoldback: a complete line goes out at once; only the partial
// line, a window of a long one, or an open block is held.
func TestStreamHoldback(t *testing.T) {
	t.Parallel()
	b := bindAll(t)
	var out bytes.Buffer
	s := b.Stream(&out)
	s.Write([]byte("go build ./...\nok  \tgithub.com/x/y\t0.1s\npart"))
	assert.Equal(t, out.String(), "go build ./...\nok  \tgithub.com/x/y\t0.1s\n")
	assert.Equal(t, s.Pending(), 4)
	s.Write([]byte("ial\r"))
	assert.Equal(t, s.Pending(), 0)

	out.Reset()
	s.Write([]byte(strings.Repeat("q", 3*LineWindow)))
	assert.Check(t, s.Pending() <= LineWindow, "pending %d", s.Pending())
	assert.Check(t, out.Len() >= 2*LineWindow-2*WindowOverlap)
	s.Write([]byte("\n"))
	assert.Equal(t, s.Pending(), 0)

	out.Reset()
	s.Write([]byte("-----BEGIN PRIVATE KEY-----\nMIIE\n"))
	assert.Equal(t, out.Len(), 0)
	for range MaxBlockBytes / 8 {
		s.Write([]byte("MIIEMII\n"))
	}
	// The cap was reached: the block went out redacted, whatever follows.
	assert.Check(t, s.Pending() < LineWindow, "pending %d", s.Pending())
	assert.Equal(t, out.String()[:len("[REDACTED:dlp:private_key]")], "[REDACTED:dlp:private_key]")
	assert.NilError(t, s.Close())
	_, err := s.Write([]byte("late"))
	assert.ErrorIs(t, err, ErrStreamClosed)
}

type failWriter struct{ n int }

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n--; f.n < 0 {
		return 0, errors.New("disk full")
	}
	return len(p), nil
}

func TestStreamWriterError(t *testing.T) {
	t.Parallel()
	s := bindAll(t).Stream(&failWriter{n: 1})
	_, err := s.Write([]byte("one\n"))
	assert.NilError(t, err)
	_, err = s.Write([]byte("two\n"))
	assert.ErrorContains(t, err, "disk full")
	assert.ErrorContains(t, s.Close(), "disk full")
}

func TestZeroBindings(t *testing.T) {
	t.Parallel()
	var b Bindings
	text := "AKIAIOSFODNN7EXAMPLE partial"
	got, hits := b.Redact(text)
	assert.Equal(t, got, text)
	assert.Equal(t, len(hits), 0)
	assert.Equal(t, len(b.Scan(text)), 0)
	var out bytes.Buffer
	s := b.Stream(&out)
	s.Write([]byte(text))
	assert.Equal(t, out.String(), text) // nothing to judge, nothing held
	assert.NilError(t, s.Close())
	b, err := Bind(nil)
	assert.NilError(t, err)
	assert.Equal(t, len(b.Names()), 0)
}

// FuzzDetectorStream: stream and whole agree on any input and split.
func FuzzDetectorStream(f *testing.F) {
	f.Add([]byte("token ghp_aB3daB3daB3daB3daB3daB3daB3daB3daB3d end\n"), uint64(1))
	f.Add([]byte("-----BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----\nAKIAY34FZKBOKMUTVV7A\r\n"), uint64(2))
	f.Add([]byte("password=Zx9q8w7e6r5t4y3u2\nkey: eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"), uint64(3))
	b := bindAll(f)
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		want, hits := b.Redact(string(data))
		rng := rand.New(rand.NewPCG(seed, seed>>7))
		got, s := streamed(t, b, string(data), func() int { return 1 + rng.IntN(64) })
		if got != want || s.Total() != len(hits) {
			t.Fatalf("stream %q (%d hits), whole %q (%d hits)", got, s.Total(), want, len(hits))
		}
	})
}

// FuzzCredentialStream: the credential stream's output does not depend on
// how the input was split into writes.
func FuzzCredentialStream(f *testing.F) {
	f.Add([]byte("start "+token+" middle"), uint64(1))
	f.Add([]byte(token[:10]+token+token[5:]), uint64(2))
	r, err := NewRedactor([]Secret{{ID: "a", Value: token}, {ID: "b", Value: "second-secret-value"}, {ID: "c", Value: "12345678"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		want, wantCounts := r.Redact(data)
		rng := rand.New(rand.NewPCG(seed, 9))
		var out bytes.Buffer
		s := r.Stream(&out)
		for rest := data; len(rest) > 0; {
			n := min(1+rng.IntN(50), len(rest))
			s.Write(rest[:n])
			rest = rest[n:]
		}
		s.Close()
		if !bytes.Equal(out.Bytes(), want) || s.Total() != sum(wantCounts) {
			t.Fatalf("stream %q, whole %q", out.Bytes(), want)
		}
	})
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// TestConcurrentStreams: one Bindings (and its compiled rules and
// allowlists) serves many streams at once; run under -race.
func TestConcurrentStreams(t *testing.T) {
	t.Parallel()
	b := bindAll(t)
	text := string(withLines(buildLog(rand.New(rand.NewPCG(9, 9)), 64<<10), 20, func(i int) string { return detectorSamples()[i%10] }))
	want, _ := b.Redact(text)
	errs := make(chan string, 8)
	for i := range 8 {
		go func() {
			rng := rand.New(rand.NewPCG(uint64(i), 1))
			var out bytes.Buffer
			s := b.Stream(&out)
			for rest := text; rest != ""; {
				n := min(1+rng.IntN(4096), len(rest))
				s.Write([]byte(rest[:n]))
				rest = rest[n:]
			}
			s.Close()
			if out.String() != want {
				errs <- "stream differs"
				return
			}
			errs <- ""
		}()
	}
	for range 8 {
		assert.Check(t, <-errs == "")
	}
}
