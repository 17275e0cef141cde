package egress

import (
	"errors"
	"net"
	"sync"
	"syscall"

	"github.com/mitrity/mitrity/govern/peer"
)

// capListener caps concurrent connections: Accept waits for a free slot,
// and a connection frees its slot when closed. Unlike x/net's
// LimitListener its connections keep CloseWrite, which tunnels need.
type capListener struct {
	net.Listener
	sem  chan struct{}
	done chan struct{}
	once sync.Once
}

func newCapListener(l net.Listener, n int) *capListener {
	return &capListener{Listener: l, sem: make(chan struct{}, n), done: make(chan struct{})}
}

func (l *capListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &capConn{Conn: c, release: func() { <-l.sem }}, nil
}

func (l *capListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

type capConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *capConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// CloseWrite half-closes the connection when the underlying one can.
func (c *capConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}

// hostPeers accepts only connections from processes in this process's own
// pid and user namespaces. The proxy's only client is the sandbox's bridge,
// which runs outside the sandbox (in the gateway, or its sandbox helper):
// a process inside any sandbox that reached the socket (the same uid, so
// the socket's mode does not stop it) is refused, closed.
type hostPeers struct {
	net.Listener
	refused func(peer.Peer, error)
}

func (l hostPeers) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		p, err := peerOf(c)
		if err == nil {
			var same bool
			if same, err = peer.SameNamespaces(p); err == nil && !same {
				err = errors.New("the peer is in another pid or user namespace than the proxy's")
			}
		}
		if err == nil {
			return c, nil
		}
		if l.refused != nil {
			l.refused(p, err)
		}
		c.Close()
	}
}

func peerOf(c net.Conn) (peer.Peer, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return peer.Peer{UID: -1}, errors.New("not a socket")
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return peer.Peer{UID: -1}, err
	}
	p := peer.Peer{UID: -1}
	if cerr := raw.Control(func(fd uintptr) { p, err = peer.Of(int(fd)) }); cerr != nil {
		return p, cerr
	}
	return p, err
}
