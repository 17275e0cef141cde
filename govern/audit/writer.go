package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
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
//
// The file is the one at the path, not the one first opened: before each
// write the writer checks that the path still names the file it holds
// (one stat(2) beside the fsync), and when it names another (rotated:
// renamed away, a new one or none in its place) or none (deleted), it
// opens the path afresh, so no event goes to a file nobody will read.
// Reopen does the same on demand (SIGHUP after logrotate).
type Writer struct {
	path string
	// follow: the path was a symbolic link at the first open (the
	// operator's), so every open follows it; otherwise none does, and a
	// link planted there later fails the writes instead of sending the
	// events (and the O_CREATE) wherever it points.
	follow  bool
	errors  atomic.Uint64
	reopens [numReopenCauses]atomic.Uint64
	// OnReopen, when set before the first Write, is told of each reopen
	// (its cause, and the error when the new file could not be opened).
	OnReopen func(cause ReopenCause, err error)

	mu   sync.Mutex
	f    *os.File
	dev  uint64 // the open file's device and inode
	ino  uint64
	torn bool // the last write may have left a partial line
	// reservedTo is where the room Reserve last set aside in f ends;
	// held is what the rooms not yet written or released take of it, and
	// heldRooms how many they are.
	reservedTo int64
	held       int64
	heldRooms  int
	closed     bool

	// Append's flusher: pending says lines were appended since the last
	// fsync; kick wakes the flusher; syncing counts fsyncs in flight
	// outside mu (a reopen waits for them before closing the file);
	// flushErr is the last background fsync's failure, sticky until one
	// succeeds: Reserve and Append refuse while it is set.
	pending  bool
	kick     chan struct{}
	syncing  sync.WaitGroup
	flushErr error
}

// ReopenCause is why the writer opened its path again.
type ReopenCause int

const (
	// ReopenRequested: Reopen was called (SIGHUP).
	ReopenRequested ReopenCause = iota
	// ReopenReplaced: the path names another file (rotated by rename).
	ReopenReplaced
	// ReopenMissing: the path names no file (deleted, or renamed away by
	// a rotation that leaves the new file to the writer).
	ReopenMissing
	numReopenCauses
)

func (c ReopenCause) String() string {
	switch c {
	case ReopenRequested:
		return "requested"
	case ReopenReplaced:
		return "replaced"
	case ReopenMissing:
		return "missing"
	}
	return fmt.Sprintf("ReopenCause(%d)", int(c))
}

// OpenWriter opens (creating if needed) the audit file at path, mode 0600,
// creating its parent directory with mode 0700 when it does not exist. An
// existing file or directory keeps its mode: the operator may have chosen
// a group-readable trail on purpose.
func OpenWriter(path string) (*Writer, error) {
	w := &Writer{path: path}
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		w.follow = true
	}
	if err := w.open(); err != nil {
		return nil, err
	}
	return w, nil
}

// open opens the path (creating the file, and its directory, if needed)
// and makes it the file written to.
func (w *Writer) open() error {
	dir := filepath.Dir(w.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("audit log directory: %w", err)
	}
	// O_NONBLOCK: a FIFO put at the path would otherwise hold the open
	// until someone reads it, and with it the writer and every call
	// waiting to be recorded; it fails at once (ENXIO), or opens and is
	// refused below as not a regular file. On a regular file it changes
	// nothing.
	flags := os.O_WRONLY | os.O_APPEND | os.O_CREATE | syscall.O_NONBLOCK
	if !w.follow {
		flags |= syscall.O_NOFOLLOW
	}
	f, err := os.OpenFile(w.path, flags, 0o600)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = errors.New("not a regular file")
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("audit log %s: %w", w.path, err)
	}
	// Make the file's directory entry durable too, so a crash right after
	// the first event cannot lose the file that holds it.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // best effort: some filesystems refuse fsync on a directory
		d.Close()
	}
	if w.f != nil {
		w.syncing.Wait()
		if w.pending {
			// Appended lines reach the disk before the file is let go.
			if err := w.f.Sync(); err != nil {
				w.flushErr = err
			}
			w.pending = false
		}
		w.f.Close()
	}
	w.f, w.torn = f, false
	w.dev, w.ino = fileID(fi)
	w.reserveHeld()
	return nil
}

func fileID(fi os.FileInfo) (dev, ino uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev), st.Ino
	}
	return 0, 0
}

// current makes sure the file written to is the one at the path.
func (w *Writer) current() error {
	fi, err := os.Stat(w.path)
	var cause ReopenCause
	switch {
	case errors.Is(err, os.ErrNotExist):
		cause = ReopenMissing
	case err != nil:
		return fmt.Errorf("audit log %s: %w", w.path, err)
	default:
		if dev, ino := fileID(fi); dev == w.dev && ino == w.ino {
			return nil
		}
		cause = ReopenReplaced
	}
	return w.reopen(cause)
}

func (w *Writer) reopen(cause ReopenCause) error {
	err := w.open()
	w.reopens[cause].Add(1)
	if w.OnReopen != nil {
		w.OnReopen(cause, err)
	}
	return err
}

// Reopen opens the path afresh: after logrotate has renamed the file, the
// next event starts the new one. An error leaves the writer failing every
// Write until a reopen succeeds.
func (w *Writer) Reopen() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	return w.reopen(ReopenRequested)
}

