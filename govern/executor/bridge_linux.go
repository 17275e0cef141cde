package executor

import (
	"net"

	"github.com/mitrity/mitrity/govern/sandbox"
	"github.com/mitrity/mitrity/govern/sandbox/initproc"
)

// serveHostBridge is mode none's way to the run's proxy: a listener on the
// host's loopback, on a port the kernel picks, forwarding each connection
// to the proxy's socket with the sandbox's own bridge. stop closes the
// port, drops every connection through it and waits.
func serveHostBridge(socket string) (port int, stop func(), err error) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return 0, nil, err
	}
	return ln.Addr().(*net.TCPAddr).Port, sandbox.ServeBridge(ln, socket), nil
}

// proxyEnv points the proxy variables at the bridge and empties NO_PROXY,
// exactly as the sandbox's init does.
func proxyEnv(env []string, port int) []string { return initproc.WithProxy(env, port, false) }
