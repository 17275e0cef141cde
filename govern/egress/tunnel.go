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
//
// The copy is the whole cost of a tunnel (the kernel's two copies per
// byte), so nothing is added per chunk: reads and writes go to the
// sockets themselves rather than through the connection-cap wrapper, the
// buffer is pooled, and the deadlines move only when an eighth of the idle
// timeout has passed (each move is a runtime timer update). splice(2) was
// measured and not used: on loopback it cost more CPU per byte than
// read/write (docs/egress.md).
func (t *tunnel) pipe(dst, src net.Conn, early []byte) {
	rdst, rsrc := rawConn(dst), rawConn(src)
	// A deadline is moved when less than keep of it is left.
	keep := t.idle - t.idle/8
	now := time.Now()
	var rdl, wdl time.Time
	write := func(b []byte) bool {
		if wdl.Sub(now) < keep {
			wdl = now.Add(t.idle)
			_ = rdst.SetWriteDeadline(wdl)
		}
		_, err := rdst.Write(b)
		return err == nil
	}
	if len(early) > 0 && !write(early) {
		t.abort()
		return
	}
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	for {
		if rdl.Sub(now) < keep {
			rdl = now.Add(t.idle)
			_ = rsrc.SetReadDeadline(rdl)
		}
		n, err := rsrc.Read(buf)
		now = time.Now()
		if n > 0 {
			t.last.Store(now.UnixNano())
			if !write(buf[:n]) {
				t.abort()
				return
			}
		}
		if err == nil {
			continue
		}
		if errors.Is(err, os.ErrDeadlineExceeded) && !t.quiet() {
			rdl = time.Time{}
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

// rawConn is the socket under the connection-cap wrapper, for the copy
// loop; closing still goes through the wrapper, which frees the slot.
func rawConn(c net.Conn) net.Conn {
	if cc, ok := c.(*capConn); ok {
		return cc.Conn
	}
	return c
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
