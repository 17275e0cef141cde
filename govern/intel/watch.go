package intel

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// DefaultInterval is how often a Watcher polls when given no interval.
const DefaultInterval = 5 * time.Second

// Watcher keeps the current feed of one file, reloading it when the file
// changes. Polling (stat, then hash when the stat says so) needs no inotify
// and works the same for an edit in place, an atomic rename and a
// ConfigMap's symlink swap. A file that fails to load keeps the previous
// feed in force: a typo in the feed must not switch threat intel off.
type Watcher struct {
	path     string
	interval time.Duration
	log      zerolog.Logger
	cur      atomic.Pointer[Feed]

	mu       sync.Mutex // serialises checks (the poller and Refresh)
	info     os.FileInfo
	sum      [32]byte // of the bytes last read
	parseErr error    // why those bytes are not in force; nil when they are
	logged   string   // the failure last logged, so each is logged once, not per tick

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// NewWatcher loads the feed at path (an error here refuses to start: there
// is no previous feed to keep) and polls it every interval until Close.
func NewWatcher(path string, interval time.Duration, logger zerolog.Logger) (*Watcher, error) {
	if interval <= 0 {
		interval = DefaultInterval
	}
	w := &Watcher{path: path, interval: interval, log: logger, stop: make(chan struct{}), done: make(chan struct{})}
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("threat intel feed: %w", err)
	}
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	f, err := parse(path, data)
	if err != nil {
		return nil, err
	}
	w.info, w.sum = info, sha256.Sum256(data)
	w.cur.Store(f)
	hosts, hashes, patterns := f.Counts()
	w.log.Info().Str("feed", path).Str("sha256", f.SHA256).Int("hosts", hosts).Int("hashes", hashes).
		Int("patterns", patterns).Msg("threat intel feed loaded")
	go w.run()
	return w, nil
}

// Current is the feed in force. It is never nil for a Watcher that
// NewWatcher returned.
func (w *Watcher) Current() *Feed { return w.cur.Load() }

// Check is Current().Check: the feed in force at the time of the call.
func (w *Watcher) Check(text string, hosts, hashes []string) []Hit {
	return w.Current().Check(text, hosts, hashes)
}

// Match is Current().Match, so a Watcher can be handed to the pipeline as
// its threat-intel source and every call sees the latest feed.
func (w *Watcher) Match(text string, hosts, hashes []string) []string {
	return w.Current().Match(text, hosts, hashes)
}

// Close stops polling. The last feed stays readable.
func (w *Watcher) Close() error {
	w.closeOnce.Do(func() { close(w.stop) })
	<-w.done
	return nil
}

func (w *Watcher) run() {
	defer close(w.done)
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			_ = w.Refresh()
		}
	}
}

// Refresh checks the file now (as a SIGHUP handler would) and swaps in the
// new feed when it changed and loads. It returns why the file is not in
// force, if it is not; the previous feed then stays in force.
func (w *Watcher) Refresh() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	info, err := os.Stat(w.path)
	if err != nil {
		return w.failed(err)
	}
	// The size and mtime say whether the file changed, except within the
	// mtime's granularity of the last change, when an edit keeping the size
	// is invisible to them: then the bytes are hashed too.
	racy := time.Since(info.ModTime()) < 2*w.interval+time.Second
	if !racy && os.SameFile(info, w.info) && info.Size() == w.info.Size() && info.ModTime().Equal(w.info.ModTime()) {
		return w.settled()
	}
	data, err := readFile(w.path)
	if err != nil {
		return w.failed(err)
	}
	sum := sha256.Sum256(data)
	if bytes.Equal(sum[:], w.sum[:]) {
		w.info = info
		return w.settled()
	}
	w.info, w.sum = info, sum
	f, err := parse(w.path, data)
	if err != nil {
		// Remember the bytes, so a broken file is parsed and reported once
		// and reloaded as soon as it changes again.
		w.parseErr = err
		return w.failed(err)
	}
	w.parseErr, w.logged = nil, ""
	w.cur.Store(f)
	hosts, hashes, patterns := f.Counts()
	w.log.Info().Str("feed", w.path).Str("sha256", f.SHA256).Int("hosts", hosts).Int("hashes", hashes).
		Int("patterns", patterns).Msg("threat intel feed reloaded")
	return nil
}

// settled: the file holds the bytes last read. If they failed to parse,
// that is still the answer; if an earlier stat or read failed, the file is
// back.
func (w *Watcher) settled() error {
	if w.parseErr != nil {
		return w.parseErr
	}
	if w.logged != "" {
		w.logged = ""
		w.log.Info().Str("feed", w.path).Msg("threat intel feed is readable again; the feed in force is unchanged")
	}
	return nil
}

func (w *Watcher) failed(err error) error {
	if msg := err.Error(); msg != w.logged {
		w.logged = msg
		w.log.Error().Err(err).Str("feed", w.path).Str("sha256", w.cur.Load().SHA256).
			Msg("threat intel feed reload failed; keeping the previous feed")
	}
	return err
}
