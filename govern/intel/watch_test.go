package intel

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// logBuffer is a zerolog sink the poller and the test can share.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

const (
	feedV1 = "hosts:\n  - host: one.example\n"
	feedV2 = "hosts:\n  - host: two.example\n"
	tick   = 10 * time.Millisecond
)

// eventually polls cond until it holds or the deadline passes: no sleep
// longer than one poll interval.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(tick)
	}
}

// replaceFile puts content at path in one step (write beside, rename over),
// so the poller sees the old bytes or the new, never an empty file.
func replaceFile(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	assert.NilError(t, os.WriteFile(tmp, []byte(content), 0o600))
	assert.NilError(t, os.Rename(tmp, path))
}

func hasHost(w *Watcher, h string) bool {
	return len(w.Current().Check("", []string{h}, nil)) == 1
}

func newTestWatcher(t *testing.T, content string) (*Watcher, string, *logBuffer) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "feed.yaml")
	assert.NilError(t, os.WriteFile(path, []byte(content), 0o600))
	logs := &logBuffer{}
	w, err := NewWatcher(path, tick, zerolog.New(logs))
	assert.NilError(t, err)
	t.Cleanup(func() { w.Close() })
	return w, path, logs
}

func TestWatcherReloads(t *testing.T) {
	t.Parallel()
	w, path, logs := newTestWatcher(t, feedV1)
	assert.Assert(t, hasHost(w, "one.example"))
	first := w.Current()

	assert.NilError(t, os.WriteFile(path, []byte(feedV2), 0o600))
	eventually(t, "the new feed", func() bool { return hasHost(w, "two.example") })
	assert.Assert(t, !hasHost(w, "one.example"))
	assert.Assert(t, w.Current() != first)
	// The poller swaps the feed in, then logs: wait for the line, don't race it.
	eventually(t, "the reload's log line", func() bool {
		return strings.Contains(logs.String(), `"message":"threat intel feed reloaded"`)
	})
}

// TestWatcherKeepsPreviousFeed: a broken file is logged once and the feed
// in force stays; fixing the file loads it.
func TestWatcherKeepsPreviousFeed(t *testing.T) {
	t.Parallel()
	w, path, logs := newTestWatcher(t, feedV1)
	// Renamed into place: os.WriteFile truncates first, and a poll between
	// the truncate and the write loads the empty file, a valid feed of
	// nothing, which would then be the "previous feed" kept.
	replaceFile(t, path, "hosts:\n  - host: https://bad.example/\n")
	eventually(t, "the reload error", func() bool { return strings.Contains(logs.String(), "reload failed") })
	assert.Assert(t, hasHost(w, "one.example"), "the previous feed must stay in force")
	assert.Check(t, is.Contains(logs.String(), `hosts[0].host: \"https://bad.example/\": write the host alone, without a scheme`))

	// Several more polls of the same broken file log nothing more.
	assert.Check(t, w.Refresh() != nil)
	assert.Check(t, w.Refresh() != nil)
	assert.Equal(t, strings.Count(logs.String(), "reload failed"), 1)

	assert.NilError(t, os.WriteFile(path, []byte(feedV2), 0o600))
	eventually(t, "the fixed feed", func() bool { return hasHost(w, "two.example") })
}

func TestWatcherSurvivesRemoval(t *testing.T) {
	t.Parallel()
	w, path, logs := newTestWatcher(t, feedV1)
	assert.NilError(t, os.Remove(path))
	eventually(t, "the stat error", func() bool { return strings.Contains(logs.String(), "reload failed") })
	assert.Assert(t, hasHost(w, "one.example"))

	// An atomic replace (write elsewhere, rename over) is picked up.
	tmp := path + ".tmp"
	assert.NilError(t, os.WriteFile(tmp, []byte(feedV2), 0o600))
	assert.NilError(t, os.Rename(tmp, path))
	eventually(t, "the replaced feed", func() bool { return hasHost(w, "two.example") })
}

// TestWatcherSameSizeSameMtime: an edit that keeps the size and, within
// the file system's granularity, the mtime is still seen (by hash).
func TestWatcherSameSizeSameMtime(t *testing.T) {
	t.Parallel()
	w, path, _ := newTestWatcher(t, feedV1)
	info, err := os.Stat(path)
	assert.NilError(t, err)
	assert.Equal(t, len(feedV1), len(feedV2))
	assert.NilError(t, os.WriteFile(path, []byte(feedV2), 0o600))
	assert.NilError(t, os.Chtimes(path, info.ModTime(), info.ModTime()))
	eventually(t, "the same-size edit", func() bool { return hasHost(w, "two.example") })
}

func TestWatcherRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := NewWatcher(filepath.Join(dir, "missing.yaml"), tick, zerolog.Nop())
	assert.Assert(t, os.IsNotExist(errorsUnwrapAll(err)), "%v", err)
	bad := filepath.Join(dir, "bad.yaml")
	assert.NilError(t, os.WriteFile(bad, []byte("sha256:\n  - sha256: nope\n"), 0o600))
	_, err = NewWatcher(bad, tick, zerolog.Nop())
	assert.ErrorContains(t, err, "bad.yaml:2:13: sha256[0].sha256")
}

// TestWatcherConcurrentReads runs readers against reloads; with -race it
// proves the swap is safe.
func TestWatcherConcurrentReads(t *testing.T) {
	t.Parallel()
	w, path, _ := newTestWatcher(t, feedV1)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
					f := w.Current()
					assert.Check(t, f != nil)
					f.Check("curl x", []string{"one.example", "two.example"}, nil)
				}
			}
		}()
	}
	for i := range 20 {
		content := feedV1
		if i%2 == 0 {
			content = feedV2
		}
		assert.NilError(t, os.WriteFile(path, []byte(content), 0o600))
		assert.NilError(t, w.Refresh())
	}
	close(stop)
	wg.Wait()
	assert.NilError(t, w.Close())
	assert.NilError(t, w.Close(), "Close is idempotent")
}

func errorsUnwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok || u.Unwrap() == nil {
			return err
		}
		err = u.Unwrap()
	}
}
