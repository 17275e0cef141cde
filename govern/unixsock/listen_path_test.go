package unixsock

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// listenByPath is macOS's listener; it runs here on Linux so that what it
// refuses and what it makes are tested on a real kernel (the peer's uid is
// read by the Linux peerOf here, LOCAL_PEERCRED there).
func TestListenByPath(t *testing.T) {
	t.Parallel()
	tmp := func(t *testing.T) string {
		d, err := os.MkdirTemp("", "uskp")
		assert.NilError(t, err)
		t.Cleanup(func() { os.RemoveAll(d) })
		return d
	}
	hello := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		uid, _ := PeerUID(r.Context())
		fmt.Fprintf(w, "uid=%d", uid)
	})
	serveAt := func(t *testing.T, sock string) {
		t.Helper()
		ln, err := listenByPath(sock, Options{})
		assert.NilError(t, err)
		s := serve(ln, sock, hello, Options{}, false)
		t.Cleanup(func() { s.Close() })
		resp, err := Client(sock, 5*time.Second).Get("http://x/")
		assert.NilError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Check(t, is.Equal(string(body), fmt.Sprintf("uid=%d", os.Geteuid())))
		fi, err := os.Lstat(sock)
		assert.NilError(t, err)
		assert.Check(t, is.Equal(fi.Mode(), fs.ModeSocket|0o600))
		st := fi.Sys().(*syscall.Stat_t)
		assert.Check(t, is.Equal(int(st.Uid), os.Geteuid()))
	}

	t.Run("makes a 0700 directory and a 0600 socket", func(t *testing.T) {
		t.Parallel()
		dir := filepath.Join(tmp(t), "a", "b")
		serveAt(t, filepath.Join(dir, "s.sock"))
		fi, err := os.Lstat(dir)
		assert.NilError(t, err)
		assert.Check(t, is.Equal(fi.Mode(), fs.ModeDir|0o700))
	})
	t.Run("refuses to hand the socket to another user", func(t *testing.T) {
		t.Parallel()
		sock := filepath.Join(tmp(t), "d", "s.sock")
		_, err := listenByPath(sock, Options{Owner: &Owner{UID: 65534, GID: 65534}})
		assert.Check(t, is.ErrorIs(err, ErrUnsupported))
		_, err = os.Lstat(filepath.Dir(sock))
		assert.Check(t, errors.Is(err, fs.ErrNotExist), "nothing is made for a refused owner")
	})
	for _, tc := range []struct {
		name string
		mode fs.FileMode
		uid  int // -1: this process's
		want string
	}{
		{"group-writable", 0o770, -1, "writable by group or others"},
		{"world-writable", 0o777, -1, "writable by group or others"},
		{"another uid's", 0o700, 65534, "not owned by uid"},
	} {
		t.Run("refuses a directory "+tc.name, func(t *testing.T) {
			if tc.uid >= 0 && os.Geteuid() != 0 {
				t.Skip("chown needs root")
			}
			t.Parallel()
			dir := filepath.Join(tmp(t), "d")
			assert.NilError(t, os.Mkdir(dir, 0o700))
			assert.NilError(t, os.Chmod(dir, tc.mode))
			if tc.uid >= 0 {
				assert.NilError(t, os.Lchown(dir, tc.uid, tc.uid))
			}
			_, err := listenByPath(filepath.Join(dir, "s.sock"), Options{})
			assert.Check(t, is.ErrorContains(err, tc.want))
			_, err = os.Lstat(filepath.Join(dir, "s.sock"))
			assert.Check(t, errors.Is(err, fs.ErrNotExist), "a socket was made in a refused directory")
		})
	}
	t.Run("refuses a symlink to a directory", func(t *testing.T) {
		t.Parallel()
		b := tmp(t)
		good := filepath.Join(b, "good")
		assert.NilError(t, os.Mkdir(good, 0o700))
		assert.NilError(t, os.Symlink(good, filepath.Join(b, "link")))
		_, err := listenByPath(filepath.Join(b, "link", "s.sock"), Options{})
		assert.Check(t, is.ErrorContains(err, "not a directory"))
		_, err = os.Lstat(filepath.Join(good, "s.sock"))
		assert.Check(t, errors.Is(err, fs.ErrNotExist))
	})
	t.Run("replaces a stale socket and a planted symlink, never its target", func(t *testing.T) {
		t.Parallel()
		dir := filepath.Join(tmp(t), "d")
		assert.NilError(t, os.Mkdir(dir, 0o700))
		sock := filepath.Join(dir, "s.sock")
		ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
		assert.NilError(t, err)
		ln.SetUnlinkOnClose(false)
		assert.NilError(t, ln.Close())
		serveAt(t, sock)

		target := filepath.Join(dir, "target")
		assert.NilError(t, os.WriteFile(target, []byte("keep"), 0o600))
		planted := filepath.Join(dir, "p.sock")
		assert.NilError(t, os.Symlink(target, planted))
		serveAt(t, planted)
		b, err := os.ReadFile(target)
		assert.NilError(t, err)
		assert.Check(t, is.Equal(string(b), "keep"))
	})
	t.Run("leaves a live socket alone", func(t *testing.T) {
		t.Parallel()
		sock := filepath.Join(tmp(t), "d", "s.sock")
		serveAt(t, sock)
		_, err := listenByPath(sock, Options{})
		assert.Check(t, is.ErrorIs(err, ErrInUse))
	})
}