// Reopens is how many times the path was opened again for cause.
func (w *Writer) Reopens(cause ReopenCause) uint64 {
	if cause < 0 || cause >= numReopenCauses {
		return 0
	}
	return w.reopens[cause].Load()
}

// Path is the file the writer appends to.
func (w *Writer) Path() string { return w.path }

// Write validates ev, appends it as one line and fsyncs the file.
func (w *Writer) Write(ev *Event) error {
	if err := w.write(ev, true, nil); err != nil {
		w.errors.Add(1)
		return err
	}
	return nil
}

// Append validates ev and appends it as one line, as Write does, but
// leaves the fsync to a flusher that runs within groupCommit and covers
// every line appended meanwhile: when Append returns the line is in the
// kernel (a gateway that is killed loses nothing), and on the disk a few
// milliseconds later (a host that crashes in between can lose it). It is
// for the one event of a call that has already happened (a forwarded
// upstream request), written into the room Reserve set aside for it
// (room; nil: none). The room is used up either way. A failed background
// fsync is returned by the next Append and Reserve, and counted.
func (w *Writer) Append(ev *Event, room *Room) error {
	if err := w.write(ev, false, room); err != nil {
		w.errors.Add(1)
		return err
	}
	return nil
}

// Room is the room Reserve set aside for one event: the Writer counts it
// as taken until the event is appended into it (Append) or it is
// released.
type Room struct {
	w    *Writer
	n    int64
	done bool // under w.mu
}

// Release gives the room back (its call ended without an event, or the
// event was written). It is safe on nil and more than once.
func (r *Room) Release() {
	if r == nil || r.w == nil {
		return
	}
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	r.release()
}

func (r *Room) release() {
	if r.done {
		return
	}
	r.done = true
	r.w.held -= r.n
	r.w.heldRooms--
}

// Held is the room the rooms not yet used take, and how many they are.
func (w *Writer) Held() (bytes int64, rooms int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.held, w.heldRooms
}

func (w *Writer) rooms() int { return w.heldRooms }

// groupCommit is how long the flusher waits after the first line it is
// woken for, so that one fsync covers the lines appended meanwhile: at a
// call a millisecond, an fsync per line was a tenth of the gateway's CPU.
const groupCommit = 5 * time.Millisecond

// flush fsyncs what Append left pending, outside the lock, until Close.
func (w *Writer) flush() {
	for range w.kick {
		time.Sleep(groupCommit)
		w.mu.Lock()
		if !w.pending || w.closed {
			w.mu.Unlock()
			continue
		}
		f := w.f
		w.pending = false
		w.syncing.Add(1)
		w.mu.Unlock()
		err := f.Sync()
		w.syncing.Done()
		w.mu.Lock()
		if err != nil {
			w.flushErr = fmt.Errorf("audit log %s: flushing appended events: %w", w.path, err)
			w.errors.Add(1)
		} else if !w.pending {
			w.flushErr = nil
		}
		w.mu.Unlock()
	}
}

func (w *Writer) write(ev *Event, sync bool, room *Room) error {
	if room != nil && room.w == w {
		// Used up whatever happens: the event goes into its room, and a
		// write that fails leaves the call with no event to write.
		defer room.Release()
	}
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
	if err := w.current(); err != nil {
		return fmt.Errorf("audit log %s: event %s: %w", w.path, ev.ID, err)
	}
	if w.torn {
		// Start on a fresh line so a partial earlier line costs only itself.
		line = append(line, '\n')
	}
	line = append(append(line, b...), '\n')
	if room != nil && room.w == w {
		room.release()
	}
	if err := w.guard(int64(len(line))); err != nil {
		return fmt.Errorf("audit log %s: event %s: %w", w.path, ev.ID, err)
	}
	n, err := w.f.Write(line)
	if err != nil {
		w.torn = (n > 0 && !w.untear(n)) || w.torn
		return fmt.Errorf("audit log %s: write event %s: %w", w.path, ev.ID, err)
	}
	w.torn = false
	if !sync {
		if w.flushErr != nil {
			return w.flushErr
		}
		w.pending = true
		if w.kick == nil {
			w.kick = make(chan struct{}, 1)
			go w.flush()
		}
		select {
		case w.kick <- struct{}{}:
		default: // a flush is already due: it covers this line
		}
		return nil
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("audit log %s: flush event %s: %w", w.path, ev.ID, err)
	}
	w.pending = false
	return nil
}

// untear takes back the n bytes a short write left (a full disk accepts
// part of a line): the file is cut to where the line began, when nothing
// was appended after it since. Then no reader, and no other process
// appending next, ever meets a partial line. It reports whether it did.
func (w *Writer) untear(n int) bool {
	end, err := w.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return false
	}
	fi, err := w.f.Stat()
	if err != nil || fi.Size() != end {
		return false // another writer appended after us: leave it whole
	}
	return w.f.Truncate(end-int64(n)) == nil
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
	if w.kick != nil {
		close(w.kick)
	}
	w.syncing.Wait()
	serr := w.f.Sync()
	cerr := w.f.Close()
	return errors.Join(serr, cerr, w.flushErr)
}
