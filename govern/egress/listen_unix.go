//go:build unix

package egress

import (
	"fmt"
	"net"
	"os"
	"syscall"
)

// ListenUnix listens on a new Unix stream socket at path, mode 0600: only
// the owner (the gateway's user, whose bridge connects to it) may connect.
// The umask is tightened around bind so the socket never exists with a
// wider mode; that umask is process-wide for that instant, so this is for
// mitrity-egressproxy serve --socket, not for a process that creates files
// concurrently (the gateway makes its sockets in a private directory
// instead). An existing path is an error, never removed.
func ListenUnix(path string) (*net.UnixListener, error) {
	if _, err := os.Lstat(path); err == nil {
		return nil, fmt.Errorf("socket path %s already exists", path)
	}
	old := syscall.Umask(0o177)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	syscall.Umask(old)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		_ = l.Close()
		return nil, err
	}
	return l, nil
}
