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
// other checks. An error means the call must not run. Room is set aside
// reserveChunk (or four times n) at a time, so most calls find it already
// there; on a disk too full for that, just n.
func (w *Writer) Reserve(n int64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	if w.flushErr != nil {
		return w.flushErr
	}
	if err := w.current(); err != nil {
		return err
	}
	fi, err := w.f.Stat()
	if err != nil {
		return fmt.Errorf("audit log %s: %w", w.path, err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && fi.Size()+n <= w.reservedTo && st.Blocks*512 >= fi.Size()+n {
		// Within what an earlier Reserve set aside, and its blocks are
		// still there (a truncation, by copytruncate say, frees them;
		// the blocks alone are not enough: XFS counts speculative
		// preallocation it takes back when the disk fills).
		return nil
	}
	chunk := max(4*n, reserveChunk)
	err = unix.Fallocate(int(w.f.Fd()), unix.FALLOC_FL_KEEP_SIZE, fi.Size(), chunk)
	if (errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT)) && chunk > n {
		// Nearly full: the one event still fits.
		chunk = n
		err = unix.Fallocate(int(w.f.Fd()), unix.FALLOC_FL_KEEP_SIZE, fi.Size(), chunk)
	}
	switch {
	case err == nil:
		w.reservedTo = fi.Size() + chunk
	case errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENOSYS):
	default:
		return fmt.Errorf("audit log %s: reserving room for the next event: %w", w.path, err)
	}
	return nil
}

// reserveChunk is the least Reserve sets aside past the file's end: at
// about a kilobyte an event, one fallocate serves hundreds of calls.
const reserveChunk = 1 << 20
