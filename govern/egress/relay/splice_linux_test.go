package relay

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
)

// These tests look at the package's pipes, so they do not run in parallel
// (the parallel tests start after them).

func drainPipes() {
	for {
		select {
		case p := <-pipes:
			p.data = 1 // closed, not kept
			p.release()
		default:
			return
		}
	}
}

// openPipes counts this process's pipe descriptors.
func openPipes(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	assert.NilError(t, err)
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && strings.HasPrefix(l, "pipe:") {
			n++
		}
	}
	return n
}

func unixTCP(t *testing.T) (client, server net.Conn, done chan struct{}) {
	t.Helper()
	uln, err := net.Listen("unix", filepath.Join(t.TempDir(), "s"))
	assert.NilError(t, err)
	defer uln.Close()
	tln, err := net.Listen("tcp", "127.0.0.1:0")
	assert.NilError(t, err)
	defer tln.Close()
	client, err = net.Dial("unix", uln.Addr().String())
	assert.NilError(t, err)
	ra, err := uln.Accept()
	assert.NilError(t, err)
	rb, err := net.Dial("tcp", tln.Addr().String())
	assert.NilError(t, err)
	server, err = tln.Accept()
	assert.NilError(t, err)
	t.Cleanup(func() { client.Close(); server.Close() })
	done = make(chan struct{})
	go func() {
		defer close(done)
		Run(ra, rb, Options{Idle: time.Minute})
	}()
	return client, server, done
}

// Between sockets the bytes go through a pipe, and a relay waiting for
// bytes holds none: every pipe is back in the pool.
func TestSplicePipeOnlyWhileMoving(t *testing.T) {
	drainPipes()
	before := openPipes(t)
	client, server, done := unixTCP(t)
	out, in := make([]byte, 4<<20), make([]byte, 4<<20)
	go func() { _, _ = client.Write(out) }()
	_, err := io.ReadFull(server, in)
	assert.NilError(t, err)
	go func() { _, _ = server.Write(out) }()
	_, err = io.ReadFull(client, in)
	assert.NilError(t, err)

	// Both directions now wait on quiet sockets. A direction gives its
	// pipe back when its next splice finds nothing to read, so allow it a
	// moment.
	settled := func() bool { return len(pipes) > 0 && openPipes(t)-before == 2*len(pipes) }
	for deadline := time.Now().Add(5 * time.Second); !settled() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	assert.Assert(t, len(pipes) > 0, "no pipe used: the bytes were not spliced")
	assert.Equal(t, openPipes(t)-before, 2*len(pipes), "a waiting relay holds a pipe")
	client.Close()
	server.Close()
	<-done
}

// When no pipe can be had (fs.pipe-user-pages-soft reached, out of
// descriptors) the relay copies with read and write instead.
func TestSpliceNoPipe(t *testing.T) {
	drainPipes()
	orig := newPipe
	newPipe = func() (*pipe, error) { return nil, errors.New("no pipe for you") }
	defer func() { newPipe = orig }()

	client, server, done := unixTCP(t)
	payload := make([]byte, 3<<20)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	go func() {
		_, _ = client.Write(payload)
		_ = client.(*net.UnixConn).CloseWrite()
	}()
	got, err := io.ReadAll(server)
	assert.NilError(t, err)
	assert.Assert(t, bytes.Equal(got, payload))
	assert.Equal(t, len(pipes), 0)
	client.Close()
	server.Close()
	<-done
}
