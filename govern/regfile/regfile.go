package regfile

import (
	"fmt"
	"os"
	"syscall"
)

// Open opens path for reading when it is a regular file (a symlink to one
// is followed). O_NONBLOCK: a named pipe is refused rather than opened
// waiting for a writer, which would hang a start, or a SIGHUP reload and
// every reload and audit reopen after it, without a word; a regular file
// reads the same either way.
func Open(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file (%s)", path, kind(fi.Mode()))
	}
	return f, nil
}

// kind names what a path that is not a regular file is.
func kind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return m.Type().String()
}
