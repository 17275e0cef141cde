//go:build linux

package mcpserver

import (
	"encoding/binary"
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// peerUID is the uid owning the client end of a loopback TCP connection
// (local is this end, remote the client's), from the kernel's socket
// table: one exact NETLINK_SOCK_DIAG lookup, which any user may make, as
// `ss -e` does.
func peerUID(local, remote *net.TCPAddr) (uint32, error) {
	family, src, dst := uint8(unix.AF_INET6), remote.IP.To16(), local.IP.To16()
	if r4, l4 := remote.IP.To4(), local.IP.To4(); r4 != nil && l4 != nil {
		family, src, dst = unix.AF_INET, r4, l4
	}
	if src == nil || dst == nil {
		return 0, fmt.Errorf("peer uid: not an IP connection")
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return 0, fmt.Errorf("peer uid: %w", err)
	}
	defer unix.Close(fd)
	tv := unix.Timeval{Sec: 1}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return 0, fmt.Errorf("peer uid: %w", err)
	}
	// struct nlmsghdr (16 bytes), then struct inet_diag_req_v2 (56): the
	// client's socket is the one whose source is the client's address.
	const reqLen = 16 + 56
	req := make([]byte, reqLen)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:], reqLen)
	ne.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(req[6:], unix.NLM_F_REQUEST)
	ne.PutUint32(req[8:], 1) // sequence
	b := req[16:]
	b[0], b[1] = family, unix.IPPROTO_TCP
	ne.PutUint32(b[4:], 0xffffffff) // every state
	id := b[8:]                     // struct inet_diag_sockid
	binary.BigEndian.PutUint16(id[0:], uint16(remote.Port))
	binary.BigEndian.PutUint16(id[2:], uint16(local.Port))
	copy(id[4:20], src)
	copy(id[20:36], dst)
	ne.PutUint32(id[40:], 0xffffffff) // INET_DIAG_NOCOOKIE
	ne.PutUint32(id[44:], 0xffffffff)
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return 0, fmt.Errorf("peer uid: %w", err)
	}
	buf := make([]byte, 1024)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return 0, fmt.Errorf("peer uid: %w", err)
	}
	// The answer: struct nlmsghdr, then struct inet_diag_msg, whose
	// idiag_uid is at offset 64; or NLMSG_ERROR (the socket is gone, or in
	// another network namespace).
	if n < 16 {
		return 0, fmt.Errorf("peer uid: short netlink answer")
	}
	switch ne.Uint16(buf[4:]) {
	case unix.SOCK_DIAG_BY_FAMILY:
	case unix.NLMSG_ERROR:
		if n >= 20 {
			return 0, fmt.Errorf("peer uid: %w", unix.Errno(-int32(ne.Uint32(buf[16:]))))
		}
		return 0, fmt.Errorf("peer uid: netlink error")
	default:
		return 0, fmt.Errorf("peer uid: unexpected netlink message %d", ne.Uint16(buf[4:]))
	}
	if n < 16+68 {
		return 0, fmt.Errorf("peer uid: short inet_diag_msg")
	}
	return ne.Uint32(buf[16+64:]), nil
}
