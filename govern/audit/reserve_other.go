//go:build !linux

package audit

// Reserve checks that the path still names the file held; without
// fallocate it cannot set room aside.
func (w *Writer) Reserve(int64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	if w.flushErr != nil {
		return w.flushErr
	}
	return w.current()
}
