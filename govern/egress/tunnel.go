package egress

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// tunnel relays one CONNECT. The idle timeout is the tunnel's, not a
// direction's: a long download with a silent client is not idle. Each read
// carries a deadline; when it fires, the tunnel only ends if the other
// direction has been quiet too.
type tunnel struct {
	client, upstream net.Conn
	idle             time.Duration
	last             atomic.Int64 // unix nanos of the last byte moved
}

func newTunnel(client, upstream net.Conn, idle time.Duration) *tunnel {
	t := &tunnel{client: client, upstream: upstream, idle: idle}
	t.touch()
	return t
}

func (t *tunnel) touch() { t.last.Store(time.Now().UnixNano()) }

func (t *tunnel) quiet() bool {
	return time.Since(time.Unix(0, t.last.Load())) >= t.idle
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, tunnelBuf); return &b }}

// run relays until both directions end, then closes both connections.
// early is what the client sent behind its CONNECT.
func (t *tunnel) run(early []byte) {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t.pipe(t.client, t.upstream, nil)
	}()
	t.pipe(t.upstream, t.client, early)
	wg.Wait()
	_ = t.client.Close()
	_ = t.upstream.Close()
}

// pipe copies src to dst. At src's EOF it half-closes dst, so the other
// direction can finish (a request sent, a response still streaming). Any
// other end closes both connections, which ends the other direction too.
func (t *tunnel) pipe(dst, src net.Conn, early []byte) {
	if len(early) > 0 {
		if !t.write(dst, early) {
			t.abort()
			return
		}
	}
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	var deadline time.Time
	for {
		// Moving the deadline on every read costs a timer update; moving it
		// when an eighth of the timeout has passed keeps it within 1/8.
		if now := time.Now(); deadline.Sub(now) < t.idle-t.idle/8 {
			deadline = now.Add(t.idle)
			_ = src.SetReadDeadline(deadline)
		}
		n, err := src.Read(buf)
		if n > 0 {
			t.touch()
			if !t.write(dst, buf[:n]) {
				t.abort()
				return
			}
		}
		if err == nil {
			continue
		}
		if errors.Is(err, os.ErrDeadlineExceeded) && !t.quiet() {
			deadline = time.Time{}
			continue
		}
		if errors.Is(err, io.EOF) {
			closeWrite(dst)
			return
		}
		t.abort()
		return
	}
}

// write writes b with a deadline, so a peer that stops reading cannot hold
// the tunnel forever.
func (t *tunnel) write(dst net.Conn, b []byte) bool {
	_ = dst.SetWriteDeadline(time.Now().Add(t.idle))
	_, err := dst.Write(b)
	return err == nil
}

func (t *tunnel) abort() {
	_ = t.client.Close()
	_ = t.upstream.Close()
}

// closeWrite half-closes c when it can, else closes it.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		if cw.CloseWrite() == nil {
			return
		}
	}
	_ = c.Close()
}
