package main

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
)

// TestCheckInherited: a socket systemd passes is served only where the
// config says, with the mode and owner the gateway would give its own
// socket, in a directory no one else can write.
func TestCheckInherited(t *testing.T) {
	for _, tc := range []struct {
		name    string
		setup   func(t *testing.T, dir, sock string) // after the socket is bound
		path    func(dir, sock string) string        // the config's admission.socket
		owner   int                                  // 0: the test's own uid
		wantErr string
	}{
		{name: "as the gateway makes it", wantErr: ""},
		{name: "mode 0666 (systemd's default)", setup: func(t *testing.T, _, sock string) { assert.NilError(t, os.Chmod(sock, 0o666)) },
			wantErr: "mode 0666: set SocketMode=0600"},
		{name: "another owner", owner: 4242, wantErr: "want uid 4242"},
		{name: "another path than the config's", path: func(dir, _ string) string { return filepath.Join(dir, "other.sock") },
			wantErr: "make the socket unit's ListenStream= and admission.socket the same"},
		{name: "group-writable directory", setup: func(t *testing.T, dir, _ string) { assert.NilError(t, os.Chmod(dir, 0o770)) },
			wantErr: "writable by group or others"},
		{name: "not a socket any more", setup: func(t *testing.T, _, sock string) {
			assert.NilError(t, os.Remove(sock))
			assert.NilError(t, os.WriteFile(sock, nil, 0o600))
		}, wantErr: "is not a socket"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			assert.NilError(t, os.Mkdir(dir, 0o700))
			sock := filepath.Join(dir, "admission.sock")
			ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
			assert.NilError(t, err)
			defer ln.Close()
			assert.NilError(t, os.Chmod(sock, 0o600))
			if tc.setup != nil {
				tc.setup(t, dir, sock)
			}
			path := sock
			if tc.path != nil {
				path = tc.path(dir, sock)
			}
			owner := os.Geteuid()
			if tc.owner != 0 {
				owner = tc.owner
			}
			err = checkInherited(ln, path, owner)
			if tc.wantErr == "" {
				assert.NilError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.wantErr)
		})
	}
}
