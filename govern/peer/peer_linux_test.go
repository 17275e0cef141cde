package peer

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"gotest.tools/v3/assert"
)

// accept returns the peer of the next connection on a fresh socket,
// made by connect.
func accept(t *testing.T, connect func(path string)) Peer {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s")
	ln, err := net.Listen("unix", path)
	assert.NilError(t, err)
	defer ln.Close()
	got := make(chan Peer, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- Peer{UID: -2}
			return
		}
		defer c.Close()
		raw, _ := c.(*net.UnixConn).SyscallConn()
		var p Peer
		raw.Control(func(fd uintptr) { p, err = Of(int(fd)) })
		if err != nil {
			t.Errorf("Of: %v", err)
		}
		got <- p
	}()
	connect(path)
	select {
	case p := <-got:
		return p
	case <-time.After(10 * time.Second):
		t.Fatal("no connection")
		return Peer{}
	}
}

func TestSelfIsSame(t *testing.T) {
	t.Parallel()
	p := accept(t, func(path string) {
		c, err := net.Dial("unix", path)
		assert.NilError(t, err)
		time.AfterFunc(time.Second, func() { c.Close() })
	})
	same, err := SameNamespaces(p)
	assert.NilError(t, err)
	assert.Check(t, same, "%+v", p)
	pidns, userns, err := Self()
	assert.NilError(t, err)
	assert.Check(t, p.PidNS == pidns && p.UserNS == userns && pidns != 0 && userns != 0)
}

// A process in user and pid namespaces of its own (as every sandbox is)
// is not the gateway's kind of peer, whatever its uid.
func TestNamespacedPeer(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("unshare (util-linux) not installed")
	}
	p := accept(t, func(path string) {
		out, err := exec.Command("unshare", "--user", "--map-root-user", "--pid", "--fork", "--",
			"perl", "-MSocket", "-e", `socket(my $s, AF_UNIX, SOCK_STREAM, 0) or die; connect($s, pack_sockaddr_un($ARGV[0])) or die "connect: $!"; sleep 1`, path).CombinedOutput()
		assert.NilError(t, err, string(out))
	})
	same, err := SameNamespaces(p)
	assert.NilError(t, err)
	assert.Check(t, !same, "a namespaced peer passed as the gateway's own: %+v", p)
	pidns, userns, _ := Self()
	assert.Check(t, p.PidNS != pidns && p.UserNS != userns, "%+v", p)
}

// The pidfd ioctls name the same namespaces /proc does (where the kernel
// has them: Linux 6.11).
func TestPidfdNamespaces(t *testing.T) {
	t.Parallel()
	fd, err := unix.PidfdOpen(os.Getpid(), 0)
	assert.NilError(t, err)
	defer unix.Close(fd)
	pidns, err1 := nsIoctl(fd, pidfdGetPidNamespace)
	userns, err2 := nsIoctl(fd, pidfdGetUserNamespace)
	if errors.Is(err1, unix.ENOTTY) || errors.Is(err2, unix.ENOTTY) {
		t.Skip("no PIDFD_GET_*_NAMESPACE on this kernel")
	}
	assert.NilError(t, err1)
	assert.NilError(t, err2)
	wantPid, wantUser, err := Self()
	assert.NilError(t, err)
	assert.Equal(t, pidns, wantPid)
	assert.Equal(t, userns, wantUser)
}
