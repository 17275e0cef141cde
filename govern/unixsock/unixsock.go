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
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"
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
}

// Owner is a uid and gid.
type Owner struct{ UID, GID int }

// Server is a listening socket and the HTTP server on it.
type Server struct {
	ln   net.Listener
	srv  *http.Server
	path string
}

// ErrInUse is returned by Listen when another live process serves path.
var ErrInUse = errors.New("served by another process")

// Listen creates the socket at path and serves h on it until Close. The
// directory is created 0700 when missing (and handed to Owner); an
// existing directory is never chowned: it must already be owned by the
// socket's owner and writable by no one else, or Listen refuses (it will
// not put a socket where others can replace it). A stale socket file is
// removed; a live one is ErrInUse.
func Listen(path string, h http.Handler, o Options) (*Server, error) {
	dir := filepath.Dir(path)
	ownerUID := os.Geteuid()
	if o.Owner != nil {
		ownerUID = o.Owner.UID
	}
	if err := prepareDir(dir, o.Owner, ownerUID); err != nil {
		return nil, err
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return nil, fmt.Errorf("socket %s: %w", path, ErrInUse)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("socket %s: %w", path, err)
	}
	// bind creates the socket with the umask applied: 0177 makes it 0600
	// from the start. A chmod after bind would follow a symlink the
	// directory's owner put in the socket's place.
	umask := syscall.Umask(0o177)
	ln, err := net.Listen("unix", path)
	syscall.Umask(umask)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	if o.Owner != nil {
		if err := os.Lchown(path, o.Owner.UID, o.Owner.GID); err != nil {
			ln.Close()
			return nil, fmt.Errorf("socket %s: %w", path, err)
		}
	}
	allowed := append([]int{os.Geteuid(), 0}, o.UIDs...)
	if o.Owner != nil {
		allowed = append(allowed, o.Owner.UID)
	}
	s := &Server{ln: ln, path: path}
	s.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			uid, _ := PeerUID(r.Context())
			if !slices.Contains(allowed, uid) {
				http.Error(w, "forbidden: this socket serves other users", http.StatusForbidden)
				return
			}
			h.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 5 * time.Second,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, peerKey{}, peerUID(c))
		},
	}
	go s.srv.Serve(ln)
	return s, nil
}

func prepareDir(dir string, owner *Owner, ownerUID int) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return fmt.Errorf("socket directory: %w", err)
	}
	// Only a directory made here is handed to the owner: chowning one
	// that exists would give away whatever it is (/run for /run/x.sock).
	switch err := os.Mkdir(dir, 0o700); {
	case err == nil:
		if err := os.Chmod(dir, 0o700); err != nil { // whatever the umask
			return fmt.Errorf("socket directory: %w", err)
		}
		if owner != nil {
			if err := os.Lchown(dir, owner.UID, owner.GID); err != nil {
				return fmt.Errorf("socket directory %s: %w", dir, err)
			}
		}
	case !errors.Is(err, fs.ErrExist):
		return fmt.Errorf("socket directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("socket directory: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("socket directory %s: not a directory", dir)
	case !ok || int(st.Uid) != ownerUID:
		return fmt.Errorf("socket directory %s: not owned by uid %d", dir, ownerUID)
	case fi.Mode().Perm()&0o022 != 0:
		// Others could replace the socket with their own.
		return fmt.Errorf("socket directory %s: writable by group or others (mode %o)", dir, fi.Mode().Perm())
	}
	return nil
}

// Path is the socket's path.
func (s *Server) Path() string { return s.path }

// Close stops serving, drops open connections and removes the socket.
func (s *Server) Close() error {
	err := s.srv.Close()
	os.Remove(s.path)
	return err
}

// Shutdown stops accepting, waits for handlers to finish until ctx ends,
// and removes the socket.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	os.Remove(s.path)
	return err
}

type peerKey struct{}

// PeerUID is the uid of the process at the other end of the request's
// connection; ok is false when it could not be read.
func PeerUID(ctx context.Context) (uid int, ok bool) {
	uid, ok = ctx.Value(peerKey{}).(int)
	return uid, ok && uid >= 0
}

// peerUID returns the connecting process's uid, or -1 when unknown.
func peerUID(c net.Conn) int {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return -1
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return -1
	}
	uid := -1
	raw.Control(func(fd uintptr) {
		cred, err := syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
		if err == nil {
			uid = int(cred.Uid)
		}
	})
	return uid
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
