//go:build linux || darwin

package unixsock

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// ErrUnsupported is what Listen returns where it cannot make the socket as
// safely as it says it does.
var ErrUnsupported = errors.New("not supported on this system")

// listenByPath is Listen for a system without /proc/self/fd (macOS; its
// tests run it on Linux too). The socket is bound by its path, so the
// directory must be this process's own, 0700, checked through a
// descriptor: then only root and this process can change its entries
// between the check and the bind, and after the bind the path is checked
// to still lead to the directory that was verified and the entry to be a
// socket. An Owner is refused (ErrUnsupported): the directory would have
// to belong to that user while the socket is bound in it by path, and the
// user could swap it in between.
func listenByPath(path string, o Options) (net.Listener, error) {
	if o.Owner != nil {
		return nil, fmt.Errorf("socket %s: handing it to another user needs a bind through a directory descriptor (/proc/self/fd): %w", path, ErrUnsupported)
	}
	dir, base := filepath.Dir(path), filepath.Base(path)
	dfd, err := openDir(dir, os.Geteuid())
	if err != nil {
		return nil, err
	}
	defer unix.Close(dfd)
	var verified unix.Stat_t
	if err := unix.Fstat(dfd, &verified); err != nil {
		return nil, fmt.Errorf("socket directory %s: %w", dir, err)
	}
	same := func() error {
		var st unix.Stat_t
		if err := unix.Stat(dir, &st); err != nil {
			return err
		}
		if st.Dev != verified.Dev || st.Ino != verified.Ino {
			return fmt.Errorf("socket directory %s was replaced while the socket was made", dir)
		}
		return nil
	}
	if err := same(); err != nil {
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	ln, fail, err := bindAt(dfd, base, path, path)
	if err != nil {
		return nil, err
	}
	if err := same(); err != nil {
		return fail(err)
	}
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fail(err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return fail(errors.New("the entry bound is not the socket"))
	}
	if err := unix.Fchmodat(dfd, base, 0o600, 0); err != nil {
		return fail(err)
	}
	return ln, nil
}

// bindAt makes the socket base in the directory dfd, binding it by the name
// addr (its path, or on Linux base under the directory's /proc/self/fd
// entry): it refuses a socket a process still answers on (ErrInUse),
// removes a stale entry, and listens. fail undoes it for a check that
// comes after: it closes the listener, removes the entry, and returns err
// as the socket's.
func bindAt(dfd int, base, addr, path string) (ln net.Listener, fail func(error) (net.Listener, error), err error) {
	if c, err := net.DialTimeout("unix", addr, time.Second); err == nil {
		c.Close()
		return nil, nil, fmt.Errorf("socket %s: %w", path, ErrInUse)
	}
	if err := unix.Unlinkat(dfd, base, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return nil, nil, fmt.Errorf("socket %s: %w", path, err)
	}
	ln, err = net.Listen("unix", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("socket: %w", err)
	}
	// Close and Shutdown remove the socket by its path (on Linux the name
	// bound is the fd path, gone with dfd).
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	fail = func(err error) (net.Listener, error) {
		ln.Close()
		unix.Unlinkat(dfd, base, 0)
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	return ln, fail, nil
}
