package audit

import (
	"errors"
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// Reserve is the check before a call whose one event is written after it
// ran (a forwarded upstream call): the path still names the file held,
// the file takes writes, and n bytes past its end are allocated
// (fallocate with FALLOC_FL_KEEP_SIZE, so the size and every reader are
// unchanged), so the event written after the call finds room on a disk
// that fills meanwhile. A filesystem without fallocate only gets the
// other checks. An error means the call must not run.
//
// Every Room is its own: the rooms held (reserved, their events not yet
// written) are counted, so N calls in flight have N rooms set aside, not
// one they share, and an event written without a room (a decision, a
// definition) is refused rather than written into the rooms held when
// the disk has no more (see guard). Room is set aside reserveChunk (or
// four times n) at a time, so most calls find it already there; on a disk
// too full for that, just what the rooms held need.
func (w *Writer) Reserve(n int64) (*Room, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, ErrClosed
	}
	if w.flushErr != nil {
		return nil, w.flushErr
	}
	if err := w.current(); err != nil {
		return nil, err
	}
	if err := w.setAside(n, max(4*n, reserveChunk)); err != nil {
		return nil, fmt.Errorf("audit log %s: reserving room for the next event: %w", w.path, err)
	}
	w.held += n
	w.heldRooms++
	return &Room{w: w, n: n}, nil
}

// setAside makes sure n bytes more than the rooms held are allocated past
// the file's end: already there, or allocated now (chunk more, or on a
// disk too full for that exactly what is needed). A filesystem without
// fallocate passes.
func (w *Writer) setAside(n, chunk int64) error {
	fi, err := w.f.Stat()
	if err != nil {
		return err
	}
	need := fi.Size() + w.held + n
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && need <= w.reservedTo && st.Blocks*512 >= need {
		// Within what an earlier Reserve set aside, and its blocks are
		// still there (a truncation, by copytruncate say, frees them;
		// the blocks alone are not enough: XFS counts speculative
		// preallocation it takes back when the disk fills).
		return nil
	}
	length := max(chunk, w.held+n)
	err = unix.Fallocate(int(w.f.Fd()), unix.FALLOC_FL_KEEP_SIZE, fi.Size(), length)
	if (errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT)) && length > w.held+n {
		// Nearly full: what the rooms need may still fit.
		length = w.held + n
		err = unix.Fallocate(int(w.f.Fd()), unix.FALLOC_FL_KEEP_SIZE, fi.Size(), length)
	}
	switch {
	case err == nil:
		w.reservedTo = fi.Size() + length
	case errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENOSYS):
	default:
		return err
	}
	return nil
}

// guard is the check before l bytes are written that are not one room's
// event (or that exceed its room): while rooms are held, the write must
// leave them their room, allocated now if need be; on a disk without it
// the write is refused (its caller refuses the call it was for), so that
// a call already forwarded still gets its event written.
func (w *Writer) guard(l int64) error {
	if w.held <= 0 {
		return nil
	}
	// A chunk at a time, as Reserve does, so that the events written
	// while calls are in flight rarely need an fallocate each.
	if err := w.setAside(l, reserveChunk); err != nil {
		return fmt.Errorf("the room left is reserved for the events of %d upstream requests in flight: %w", w.rooms(), err)
	}
	return nil
}

// reserveHeld sets the rooms held aside again in a file just opened (the
// log was rotated while calls were in flight); best effort: a new file on
// a full disk may not have it, and their events then fail as any write.
func (w *Writer) reserveHeld() {
	w.reservedTo = 0
	if w.held > 0 {
		_ = w.setAside(0, max(w.held, reserveChunk))
	}
}

// reserveChunk is the least Reserve sets aside past the file's end: at
// about a kilobyte an event, one fallocate serves hundreds of calls.
const reserveChunk = 1 << 20
