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
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"gotest.tools/v3/assert"
)

// Build-log-like output: compiler invocations and warnings, test runs,
// package downloads, container build steps, stack traces; timestamps,
// paths, versions and hashes everywhere.
var (
	pkgs  = []string{"internal/store", "cmd/server", "pkg/api/v2", "internal/auth/session", "pkg/cache", "internal/billing", "tools/migrate", "pkg/tracing"}
	files = []string{"main", "handler", "store", "parser", "cache_test", "router", "config", "worker_pool", "session", "metrics"}
	words = []string{"Parse", "Handle", "Load", "Retry", "Encode", "Route", "Flush", "Migrate", "Render", "Schedule"}
	mods  = []string{"golang.org/x/sys v0.50.0", "github.com/google/go-cmp v0.7.0", "gopkg.in/yaml.v3 v3.0.1", "github.com/rs/zerolog v1.35.1", "golang.org/x/net v0.62.0"}
	npms  = []string{"inflight@1.0.6", "glob@7.2.3", "rimraf@3.0.2", "uuid@3.4.0", "querystring@0.2.0"}
	jars  = []string{"org/apache/commons/commons-lang3/3.14.0/commons-lang3-3.14.0.jar", "com/google/guava/guava/33.0.0-jre/guava-33.0.0-jre.jar", "org/slf4j/slf4j-api/2.0.9/slf4j-api-2.0.9.jar"}
	cxx   = []string{"core", "net", "util", "codec", "storage"}
)

func hexString(rng *rand.Rand, n int) string {
	b := make([]byte, (n+1)/2)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return hex.EncodeToString(b)[:n]
}

func pick(rng *rand.Rand, s []string) string { return s[rng.IntN(len(s))] }

func logLine(rng *rand.Rand, b *strings.Builder) {
	ts := fmt.Sprintf("2026-11-30T%02d:%02d:%02d.%03dZ", rng.IntN(24), rng.IntN(60), rng.IntN(60), rng.IntN(1000))
	p, f, w := pick(rng, pkgs), pick(rng, files), pick(rng, words)
	switch rng.IntN(22) {
	case 0:
		fmt.Fprintf(b, "%s [INFO] compiling github.com/acme/widget/%s (%d files)\n", ts, p, 3+rng.IntN(90))
	case 1:
		fmt.Fprintf(b, "=== RUN   Test%s%s/case_%d\n", w, strings.ToUpper(f[:1])+f[1:], rng.IntN(40))
	case 2:
		fmt.Fprintf(b, "--- PASS: Test%s (%d.%02ds)\n", w, rng.IntN(3), rng.IntN(100))
	case 3:
		fmt.Fprintf(b, "ok  \tgithub.com/acme/widget/%s\t%d.%03ds\tcoverage: %d.%d%% of statements\n", p, rng.IntN(9), rng.IntN(1000), 40+rng.IntN(60), rng.IntN(10))
	case 4:
		fmt.Fprintf(b, "gcc -O2 -g -Wall -Wextra -fPIC -I/usr/include -Iinclude -DNDEBUG -c src/%s.c -o build/obj/%s.o\n", f, f)
	case 5:
		fmt.Fprintf(b, "src/%s.c:%d:%d: warning: unused variable 'tmp%d' [-Wunused-variable]\n", f, 10+rng.IntN(900), 1+rng.IntN(60), rng.IntN(9))
	case 6:
		fmt.Fprintf(b, "npm WARN deprecated %s: This module is not supported, and leaks memory. Do not use it.\n", pick(rng, npms))
	case 7:
		fmt.Fprintf(b, "#%d [build %d/9] RUN go mod download && go build -trimpath -o /out/server ./cmd/server\n", 5+rng.IntN(20), 1+rng.IntN(9))
	case 8:
		fmt.Fprintf(b, "#%d sha256:%s %d.%02dMB / %d.%dMB %d.%ds\n", 5+rng.IntN(20), hexString(rng, 64), rng.IntN(50), rng.IntN(100), 50+rng.IntN(50), rng.IntN(10), rng.IntN(9), rng.IntN(10))
	case 9:
		fmt.Fprintf(b, " ---> Using cache\n ---> %s\n", hexString(rng, 12))
	case 10:
		fmt.Fprintf(b, "   Compiling %s v1.%d.%d (/home/runner/work/app/app/crates/%s)\n", f, rng.IntN(40), rng.IntN(300), f)
	case 11:
		fmt.Fprintf(b, "[INFO] Downloaded from central: https://repo.maven.apache.org/maven2/%s (%d kB at %d.%d MB/s)\n", pick(rng, jars), 10+rng.IntN(3000), rng.IntN(9), rng.IntN(10))
	case 12:
		fmt.Fprintf(b, "commit %s\nAuthor: CI Bot <ci@acme.example>\nDate:   Mon Nov 30 %02d:%02d:%02d 2026 +0000\n", hexString(rng, 40), rng.IntN(24), rng.IntN(60), rng.IntN(60))
	case 13:
		fmt.Fprintf(b, "tests/test_%s.py::test_%s_%d PASSED%s[%3d%%]\n", f, strings.ToLower(w), rng.IntN(30), strings.Repeat(" ", 8+rng.IntN(30)), rng.IntN(101))
	case 14:
		fmt.Fprintf(b, "make[%d]: Entering directory '/home/runner/work/app/app/build/%s'\n", 1+rng.IntN(3), pick(rng, cxx))
	case 15:
		fmt.Fprintf(b, "[%3d%%] Building CXX object src/%s/CMakeFiles/%s.dir/%s.cpp.o\n", rng.IntN(101), pick(rng, cxx), pick(rng, cxx), f)
	case 16:
		fmt.Fprintf(b, "go: downloading %s\n", pick(rng, mods))
	case 17:
		fmt.Fprintf(b, "\tat com.acme.widget.%s%s.%s(%s%s.java:%d)\n", w, "Service", strings.ToLower(w), w, "Service", 20+rng.IntN(500))
	case 18:
		fmt.Fprintf(b, "goroutine %d [running]:\n\t/home/runner/go/pkg/mod/github.com/acme/widget@v1.%d.0/%s/%s.go:%d +0x%x\n", rng.IntN(500), rng.IntN(20), p, f, 10+rng.IntN(800), rng.IntN(4096))
	case 19:
		fmt.Fprintf(b, "-rw-r--r-- 1 runner docker %7d Nov 30 %02d:%02d %s.go\n", rng.IntN(1<<20), rng.IntN(24), rng.IntN(60), f)
	case 20:
		fmt.Fprintf(b, "asset %s.%s.js %d.%d KiB [emitted] [immutable] [minimized] (name: %s)\n", f, hexString(rng, 8), rng.IntN(900), rng.IntN(10), f)
	case 21:
		fmt.Fprintf(b, "> Task :app:compile%sJava UP-TO-DATE\n", w)
	}
}

