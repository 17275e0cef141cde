package relay

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// bufSize is the read/write loop's buffer, per direction while it
	// copies.
	bufSize = 256 << 10
	// unixSendBuf is asked of every Unix socket relayed (SO_SNDBUF; the
	// kernel doubles it and caps it at net.core.wmem_max). A Unix stream
	// socket holds what its sender's buffer allows and no more; with the
	// default (net.core.wmem_default, 208 KiB) between the bridge and the
	// proxy, each woke about 1.7 times as often per MB and spent 1.4-1.7
	// times the CPU. TCP sockets are left to the kernel's autotuning.
	unixSendBuf = 1 << 20
)

// Options tune Run. The zero value relays until both sides are done.
type Options struct {
	// Idle ends the relay once neither direction has moved a byte for this
	// long; zero means never. It is the relay's, not a direction's: a long
	// download with a silent client is not idle.
	Idle time.Duration
	// Early is written to b before anything read from a: bytes the caller
	// already read from a (a client's eager TLS ClientHello sent right
	// behind its CONNECT).
	Early []byte
}

// Run relays a and b both ways until both directions end, then closes both.
// At one side's EOF it half-closes the other (CloseWrite), so the other
// direction can finish: a request sent, its response still streaming. Any
// other end of a direction (an error, a Close from elsewhere, the idle
// timeout) closes both connections, which ends the other direction too.
//
// On Linux, between two TCP or Unix stream sockets, the bytes move with
// splice(2) through a pipe and never enter this process; otherwise (or when
// no pipe can be had) with read and write through a buffer. A Unix socket's
// send buffer is raised to unixSendBuf.
func Run(a, b net.Conn, o Options) {
	for _, c := range []net.Conn{a, b} {
		if uc, ok := c.(*net.UnixConn); ok {
			_ = uc.SetWriteBuffer(unixSendBuf)
		}
	}
	r := &relay{a: a, b: b, idle: o.Idle, keep: o.Idle - o.Idle/8}
	r.touch()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		r.pipe(a, b, nil)
	}()
	r.pipe(b, a, o.Early)
	wg.Wait()
	_ = a.Close()
	_ = b.Close()
}

type relay struct {
	a, b net.Conn
	idle time.Duration
	// keep: a deadline is moved only when less than keep of it is left, so
	// a busy direction updates its runtime timer every idle/8, not per
	// chunk.
	keep time.Duration
	last atomic.Int64 // unix nanos of the last byte moved, either way
}

func (r *relay) touch() { r.last.Store(time.Now().UnixNano()) }

func (r *relay) quiet() bool {
	return time.Since(time.Unix(0, r.last.Load())) >= r.idle
}

func (r *relay) abort() {
	_ = r.a.Close()
	_ = r.b.Close()
}

// pipe copies src to dst: early first, then src until its EOF, which
// half-closes dst. Any other end closes both connections.
func (r *relay) pipe(dst, src net.Conn, early []byte) {
	d := &direction{relay: r, dst: dst, src: src, now: time.Now()}
	if len(early) > 0 {
		d.beforeWrite()
		if _, err := dst.Write(early); err != nil {
			r.abort()
			return
		}
	}
	if err := d.copy(); err != nil {
		r.abort()
		return
	}
	closeWrite(dst)
}

// direction is one way's state.
type direction struct {
	*relay
	dst, src net.Conn
	now      time.Time // when the last read or write returned
	rdl, wdl time.Time // the deadlines last set
}

// beforeRead moves src's read deadline when less than keep of it is left.
func (d *direction) beforeRead() {
	if d.idle > 0 && d.rdl.Sub(d.now) < d.keep {
		d.rdl = d.now.Add(d.idle)
		_ = d.src.SetReadDeadline(d.rdl)
	}
}

// beforeWrite moves dst's write deadline when less than keep of it is
// left: a destination that takes nothing for the idle time ends the relay.
func (d *direction) beforeWrite() {
	if d.idle > 0 && d.wdl.Sub(d.now) < d.keep {
		d.wdl = d.now.Add(d.idle)
		_ = d.dst.SetWriteDeadline(d.wdl)
	}
}

// read notes that a read returned, having moved n bytes: when it moved
// any, the relay is not idle.
func (d *direction) read(n int) {
	if d.idle == 0 {
		return
	}
	d.now = time.Now()
	if n > 0 {
		d.last.Store(d.now.UnixNano())
	}
}

// wrote notes that a write moved n bytes.
func (d *direction) wrote(n int) { d.read(n) }

// stillBusy reports whether err is src's read deadline firing while the
// other direction was not quiet, so this one should keep waiting.
func (d *direction) stillBusy(err error) bool {
	if d.idle == 0 || !errors.Is(err, os.ErrDeadlineExceeded) || d.quiet() {
		return false
	}
	d.rdl = time.Time{}
	return true
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, bufSize); return &b }}

// readWrite copies src to dst through a pooled buffer until src's EOF
// (nil) or an error.
func (d *direction) readWrite() error {
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	for {
		d.beforeRead()
		n, err := d.src.Read(buf)
		d.read(n)
		if n > 0 {
			d.beforeWrite()
			if _, werr := d.dst.Write(buf[:n]); werr != nil {
				return werr
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF):
			return nil
		case !d.stillBusy(err):
			return err
		}
	}
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
