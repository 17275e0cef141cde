// Package relay moves bytes both ways between two stream connections, as the
// egress proxy's CONNECT tunnels and the sandbox's egress bridge do.
package relay
