// Package peer is the process at the other end of a Unix socket: its uid
// and the namespaces it runs in, read without racing its exit. A sandboxed
// command runs as the same uid as the gateway that started it, so a
// socket that must refuse it looks at more than the uid.
package peer
