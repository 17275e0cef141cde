// Package pollfd keeps a long-running process's waits out of blocking
// system calls: standard input and output that are pipes or sockets are
// read and written through the runtime's poller, and a child's exit is
// awaited on a pidfd, so a goroutine that waits parks instead of holding
// an OS thread in read(2), write(2) or waitid(2).
//
// Why: since Go 1.26 the scheduler no longer marks a P as in a system
// call; a stop-the-world retakes the P of a goroutine in a system call
// once, before it waits, and a goroutine checks for a pending
// stop-the-world before it marks itself as in one. A goroutine that
// enters a blocking call in between keeps its P, and the stop-the-world
// (every garbage collection starts with one) waits for the call to return:
// the whole process stands still until the next line on stdin, or until
// the child exits. That was seen here as an upstream MCP server stuck for
// seconds in "stopping the world" with its stdin reader in read(2) (4
// tools/calls in about 1.3 million timed out), and it holds for the gateway's
// own stdin and for its waits on the commands it runs, whose output pipes
// fill while the gateway stands still (go1.27.3 has the same code).
package pollfd
