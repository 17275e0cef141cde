package mcpserver

import (
	"net"
	"strconv"
	"sync"
	"time"
)

// Refusal reasons of the connection limits (the reason label of
// mitrity_http_connections_refused_total).
const (
	RefusedPeerLimit  = "peer_limit"
	RefusedTotalLimit = "total_limit"
)

// limitListener accepts at most max connections at once, and at most
// perPeer from one peer. A connection past a limit is answered 503 and
// closed at once: it neither waits in the backlog (where the next
// legitimate client would wait behind it) nor holds a descriptor.
type limitListener struct {
	net.Listener
	max, perPeer int
	peer         func(net.Conn) (string, error)
	refused      func(reason string) // told of each refusal; may be nil
	// peerFailed is told, once, that a loopback peer's owner could not be
	// read (it then counts against the loopback address); may be nil.
	peerFailed func(error)
	peerOnce   sync.Once

	mu     sync.Mutex
	open   int
	byPeer map[string]int
}

// LimitListener wraps l so that at most max connections are open at once,
// perPeer from one peer (one local user on loopback); one past a bound is
// answered 503 and closed at once. The admin listener uses it.
func LimitListener(l net.Listener, max, perPeer int) net.Listener {
	return newLimitListener(l, max, perPeer, nil)
}

func newLimitListener(l net.Listener, max, perPeer int, refused func(reason string)) *limitListener {
	return &limitListener{Listener: l, max: max, perPeer: perPeer, peer: peerKey, refused: refused, byPeer: map[string]int{}}
}

// Open is the number of connections open now.
func (l *limitListener) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key, perr := l.peer(c)
		if perr != nil && l.peerFailed != nil {
			l.peerOnce.Do(func() { l.peerFailed(perr) })
		}
		l.mu.Lock()
		reason := ""
		switch {
		case l.open >= l.max:
			reason = RefusedTotalLimit
		case l.byPeer[key] >= l.perPeer:
			reason = RefusedPeerLimit
		default:
			l.open++
			l.byPeer[key]++
		}
		l.mu.Unlock()
		if reason == "" {
			return &limitConn{Conn: c, l: l, key: key}, nil
		}
		if l.refused != nil {
			l.refused(reason)
		}
		refuse(c, reason)
	}
}

func (l *limitListener) release(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if l.byPeer[key]--; l.byPeer[key] <= 0 {
		delete(l.byPeer, key)
	}
}

// refuse answers a connection past a limit with a 503 and closes it. The
// write goes to the socket's buffer; it never waits for the client.
func refuse(c net.Conn, reason string) {
	msg := "too many connections from this user; close some and retry\n"
	if reason == RefusedTotalLimit {
		msg = "the gateway is at its connection limit; retry shortly\n"
	}
	_ = c.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
	_, _ = c.Write([]byte("HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nRetry-After: 5\r\n" +
		"Content-Length: " + strconv.Itoa(len(msg)) + "\r\n\r\n" + msg))
	_ = c.Close()
}

type limitConn struct {
	net.Conn
	l    *limitListener
	key  string
	once sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.key) })
	return err
}

// peerKey names the peer a connection counts against. On loopback every
// client has the same address and a port of its own, so neither says who
// it is: there the peer is the user owning the client's socket (the
// kernel's socket table knows it, as identd did). Elsewhere it is the
// remote IP address. A loopback connection whose owner cannot be read
// counts against the loopback address, and the error says why.
func peerKey(c net.Conn) (string, error) {
	remote, ok1 := c.RemoteAddr().(*net.TCPAddr)
	local, ok2 := c.LocalAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return "addr:" + c.RemoteAddr().String(), nil
	}
	if !remote.IP.IsLoopback() {
		return "addr:" + remote.IP.String(), nil
	}
	uid, err := peerUID(local, remote)
	if err != nil {
		return "addr:" + remote.IP.String(), err
	}
	return "uid:" + strconv.FormatUint(uint64(uid), 10), nil
}
