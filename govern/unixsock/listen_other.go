//go:build !linux && !darwin

package unixsock

import (
	"errors"
	"fmt"
	"net"

	"github.com/mitrity/mitrity/govern/peer"
)

// ErrUnsupported is what Listen returns where it cannot make the socket as
// safely as it says it does: here, anywhere.
var ErrUnsupported = errors.New("not supported on this system")

func listen(path string, _ Options) (net.Listener, error) {
	return nil, fmt.Errorf("socket %s: %w", path, ErrUnsupported)
}

// peerOf cannot read the peer here: uid -1, which every check refuses.
func peerOf(net.Conn) peer.Peer { return peer.Peer{UID: -1} }
