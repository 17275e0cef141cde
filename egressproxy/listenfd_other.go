//go:build !unix

package main

import (
	"net"

	"github.com/mitrity/mitrity/govern/egress"
)

// inheritedListener: no inherited Unix sockets on this platform.
func inheritedListener(int) (*net.UnixListener, error) { return nil, egress.ErrUnsupported }
