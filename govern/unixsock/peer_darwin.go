//go:build darwin

package unixsock

import (
	"net"

	"golang.org/x/sys/unix"

	"github.com/mitrity/mitrity/govern/peer"
)

// peerOf reads the connecting process's uid (LOCAL_PEERCRED, macOS's
// SO_PEERCRED) and pid (LOCAL_PEERPID); uid -1 when unknown. macOS has no
// namespaces: they stay zero, and an Accept that needs them refuses.
func peerOf(c net.Conn) peer.Peer {
	p := peer.Peer{UID: -1}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return p
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return p
	}
	raw.Control(func(fd uintptr) {
		// Version 0 is XUCRED_VERSION, the only layout there is; another
		// would be a struct this code cannot read.
		if cr, err := unix.GetsockoptXucred(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED); err == nil && cr.Version == 0 {
			p.UID = int(cr.Uid)
		}
		if pid, err := unix.GetsockoptInt(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERPID); err == nil {
			p.PID = pid
		}
	})
	return p
}
