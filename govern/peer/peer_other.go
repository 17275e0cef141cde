//go:build !linux

package peer

import "errors"

// Peer is who connected.
type Peer struct {
	UID, PID      int
	PidNS, UserNS uint64
}

// ErrUnsupported: namespaces are Linux's.
var ErrUnsupported = errors.New("peer: not supported on this platform")

// Of is unsupported here.
func Of(fd int) (Peer, error) { return Peer{UID: -1}, ErrUnsupported }

// Self is unsupported here.
func Self() (pidns, userns uint64, err error) { return 0, 0, ErrUnsupported }

// PidNSOf is unsupported here.
func PidNSOf(pid int) (uint64, error) { return 0, ErrUnsupported }

// SameNamespaces is unsupported here: no peer is known to be outside a
// sandbox.
func SameNamespaces(p Peer) (bool, error) { return false, ErrUnsupported }