// buildLog returns at least size bytes of clean build output.
func buildLog(rng *rand.Rand, size int) []byte {
	var b strings.Builder
	b.Grow(size + 256)
	for b.Len() < size {
		logLine(rng, &b)
	}
	return []byte(b.String())
}

// detectorSamples are secrets of many kinds, as tools print them.
func detectorSamples() []string {
	return []string{
		"aws_access_key_id = AKIALALEMEL33243OLIB",
		"git remote set-url origin https://x-access-token:ghp_Zx9Yq8Wv7Ut6Sr5Qp4On3Ml2Kj1Ih0Gf9EdAb@github.com/acme/widget",
		"export SLACK_BOT_TOKEN=xoxb-263594206564-2343594206574-FGqddMF8t08v8N7Oq4i57vs1",
		"DATABASE_URL=postgres://app:s3cr3t-pw@db.internal:5432/app",
		"Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
		"-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7x5kqQ2Jm3v\nZ2lY4xX9c0bQ7aW1pL8kN3rT5uV6\n-----END RSA PRIVATE KEY-----",
		"GOOGLE_API_KEY=AIzaSyDk9x7Q2w3E4r5T6y7U8i9O0pLkJhGfDsA",
		"npm config set //registry.npmjs.org/:_authToken=npm_Zx9Yq8Wv7Ut6Sr5Qp4On3Ml2Kj1Ih0Gf9EdAb",
		"api_key = \"Zx9q8w7e6r5t4y3u2i1o0pLkJhGf\"",
		"curl -H 'Authorization: Bearer 9f8e7d6c5b4a39281706f5e4d3c2b1a0' https://api.acme.example/v1/jobs",
	}
}

