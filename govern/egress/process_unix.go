//go:build unix

package egress

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// pendingConn reports whether the listening socket fd has a connection
// queued, without taking it.
func pendingConn(fd uintptr) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0 && fds[0].Revents&(unix.POLLIN|unix.POLLERR|unix.POLLHUP) != 0
}

// processExists reports whether pid is a live process (or one this user
// may not signal, which is as good as alive here).
func processExists(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || err == unix.EPERM
}

// ownedByMe reports whether fi belongs to this process's effective user.
func ownedByMe(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}
