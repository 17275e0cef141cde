package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// ErrClosed is returned by Write after Close.
var ErrClosed = errors.New("audit writer is closed")

// Writer appends events to a JSON Lines file, one event per line, each
// followed by fsync. It is safe for concurrent use.
//
// A Write error means the event may not be on disk. Write returns it and
// does not retry: the caller decides, and the gateway refuses to run a
// command it cannot audit — every call leaves its event or does not happen.
// Errors counts every failed Write for the metrics endpoint.
//
// Each line is one write(2) on a file opened O_APPEND, so lines from
// several processes appending to the same file (the serving gateway and a
// one-off `mitrity-gateway exec`) do not interleave on a local filesystem.
type Writer struct {
	path   string
	errors atomic.Uint64

	mu     sync.Mutex
	f      *os.File
	torn   bool // the last write may have left a partial line
	closed bool
}

// OpenWriter opens (creating if needed) the audit file at path, mode 0600,
// creating its parent directory with mode 0700 when it does not exist. An
// existing file or directory keeps its mode: the operator may have chosen
// a group-readable trail on purpose.
func OpenWriter(path string) (*Writer, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("audit log directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = errors.New("not a regular file")
		}
		return nil, fmt.Errorf("audit log %s: %w", path, err)
	}
	// Make the file's directory entry durable too, so a crash right after
	// the first event cannot lose the file that holds it.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // best effort: some filesystems refuse fsync on a directory
		d.Close()
	}
	return &Writer{path: path, f: f}, nil
}

// Path is the file the writer appends to.
func (w *Writer) Path() string { return w.path }

// Write validates ev, appends it as one line and fsyncs the file.
func (w *Writer) Write(ev *Event) error {
	if err := w.write(ev); err != nil {
		w.errors.Add(1)
		return err
	}
	return nil
}

func (w *Writer) write(ev *Event) error {
	if ev == nil {
		return fmt.Errorf("%w: nil event", ErrInvalidEvent)
	}
	if err := ev.Validate(); err != nil {
		return err
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("audit event %s: %w", ev.ID, err)
	}
	line := make([]byte, 0, len(b)+2)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	if w.torn {
		// Start on a fresh line so a partial earlier line costs only itself.
		line = append(line, '\n')
	}
	line = append(append(line, b...), '\n')
	n, err := w.f.Write(line)
	if err != nil {
		w.torn = n > 0 || w.torn
		return fmt.Errorf("audit log %s: write event %s: %w", w.path, ev.ID, err)
	}
	w.torn = false
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("audit log %s: flush event %s: %w", w.path, ev.ID, err)
	}
	return nil
}

// Errors is the number of Writes that failed since the writer was opened.
func (w *Writer) Errors() uint64 { return w.errors.Load() }

// Close flushes and closes the file. Later Writes return ErrClosed.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	serr := w.f.Sync()
	cerr := w.f.Close()
	return errors.Join(serr, cerr)
}
