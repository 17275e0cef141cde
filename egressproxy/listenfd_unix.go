//go:build unix

package main

import (
	"errors"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// inheritedListener turns descriptor fd into the listener to serve. It
// must be a Unix stream socket that is already listening: anything else
// (a TCP socket, a connected one, a stray descriptor) is refused rather
// than served, since the proxy's only door is the gateway's private socket.
func inheritedListener(fd int) (*net.UnixListener, error) {
	if fd < 3 {
		return nil, errors.New("descriptors 0-2 are the config, report and log streams")
	}
	if v, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ACCEPTCONN); err != nil {
		return nil, err
	} else if v != 1 {
		return nil, errors.New("not a listening socket")
	}
	f := os.NewFile(uintptr(fd), "egress-listener")
	defer f.Close() // FileListener holds its own duplicate
	l, err := net.FileListener(f)
	if err != nil {
		return nil, err
	}
	ul, ok := l.(*net.UnixListener)
	if !ok || ul.Addr().Network() != "unix" {
		_ = l.Close()
		return nil, errors.New("not a Unix stream socket")
	}
	// The gateway owns the path and removes its directory.
	ul.SetUnlinkOnClose(false)
	return ul, nil
}
