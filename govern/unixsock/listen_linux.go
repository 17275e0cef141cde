//go:build linux

package unixsock

import (
	"fmt"
	"net"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// listen binds the socket through the verified directory's descriptor
// (see Listen).
func listen(path string, o Options) (net.Listener, error) {
	dir, base := filepath.Dir(path), filepath.Base(path)
	ownerUID := os.Geteuid()
	if o.Owner != nil {
		ownerUID = o.Owner.UID
	}
	dfd, err := openDir(dir, ownerUID)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dfd)
	if o.Owner != nil {
		// Take the directory back while the socket is made.
		if err := unix.Fchown(dfd, os.Geteuid(), os.Getegid()); err != nil {
			return nil, fmt.Errorf("socket directory %s: %w", dir, err)
		}
	}
	ln, fail, err := bindAt(dfd, base, fmt.Sprintf("/proc/self/fd/%d/%s", dfd, base), path)
	if err != nil {
		return nil, err
	}
	// Only this process can change the directory's entries now, so these
	// reach the socket just bound.
	if err := unix.Fchmodat(dfd, base, 0o600, 0); err != nil {
		return fail(err)
	}
	if o.Owner != nil {
		if err := unix.Fchownat(dfd, base, o.Owner.UID, o.Owner.GID, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return fail(err)
		}
		if err := unix.Fchown(dfd, o.Owner.UID, o.Owner.GID); err != nil {
			return fail(err)
		}
	}
	return ln, nil
}
