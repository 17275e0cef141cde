package relay_test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/mitrity/mitrity/govern/egress/relay"
)

// plain is a TCP connection the relay cannot see as a socket, so it copies
// with read and write.
type plain struct{ net.Conn }

func (p plain) CloseWrite() error { return p.Conn.(*net.TCPConn).CloseWrite() }

// pair returns the two ends of a connection of kind "tcp", "unix" or
// "plain" (TCP hidden behind a wrapper: never spliced).
func pair(t *testing.T, kind string) (net.Conn, net.Conn) {
	t.Helper()
	if kind == "plain" {
		a, b := pair(t, "tcp")
		return plain{a}, plain{b}
	}
	addr := "127.0.0.1:0"
	if kind == "unix" {
		addr = filepath.Join(t.TempDir(), "s")
	}
	ln, err := net.Listen(kind, addr)
	assert.NilError(t, err)
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	a, err := net.Dial(kind, ln.Addr().String())
	assert.NilError(t, err)
	b := <-accepted
	assert.Assert(t, b != nil)
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// setup relays between two fresh connections, of kinds ka and kb, and
// returns the outer ends (what a client and a server hold) and a channel
// closed when Run returns.
func setup(t *testing.T, ka, kb string, o relay.Options) (client, server net.Conn, done chan struct{}) {
	t.Helper()
	client, ra := pair(t, ka)
	rb, server := pair(t, kb)
	done = make(chan struct{})
	go func() {
		defer close(done)
		relay.Run(ra, rb, o)
	}()
	return client, server, done
}

var kinds = [][2]string{{"tcp", "tcp"}, {"unix", "tcp"}, {"tcp", "unix"}, {"unix", "unix"}, {"plain", "unix"}, {"plain", "plain"}}

// sendAll writes payload then half-closes; it reports the write error.
func sendAll(c net.Conn, payload []byte) error {
	if _, err := c.Write(payload); err != nil {
		return err
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func digest(r io.Reader) (string, int64, error) {
	h := sha256.New()
	n, err := io.Copy(h, r)
	return fmt.Sprintf("%x", h.Sum(nil)), n, err
}

func waitDone(t *testing.T, done chan struct{}) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
}

// Bytes arrive whole and in order both ways at once, and each side's
// half-close reaches the other as EOF, between every kind of connection.
func TestRunBothWays(t *testing.T) {
	t.Parallel()
	for _, k := range kinds {
		t.Run(k[0]+"-"+k[1], func(t *testing.T) {
			t.Parallel()
			client, server, done := setup(t, k[0], k[1], relay.Options{Idle: time.Minute})
			up, down := make([]byte, 6<<20+17), make([]byte, 5<<20+3)
			_, _ = rand.Read(up)
			_, _ = rand.Read(down)
			errs := make(chan error, 2)
			go func() { errs <- sendAll(client, up) }()
			go func() { errs <- sendAll(server, down) }()
			type got struct {
				sum string
				n   int64
				err error
			}
			atServer := make(chan got, 1)
			go func() {
				s, n, err := digest(server)
				atServer <- got{s, n, err}
			}()
			sum, n, err := digest(client)
			assert.NilError(t, err)
			assert.Equal(t, n, int64(len(down)))
			assert.Equal(t, sum, fmt.Sprintf("%x", sha256.Sum256(down)))
			g := <-atServer
			assert.NilError(t, g.err)
			assert.Equal(t, g.n, int64(len(up)))
			assert.Equal(t, g.sum, fmt.Sprintf("%x", sha256.Sum256(up)))
			assert.NilError(t, <-errs)
			assert.NilError(t, <-errs)
			waitDone(t, done)
		})
	}
}

// A request sent and half-closed still gets its whole response, which the
// server only starts after the request's EOF.
func TestRunHalfClose(t *testing.T) {
	t.Parallel()
	for _, k := range kinds {
		t.Run(k[0]+"-"+k[1], func(t *testing.T) {
			t.Parallel()
			client, server, done := setup(t, k[0], k[1], relay.Options{})
			go func() {
				req, err := io.ReadAll(server)
				if err != nil {
					return
				}
				resp := bytes.Repeat([]byte("response to "+string(req)+"\n"), 100_000)
				_ = sendAll(server, resp)
			}()
			assert.NilError(t, sendAll(client, []byte("GET")))
			resp, err := io.ReadAll(client)
			assert.NilError(t, err)
			assert.Equal(t, len(resp), 100_000*len("response to GET\n"))
			assert.Assert(t, bytes.HasPrefix(resp, []byte("response to GET\n")))
			waitDone(t, done)
		})
	}
}

// Early bytes reach the server before anything read from the client.
func TestRunEarly(t *testing.T) {
	t.Parallel()
	for _, k := range kinds {
		t.Run(k[0]+"-"+k[1], func(t *testing.T) {
			t.Parallel()
			client, server, done := setup(t, k[0], k[1], relay.Options{Early: []byte("early,")})
			go func() { _ = sendAll(client, []byte("then the rest")) }()
			got, err := io.ReadAll(server)
			assert.NilError(t, err)
			assert.Equal(t, string(got), "early,then the rest")
			server.Close()
			waitDone(t, done)
		})
	}
}

// Closing one of the relayed connections from elsewhere (the proxy's
// Close, the bridge's stop) ends both directions, and Run closes the
// other: both outer ends see their connection end.
func TestRunAbort(t *testing.T) {
	t.Parallel()
	for _, k := range kinds {
		t.Run(k[0]+"-"+k[1], func(t *testing.T) {
			t.Parallel()
			client, ra := pair(t, k[0])
			rb, server := pair(t, k[1])
			done := make(chan struct{})
			go func() {
				defer close(done)
				relay.Run(ra, rb, relay.Options{})
			}()
			_, err := client.Write([]byte("x"))
			assert.NilError(t, err)
			b := make([]byte, 1)
			_, err = io.ReadFull(server, b)
			assert.NilError(t, err)
			ra.Close()
			waitDone(t, done)
			_ = server.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, err = server.Read(b)
			assert.Assert(t, err != nil && !errors.Is(err, os.ErrDeadlineExceeded), "server side still open: %v", err)
			_ = client.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, err = client.Read(b)
			assert.Assert(t, err != nil && !errors.Is(err, os.ErrDeadlineExceeded), "client side still open: %v", err)
		})
	}
}

// A server that resets its connection ends the relay: the client's side
// is closed too.
func TestRunReset(t *testing.T) {
	t.Parallel()
	client, server, done := setup(t, "unix", "tcp", relay.Options{})
	_, err := client.Write([]byte("x"))
	assert.NilError(t, err)
	b := make([]byte, 1)
	_, err = io.ReadFull(server, b)
	assert.NilError(t, err)
	assert.NilError(t, server.(*net.TCPConn).SetLinger(0))
	assert.NilError(t, server.Close()) // RST
	waitDone(t, done)
	_ = client.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = client.Read(b)
	assert.Assert(t, err != nil && !errors.Is(err, os.ErrDeadlineExceeded), "client side still open: %v", err)
}

// The idle timeout is the relay's: a one-way stream whose gaps are short
// keeps it open while the other direction's reads time out again and
// again, and once both directions are quiet it ends. Wide margins, as in
// govern/egress: only a machine stalled for most of a second could see the
// stream as idle.
func TestRunIdle(t *testing.T) {
	t.Parallel()
	const idle = time.Second
	for _, k := range kinds {
		t.Run(k[0]+"-"+k[1], func(t *testing.T) {
			t.Parallel()
			client, server, done := setup(t, k[0], k[1], relay.Options{Idle: idle})
			// Bulk for 2 idle times (through splice where it applies),
			// then gaps of idle/4 for 2 more: the client never says a
			// word.
			go func() {
				chunk := make([]byte, 256<<10)
				for end := time.Now().Add(2 * idle); time.Now().Before(end); {
					if _, err := server.Write(chunk); err != nil {
						return
					}
					time.Sleep(idle / 100)
				}
				for range 8 {
					if _, err := server.Write([]byte("tick")); err != nil {
						return
					}
					time.Sleep(idle / 4)
				}
			}()
			start := time.Now()
			n, _ := io.Copy(io.Discard, client)
			// Closed by the relay once everything went quiet (EOF or a
			// reset), but not before the stream ended.
			assert.Assert(t, time.Since(start) >= 4*idle, "ended after %v with %d bytes", time.Since(start), n)
			assert.Assert(t, n > 8*4)
			waitDone(t, done)
		})
	}
}

// With nothing moving at all, the relay ends after about the idle time.
func TestRunIdleQuiet(t *testing.T) {
	t.Parallel()
	const idle = 200 * time.Millisecond
	client, _, done := setup(t, "unix", "tcp", relay.Options{Idle: idle})
	start := time.Now()
	_, _ = io.Copy(io.Discard, client)
	waitDone(t, done)
	took := time.Since(start)
	assert.Assert(t, took >= idle && took < idle+5*time.Second, "took %v", took)
}

// Without an idle timeout a quiet relay stays open.
func TestRunNoIdle(t *testing.T) {
	t.Parallel()
	client, server, done := setup(t, "tcp", "unix", relay.Options{})
	time.Sleep(300 * time.Millisecond)
	select {
	case <-done:
		t.Fatal("a relay without an idle timeout ended on its own")
	default:
	}
	_, err := client.Write([]byte("still there"))
	assert.NilError(t, err)
	b := make([]byte, 11)
	_, err = io.ReadFull(server, b)
	assert.NilError(t, err)
	client.Close()
	server.Close()
	waitDone(t, done)
}
