package relay

import (
	"errors"
	"io"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

const (
	// pipeSize is the splice pipe's capacity (F_SETPIPE_SZ), the most one
	// splice moves (as Go's own splice). 256 KiB measured alike; 128 KiB
	// and the default 64 KiB cost more CPU per MB than read/write.
	pipeSize = 1 << 20
	// idlePipes bounds the pipes kept for reuse. A pipe is held only while
	// its direction has bytes to move, so a relay waiting on a quiet
	// connection holds none: the kernel counts pipe capacity against the
	// user (fs.pipe-user-pages-soft) whether or not it holds data.
	idlePipes = 4
)

// copy moves src to dst until src's EOF (nil) or an error: with splice(2)
// when both are stream sockets, else (or once no pipe can be had) with
// readWrite.
func (d *direction) copy() error {
	if !spliceable(d.src) || !spliceable(d.dst) {
		return d.readWrite()
	}
	err := d.splice()
	if errors.Is(err, errNoSplice) {
		return d.readWrite()
	}
	return err
}

// errNoSplice: no pipe could be made, or the kernel refused to splice
// these sockets, with the pipe empty and nothing of this burst read; the
// copy can go on with read and write.
var errNoSplice = errors.New("splice unavailable")

// spliceable reports whether c is a TCP or Unix stream socket.
func spliceable(c net.Conn) bool {
	switch c.(type) {
	case *net.TCPConn, *net.UnixConn:
	default:
		return false
	}
	rc, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		return false
	}
	typ := -1
	if rc.Control(func(fd uintptr) {
		typ, _ = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TYPE)
	}) != nil {
		return false
	}
	return typ == unix.SOCK_STREAM
}

// splice moves src to dst through a pipe: splice(2) from src into the pipe,
// then from the pipe into dst until it is empty, so that the bytes are
// never copied into this process. The pipe is taken when src has bytes and
// given back when it is empty and src has none.
func (d *direction) splice() error {
	src, err := d.src.(syscall.Conn).SyscallConn()
	if err != nil {
		return errNoSplice
	}
	dst, err := d.dst.(syscall.Conn).SyscallConn()
	if err != nil {
		return errNoSplice
	}
	var p *pipe
	defer func() { p.release() }()
	for {
		d.beforeRead()
		var n int
		var serr error
		err := src.Read(func(fd uintptr) bool {
			if p == nil {
				if p, serr = getPipe(); serr != nil {
					return true
				}
			}
			n, serr = spliceFrom(int(fd), p.w)
			if serr == unix.EAGAIN { // nothing to read: wait without the pipe
				p.release()
				p = nil
				return false
			}
			return true
		})
		d.read(n)
		switch {
		case err != nil:
		case p == nil:
			return errNoSplice
		case serr == unix.EINVAL:
			// Not a socket the kernel splices from; nothing was consumed
			// and the pipe is empty.
			return errNoSplice
		case serr != nil:
			err = serr
		case n == 0:
			return nil // EOF
		}
		if err != nil {
			if d.stillBusy(err) {
				continue
			}
			return err
		}
		p.data += n
		for p.data > 0 {
			d.beforeWrite()
			m := 0
			serr = nil
			err := dst.Write(func(fd uintptr) bool {
				m, serr = spliceTo(p.r, int(fd), p.data)
				if serr == unix.EAGAIN {
					return false
				}
				if m == 0 && serr == nil {
					serr = io.ErrNoProgress // a socket that takes nothing
				}
				p.data -= m
				return true
			})
			if err == nil {
				err = serr
			}
			if err != nil {
				return err
			}
			// A pipe's worth can take a slow destination a while: what it
			// takes is progress, for the idle time and the write deadline.
			d.wrote(m)
		}
	}
}

// spliceFrom moves what socket fd has, up to the pipe's capacity, into the
// pipe's write end w.
func spliceFrom(fd, w int) (int, error) {
	for {
		n, err := unix.Splice(fd, nil, w, nil, pipeSize, unix.SPLICE_F_NONBLOCK)
		if err != unix.EINTR {
			return max(int(n), 0), err
		}
	}
}

// spliceTo moves up to n bytes from the pipe's read end r into socket fd.
func spliceTo(r, fd, n int) (int, error) {
	for {
		m, err := unix.Splice(r, nil, fd, nil, n, unix.SPLICE_F_NONBLOCK)
		if err != unix.EINTR {
			return max(int(m), 0), err
		}
	}
}

// pipe is a splice pipe: its ends, and the bytes in it.
type pipe struct {
	r, w int
	data int
}

var pipes = make(chan *pipe, idlePipes)

func getPipe() (*pipe, error) {
	select {
	case p := <-pipes:
		return p, nil
	default:
	}
	return newPipe()
}

// newPipe makes a pipe of pipeSize; tests replace it.
var newPipe = func() (*pipe, error) {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return nil, err
	}
	// A smaller pipe (the default, or two pages for a user over
	// fs.pipe-user-pages-soft) would splice slower than read/write copies.
	if _, err := unix.FcntlInt(uintptr(fds[0]), unix.F_SETPIPE_SZ, pipeSize); err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return nil, err
	}
	return &pipe{r: fds[0], w: fds[1]}, nil
}

// release gives an empty pipe back for reuse and closes one that still
// holds bytes (a direction that failed mid-way). A nil pipe is a no-op.
func (p *pipe) release() {
	if p == nil {
		return
	}
	if p.data == 0 {
		select {
		case pipes <- p:
			return
		default:
		}
	}
	unix.Close(p.r)
	unix.Close(p.w)
}
