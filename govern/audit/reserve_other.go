//go:build !linux

package audit

// Reserve checks that the path still names the file held; without
// fallocate it cannot set room aside. The room is counted all the same.
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
	w.held += n
	w.heldRooms++
	return &Room{w: w, n: n}, nil
}

func (w *Writer) guard(int64) error { return nil }

func (w *Writer) reserveHeld() { w.reservedTo = 0 }
