//go:build !linux

package mcpserver

import (
	"errors"
	"net"
)

// errPeerUnsupported is what peerUID returns where the platform cannot
// say who owns the other end of a loopback connection.
var errPeerUnsupported = errors.New("the owner of a loopback peer's socket cannot be read on this platform")

// peerUID cannot read a socket's owner here: loopback peers count by
// address.
func peerUID(_, _ *net.TCPAddr) (uint32, error) { return 0, errPeerUnsupported }
