package sandbox

import (
	"crypto/rand"
	"crypto/sha256"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"gotest.tools/v3/assert"
)

// startBridge serves a bridge from a loopback port to a Unix socket whose
// server is serve, and returns the port's address and the bridge's stop.
func startBridge(t *testing.T, serve func(net.Conn)) (string, func()) {
	t.Helper()
	return startBridgeOn(t, "127.0.0.1:0", serve)
}

// startBridgeOn is startBridge listening on addr.
func startBridgeOn(t *testing.T, addr string, serve func(net.Conn)) (string, func()) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "egress.sock")
	uln, err := net.Listen("unix", sock)
	assert.NilError(t, err)
	t.Cleanup(func() { uln.Close() })
	go func() {
		for {
			c, err := uln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(c)
			}()
		}
	}()
	ln, err := net.Listen("tcp", addr)
	assert.NilError(t, err)
	stop := ServeBridge(ln, sock)
	t.Cleanup(stop)
	return ln.Addr().String(), stop
}

// Megabytes go through the bridge whole both ways, and a half-close
// reaches the proxy's side as EOF while the answer still flows back.
func TestBridgeRelaysBothWays(t *testing.T) {
	t.Parallel()
	// The "proxy" reads the whole upload, then answers with its digest
	// and a download, then closes.
	download := make([]byte, 7<<20+5)
	_, _ = rand.Read(download)
	addr, _ := startBridge(t, func(c net.Conn) {
		h := sha256.New()
		if _, err := io.Copy(h, c); err != nil {
			return
		}
		_, _ = c.Write(h.Sum(nil))
		_, _ = c.Write(download)
	})
	upload := make([]byte, 9<<20+3)
	_, _ = rand.Read(upload)
	c, err := net.Dial("tcp", addr)
	assert.NilError(t, err)
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	go func() {
		if _, err := c.Write(upload); err == nil {
			_ = c.(*net.TCPConn).CloseWrite()
		}
	}()
	got, err := io.ReadAll(c)
	assert.NilError(t, err)
	want := sha256.Sum256(upload)
	assert.Equal(t, len(got), len(want)+len(download))
	assert.DeepEqual(t, got[:len(want)], want[:])
	assert.Equal(t, sha256.Sum256(got[len(want):]), sha256.Sum256(download))
}

// stop drops a connection that is still open, and the port takes no more.
func TestBridgeStopDropsConnections(t *testing.T) {
	t.Parallel()
	// An address of its own on the loopback: once stop has freed the
	// port, a parallel test's listener may take it on 127.0.0.1.
	addr, stop := startBridgeOn(t, "127.77.0.1:0", func(c net.Conn) { _, _ = io.Copy(c, c) })
	c, err := net.Dial("tcp", addr)
	assert.NilError(t, err)
	defer c.Close()
	_, err = c.Write([]byte("ping"))
	assert.NilError(t, err)
	b := make([]byte, 4)
	_, err = io.ReadFull(c, b)
	assert.NilError(t, err)
	assert.Equal(t, string(b), "ping")

	stop()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = c.Read(b)
	assert.Assert(t, err != nil, "the connection outlived stop")
	assert.Assert(t, !isTimeout(err), "the connection outlived stop: %v", err)
	_, err = net.DialTimeout("tcp", addr, time.Second)
	assert.Assert(t, err != nil, "the port still accepts after stop")
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// TestReceiveFDWaitsInPoller: receiveFD waits for init's descriptor in the
// runtime's poller (no thread asleep in a socket receive, where a Go 1.26
// stop-the-world could wait on it), then gets the descriptor sent.
func TestReceiveFDWaitsInPoller(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	assert.NilError(t, err)
	assert.NilError(t, unix.SetNonblock(fds[0], true)) // as supervise's handOut makes it
	end := os.NewFile(uintptr(fds[0]), "end")
	defer end.Close()
	defer unix.Close(fds[1])
	type got struct {
		fd  int
		err error
	}
	done := make(chan got, 1)
	go func() {
		fd, err := receiveFD(end, "the test's descriptor")
		done <- got{fd, err}
	}()
	time.Sleep(200 * time.Millisecond)
	select {
	case g := <-done:
		t.Fatalf("receiveFD returned before anything was sent: %d, %v", g.fd, g.err)
	default:
	}
	waits, _ := filepath.Glob("/proc/self/task/*/wchan")
	for _, p := range waits {
		if b, err := os.ReadFile(p); err == nil && strings.HasPrefix(string(b), "unix_stream") {
			t.Errorf("a thread sleeps in %s", b)
		}
	}
	r, w, err := os.Pipe()
	assert.NilError(t, err)
	defer r.Close()
	defer w.Close()
	assert.NilError(t, unix.Sendmsg(fds[1], []byte{0}, unix.UnixRights(int(w.Fd())), nil, 0))
	select {
	case g := <-done:
		assert.NilError(t, g.err)
		var st, want unix.Stat_t
		assert.NilError(t, unix.Fstat(g.fd, &st))
		assert.NilError(t, unix.Fstat(int(w.Fd()), &want))
		assert.Equal(t, st.Ino, want.Ino)
		unix.Close(g.fd)
	case <-time.After(10 * time.Second):
		t.Fatal("receiveFD did not get the descriptor")
	}
}
