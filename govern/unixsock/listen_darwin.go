//go:build darwin

package unixsock

import "net"

// listen binds the socket by its path: macOS has no /proc/self/fd.
func listen(path string, o Options) (net.Listener, error) { return listenByPath(path, o) }
