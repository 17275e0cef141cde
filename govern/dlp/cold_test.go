package dlp

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"
)

// childEnv makes the test binary run one cold-start scenario (coldChild)
// instead of the tests: the catalog and every detector are compiled once
// per process, so only a fresh process shows what the first Bind costs.
const childEnv = "DLP_TEST_COLD_CHILD"

func TestMain(m *testing.M) {
	if s := os.Getenv(childEnv); s != "" {
		os.Exit(coldChild(s))
	}
	os.Exit(m.Run())
}

// coldReport is what a child prints.
type coldReport struct {
	BindNanos     int64 // the first Bind(all)
	AfterBind     int64 // detectors compiled by Bind and the name lists
	AfterKeyword  int64 // ... and by a line with one detector's keyword
	AfterSecrets  int64 // ... and by a line of every sample secret
	Redacted      string
	ConcurrentErr string
}

func coldChild(scenario string) int {
	var r coldReport
	start := time.Now()
	b, err := Bind([]string{"all"})
	r.BindNanos = time.Since(start).Nanoseconds()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	switch scenario {
	case "bind":
		DetectorNames()
		BindingNames()
		r.AfterBind = compiles.Load()
		b.Redact("ok  \tgithub.com/acme/widget\t0.013s\n")
		b.Redact("=== RUN TestNpm_Install\n") // npm_ alone
		r.AfterKeyword = compiles.Load()
		r.Redacted, _ = b.Redact("x " + detectorSamples()[1])
		r.AfterSecrets = compiles.Load()
	case "concurrent":
		// Many streams meet each detector for the first time at once.
		lines := detectorSamples()
		var wg sync.WaitGroup
		got := make([][]string, 8)
		for g := range got {
			wg.Go(func() {
				for _, l := range lines {
					out, _ := b.Redact(l)
					got[g] = append(got[g], out)
				}
			})
		}
		wg.Wait()
		for g := range got {
			for i, l := range lines {
				if want, _ := b.Redact(l); got[g][i] != want {
					r.ConcurrentErr = fmt.Sprintf("goroutine %d: %q: got %q, want %q", g, l, got[g][i], want)
				}
			}
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(r); err != nil {
		return 1
	}
	return 0
}

func runChild(t testing.TB, scenario string) coldReport {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"="+scenario)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	assert.NilError(t, err)
	var r coldReport
	assert.NilError(t, json.Unmarshal(out, &r))
	return r
}

// TestColdBind: in a fresh process, Bind and the name lists compile no
// detector; a line compiles only the detectors whose keywords it holds.
func TestColdBind(t *testing.T) {
	t.Parallel()
	r := runChild(t, "bind")
	t.Logf("cold Bind(all): %v; compiled %d, %d, %d", time.Duration(r.BindNanos), r.AfterBind, r.AfterKeyword, r.AfterSecrets)
	assert.Equal(t, r.AfterBind, int64(0), "Bind compiled detectors")
	// npm_: the built-in npm_token and gitleaks' npm-access-token.
	assert.Equal(t, r.AfterKeyword, int64(2))
	assert.Check(t, r.AfterSecrets < 30, "%d detectors compiled for one line", r.AfterSecrets)
	assert.Equal(t, r.Redacted, "x git remote set-url origin https://x-access-token:[REDACTED:dlp:github_token]@github.com/acme/widget")
}

// TestColdConcurrent: streams that meet detectors for the first time at
// once compile each once and agree (run with -race).
func TestColdConcurrent(t *testing.T) {
	t.Parallel()
	r := runChild(t, "concurrent")
	assert.Equal(t, r.ConcurrentErr, "")
}

// BenchmarkColdBind: a fresh process's first Bind(all), as every one-shot
// exec pays it. ns/op is the whole child process; bind-ns is the Bind.
func BenchmarkColdBind(b *testing.B) {
	var total int64
	n := 0
	for b.Loop() {
		total += runChild(b, "bind").BindNanos
		n++
	}
	b.ReportMetric(float64(total)/float64(n), "bind-ns/op")
}
