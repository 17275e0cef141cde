//go:build !unix

package egress

import "net"

// ListenUnix is not available without Unix sockets and a umask.
func ListenUnix(string) (*net.UnixListener, error) { return nil, ErrUnsupported }
