package sandbox

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/mitrity/mitrity/govern/egress/relay"
)

// maxBridgeConns bounds the connections the bridge forwards at once.
const maxBridgeConns = 256

// bridge is the egress bridge. Its listener is a socket of the sandbox's
// network namespace (its loopback, where the proxy variables point),
// opened by the sandbox's init and handed out over a socketpair; the
// bridge runs here, outside the sandbox, and forwards each connection byte
// for byte to the egress proxy's Unix socket. So the socket is never bound
// into the sandbox, and every process of the sandbox stays under the filter
// that denies AF_UNIX sockets.
type bridge struct {
	ln    net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]bool
}

// receiveListener reads the listener init sends on the socketpair end.
func receiveListener(end *os.File) (net.Listener, error) {
	fd, err := receiveFD(end, "the bridge")
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "sandbox-listener")
	defer f.Close()
	return net.FileListener(f)
}

// receiveFD reads the one descriptor init sends on a socketpair end (what
// names it in errors). The end is non-blocking, and the wait for init is
// in the runtime's poller, not in recvmsg(2): see govern/pollfd.
func receiveFD(end *os.File, what string) (int, error) {
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4))
	rc, err := end.SyscallConn()
	if err != nil {
		return -1, err
	}
	var n, oobn int
	if rerr := rc.Read(func(fd uintptr) bool {
		n, oobn, _, _, err = unix.Recvmsg(int(fd), buf, oob, unix.MSG_CMSG_CLOEXEC|unix.MSG_DONTWAIT)
		return err != unix.EAGAIN
	}); rerr != nil {
		return -1, rerr
	}
	if err != nil {
		return -1, err
	}
	if n == 0 {
		return -1, fmt.Errorf("the sandbox closed %s before handing it out", what)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return -1, fmt.Errorf("no descriptor in %s's message", what)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return -1, fmt.Errorf("no descriptor in %s's message", what)
	}
	return fds[0], nil
}

// serveBridge forwards every connection accepted on ln to socket until
// close is called.
func serveBridge(ln net.Listener, socket string) *bridge {
	b := &bridge{ln: ln, conns: map[net.Conn]bool{}}
	sem := make(chan struct{}, maxBridgeConns)
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					continue
				}
				return
			}
			select {
			case sem <- struct{}{}:
			default:
				c.Close() // too many at once
				continue
			}
			b.wg.Add(1)
			go func() {
				defer b.wg.Done()
				defer func() { <-sem }()
				b.forward(c, socket)
			}()
		}
	}()
	return b
}

// ServeBridge forwards every connection accepted on ln to the Unix socket
// at socket, as the sandbox's egress bridge does, until stop is called;
// stop closes ln, drops every open connection and waits. The executor
// serves mode none's bridge with it, on the host's loopback.
func ServeBridge(ln net.Listener, socket string) (stop func()) {
	return serveBridge(ln, socket).close
}

func (b *bridge) track(c net.Conn, add bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if add {
		b.conns[c] = true
	} else {
		delete(b.conns, c)
	}
}

// close stops accepting, drops every open connection and waits.
func (b *bridge) close() {
	if b == nil {
		return
	}
	b.ln.Close()
	b.mu.Lock()
	for c := range b.conns {
		c.Close()
	}
	b.mu.Unlock()
	b.wg.Wait()
}

// forward relays c and a new connection to socket both ways
// (relay.Run, as the proxy's tunnels do: splice(2) between the two
// sockets, half-closes passed on so request/response protocols finish
// cleanly, an error on either side closing both).
func (b *bridge) forward(c net.Conn, socket string) {
	b.track(c, true)
	defer b.track(c, false)
	defer c.Close()
	u, err := net.Dial("unix", socket)
	if err != nil {
		return
	}
	b.track(u, true)
	defer b.track(u, false)
	relay.Run(c, u, relay.Options{})
}
