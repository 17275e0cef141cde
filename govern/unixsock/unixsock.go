// Package unixsock serves HTTP on a Unix socket that only chosen local
// users can reach: the socket is 0600 in a 0700 directory, both owned by
// the user who may connect, and every connection's peer uid (SO_PEERCRED)
// is checked again before a handler runs. The file modes keep other users
// out; the peer check keeps out whoever slips past them (a socket passed
// on, a directory whose mode was changed by hand).
package unixsock

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mitrity/mitrity/govern/peer"
)

// Options say who may connect.
type Options struct {
	// UIDs are the users whose processes may connect, besides the server's
	// own user and root.
	UIDs []int
	// Owner, when set, is the user (and group) the directory and socket are
	// handed to, so that user can reach a socket created by root. Only a
	// root server can set it.
	Owner *Owner
	// Accept, when set, decides on each connection's peer after its uid
	// passed: a sandboxed command runs as the gateway's own uid, and only
	// its namespaces tell it apart. An error refuses the request (403,
	// with the error's text).
	Accept func(peer.Peer) error
}

// Owner is a uid and gid.
type Owner struct{ UID, GID int }

// Server is a listening socket and the HTTP server on it.
type Server struct {
	ln   net.Listener
	srv  *http.Server
	path string
	// keep: the socket file belongs to whoever passed the listener
	// (systemd's socket unit), so stopping leaves it in place.
	keep bool
}

// ErrInUse is returned by Listen when another live process serves path.
var ErrInUse = errors.New("served by another process")

// Listen creates the socket at path and serves h on it until Close. The
// directory is created 0700 when missing. An existing one must be a real
// directory owned by the socket's owner and writable by no one else, or
// Listen refuses (it will not put a socket where others can replace it).
// With Owner, directory and socket are handed to that user last. A stale
// socket file is removed; a live one is ErrInUse.
//
// On Linux everything happens through one descriptor of the verified
// directory (the socket is bound at /proc/self/fd/N/name), and while the
// socket is made the directory belongs to this process alone: an owner who
// swaps the directory or the socket for a symlink in between gains
// nothing, and no process-wide umask is touched. macOS has no
// /proc/self/fd: there the socket is bound by its path in a directory of
// this process's own (listenByPath), and Owner is refused. Elsewhere
// Listen refuses (ErrUnsupported).
func Listen(path string, h http.Handler, o Options) (*Server, error) {
	ln, err := listen(path, o)
	if err != nil {
		return nil, err
	}
	return serve(ln, path, h, o, false), nil
}

// openDir opens the socket's directory, creating it 0700 when missing,
// and checks what it opened: a directory (not a symlink to one) owned by
// ownerUID (or by this process, when it made it) and writable by no one
// else.
func openDir(dir string, ownerUID int) (int, error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return -1, fmt.Errorf("socket directory: %w", err)
	}
	made := false
	switch err := unix.Mkdir(dir, 0o700); {
	case err == nil:
		made = true
	case !errors.Is(err, unix.EEXIST):
		return -1, fmt.Errorf("socket directory %s: %w", dir, err)
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("socket directory %s: not a directory (or a symlink to one): %w", dir, err)
	}
	if made {
		if err := unix.Fchmod(fd, 0o700); err != nil { // whatever the umask
			unix.Close(fd)
			return -1, fmt.Errorf("socket directory %s: %w", dir, err)
		}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("socket directory %s: %w", dir, err)
	}
	switch {
	case int(st.Uid) != ownerUID && !(made && int(st.Uid) == os.Geteuid()):
		unix.Close(fd)
		return -1, fmt.Errorf("socket directory %s: not owned by uid %d", dir, ownerUID)
	case st.Mode&0o022 != 0:
		// Others could replace the socket with their own.
		unix.Close(fd)
		return -1, fmt.Errorf("socket directory %s: writable by group or others (mode %o)", dir, st.Mode&0o777)
	}
	return fd, nil
}

// Path is the socket's path.
func (s *Server) Path() string { return s.path }

// Close stops serving, drops open connections and removes the socket.
func (s *Server) Close() error {
	err := s.srv.Close()
	s.remove()
	return err
}

// Shutdown stops accepting, waits for handlers to finish until ctx ends,
// and removes the socket.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	s.remove()
	return err
}

func (s *Server) remove() {
	if !s.keep {
		os.Remove(s.path)
	}
}

type peerKey struct{}

// PeerUID is the uid of the process at the other end of the request's
// connection; ok is false when it could not be read.
func PeerUID(ctx context.Context) (uid int, ok bool) {
	p, ok := ctx.Value(peerKey{}).(peer.Peer)
	return p.UID, ok && p.UID >= 0
}

// Client is an HTTP client whose every request goes to the socket at
// path; the URL's host is ignored. timeout 0 means none (a streaming
// response).
func Client(path string, timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", path)
		},
		DisableCompression: true,
	}}
}
