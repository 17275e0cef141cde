package egress

import (
	"net"
	"sync"
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