// withLines inserts one of lines after every n-th line of log.
func withLines(log []byte, n int, lines func(i int) string) []byte {
	var b bytes.Buffer
	b.Grow(len(log) + len(log)/n)
	i := 0
	for len(log) > 0 {
		j := bytes.IndexByte(log, '\n') + 1
		if j == 0 {
			j = len(log)
		}
		b.Write(log[:j])
		log = log[j:]
		if i++; i%n == 0 {
			b.WriteString(lines(i / n))
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

func benchSecrets() []Secret {
	rng := rand.New(rand.NewPCG(11, 12))
	const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	var out []Secret
	for i := range 10 {
		v := make([]byte, 24+rng.IntN(24))
		for j := range v {
			v[j] = alnum[rng.IntN(len(alnum))]
		}
		out = append(out, Secret{ID: fmt.Sprintf("cred%d", i), Value: string(v)})
	}
	return out
}

// credentialForms prints a credential the ways tools do.
func credentialForms(v string) []string {
	js, _ := json.Marshal(map[string]string{"token": v})
	return []string{
		"token=" + v,
		"Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte("ci:"+v)),
		"https://x/?t=" + url.QueryEscape(v),
		string(js),
		"hex " + hex.EncodeToString([]byte(v)),
		"b64url " + base64.RawURLEncoding.EncodeToString([]byte(v)),
	}
}

const benchSize = 64 << 20

var benchData = sync.OnceValue(func() map[string][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	clean := buildLog(rng, benchSize)
	secrets := benchSecrets()
	samples := detectorSamples()
	// About one line in 2000 carries a secret: a few hundred per run.
	return map[string][]byte{
		"clean": clean,
		"credential-hits": withLines(clean, 2000, func(i int) string {
			s := secrets[i%len(secrets)].Value
			forms := credentialForms(s)
			return forms[(i/len(secrets))%len(forms)]
		}),
		"detector-hits": withLines(clean, 2000, func(i int) string { return samples[i%len(samples)] }),
	}
})

func writeChunks(w io.Writer, data []byte) {
	for off := 0; off < len(data); off += 32 << 10 {
		w.Write(data[off:min(off+32<<10, len(data))])
	}
}

// BenchmarkRedactCredentials: 64 MiB of build output through the
// credential Redactor's Stream in 32 KiB writes, with 10 injected
// credentials (about 250 forms): clean (no occurrence), and with
// occurrences in raw, Basic-auth base64, URL-encoded, JSON, hex and
// base64url forms. Target ≥ 500 MB/s.
func BenchmarkRedactCredentials(b *testing.B) {
	r, err := NewRedactor(benchSecrets())
	if err != nil {
		b.Fatal(err)
	}
	data := benchData()
	for _, name := range []string{"clean", "hits"} {
		text := data["clean"]
		if name == "hits" {
			text = data["credential-hits"]
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				s := r.Stream(io.Discard)
				writeChunks(s, text)
				s.Close()
			}
		})
	}
}

// BenchmarkDetectors: the same output through a DetectorStream with every
// detector bound, in 32 KiB writes: clean, and with a secret of some kind
// about every 2000 lines. Target ≥ 100 MB/s on clean text.
func BenchmarkDetectors(b *testing.B) {
	all := bindAll(b)
	data := benchData()
	for _, name := range []string{"clean", "hits"} {
		text := data["clean"]
		if name == "hits" {
			text = data["detector-hits"]
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				s := all.Stream(io.Discard)
				writeChunks(s, text)
				s.Close()
			}
		})
	}
}

// TestCleanBuildLog: realistic clean output gives no hit with every
// detector bound, and no credential redaction.
func TestCleanBuildLog(t *testing.T) {
	t.Parallel()
	log := buildLog(rand.New(rand.NewPCG(7, 8)), 4<<20)
	hits := bindAll(t).Scan(string(log))
	for i, h := range hits[:min(len(hits), 10)] {
		t.Errorf("hit %d: %s on %q", i, h.Detector, log[max(h.Start-40, 0):min(h.End+10, len(log))])
	}
	r, err := NewRedactor(benchSecrets())
	assert.NilError(t, err)
	out, counts := r.Redact(log)
	assert.Equal(t, len(counts), 0)
	assert.Assert(t, bytes.Equal(out, log))

	// Hand-picked near misses: hashes, digests, placeholders, public keys.
	files, err := filepath.Glob("testdata/clean/*.log")
	assert.NilError(t, err)
	assert.Assert(t, len(files) > 0)
	for _, f := range files {
		text, err := os.ReadFile(f)
		assert.NilError(t, err)
		for _, h := range bindAll(t).Scan(string(text)) {
			t.Errorf("%s: %s on %q", f, h.Detector, text[h.Start:h.End])
		}
	}
}

// TestBenchHits: the hit corpora hold what the benchmarks claim.
func TestBenchHits(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	clean := buildLog(rng, 1<<20)
	secrets := benchSecrets()
	samples := detectorSamples()
	n := 0
	creds := withLines(clean, 50, func(i int) string {
		n++
		s := secrets[i%len(secrets)].Value
		forms := credentialForms(s)
		return forms[(i/len(secrets))%len(forms)]
	})
	r, err := NewRedactor(secrets)
	assert.NilError(t, err)
	_, counts := r.Redact(creds)
	assert.Equal(t, sum(counts), n)

	n = 0
	dets := withLines(clean, 50, func(i int) string { n++; return samples[i%len(samples)] })
	out, hits := bindAll(t).Redact(string(dets))
	assert.Equal(t, len(hits), n, "one hit per sample line")
	for _, s := range samples {
		for _, frag := range []string{"AKIALALEMEL33243OLIB", "FGqddMF8t08v8N7Oq4i57vs1", "s3cr3t-pw", "MIIEpAIBAAKCAQEA7x5kqQ2Jm3v", "Zx9q8w7e6r5t4y3u2i1o0pLkJhGf"} {
			if strings.Contains(s, frag) {
				assert.Check(t, !strings.Contains(out, frag), frag)
			}
		}
	}
}
