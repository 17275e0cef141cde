//go:build linux

package unixsock

import (
	"net"

	"github.com/mitrity/mitrity/govern/peer"
)

// peerOf reads the connecting process (uid -1 when unknown).
func peerOf(c net.Conn) peer.Peer {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return peer.Peer{UID: -1}
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return peer.Peer{UID: -1}
	}
	p := peer.Peer{UID: -1}
	raw.Control(func(fd uintptr) {
		var err error
		if p, err = peer.Of(int(fd)); err != nil && p.UID >= 0 {
			// The uid is known but not the namespaces: an Accept that
			// needs them refuses (zero namespaces match nothing).
			p.PidNS, p.UserNS = 0, 0
		}
	})
	return p
}
