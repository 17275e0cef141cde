// Package polled gives the e2e fixture servers (hostileupstream,
// nullproxy) a standard input and output read and written through the
// runtime's poller when they are pipes, as the gateway's own are (package
// govern/pollfd says why: with Go 1.26 a stop-the-world can wait for a
// goroutine blocked in read(2) on an idle stdin, and a server built on the
// SDK's stdio then stops answering until its next message arrives). The
// e2e module drives the built binaries and does not link govern, hence
// this copy of its few lines.
package polled

import (
	"os"
	"syscall"
)

// Stdio returns stdin and stdout, polled when they are pipes or sockets.
func Stdio() (in, out *os.File) {
	return file(os.Stdin, 0, "/dev/stdin"), file(os.Stdout, 1, "/dev/stdout")
}

func file(std *os.File, fd int, name string) *os.File {
	var st syscall.Stat_t
	if syscall.Fstat(fd, &st) != nil {
		return std
	}
	if m := st.Mode & syscall.S_IFMT; m != syscall.S_IFIFO && m != syscall.S_IFSOCK {
		return std
	}
	if syscall.SetNonblock(fd, true) != nil {
		return std
	}
	return os.NewFile(uintptr(fd), name)
}
