package mcpserver

import (
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPLimits bound the Streamable HTTP server: every phase of a
// connection, the connections in total and per peer, and the sessions. A
// zero field takes its default (Default*).
type HTTPLimits struct {
	// HeaderTimeout bounds the request line and headers, from the first
	// byte (and a connection that sends nothing at all).
	HeaderTimeout time.Duration
	// BodyTimeout bounds the whole request body, from the end of the
	// headers.
	BodyTimeout time.Duration
	// WriteTimeout bounds each write of a response: a client that stops
	// reading loses its connection. It is not a bound on the response: a
	// call's response waits for the command (up to the execution ceiling)
	// and an SSE stream stays open for as long as the session.
	WriteTimeout time.Duration
	// IdleTimeout closes a keep-alive connection between requests.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds the request line and headers.
	MaxHeaderBytes int
	// MaxBodyBytes bounds a request body.
	MaxBodyBytes int64
	// MaxConns bounds the open connections; ConnBudget bounds it further.
	MaxConns int
	// MaxConnsPerPeer bounds the open connections of one peer: the user
	// (uid) owning the client's socket on loopback, the remote address
	// otherwise.
	MaxConnsPerPeer int
	// MaxSessions bounds the open MCP sessions; an initialize past it is
	// refused with 503.
	MaxSessions int
	// SessionIdleTimeout closes a session that has had no request for
	// this long.
	SessionIdleTimeout time.Duration
}

// Defaults of HTTPLimits.
const (
	DefaultHeaderTimeout      = 5 * time.Second
	DefaultBodyTimeout        = 10 * time.Second
	DefaultWriteTimeout       = 30 * time.Second
	DefaultIdleTimeout        = 30 * time.Second
	DefaultMaxHeaderBytes     = 32 << 10
	DefaultMaxBodyBytes       = mcp.DefaultMaxRequestBodyBytes // 4 MiB
	DefaultMaxConns           = 512
	DefaultMaxConnsPerPeer    = 64
	DefaultMaxSessions        = 256
	DefaultSessionIdleTimeout = 30 * time.Minute
)

// withDefaults fills the zero fields.
func (l HTTPLimits) withDefaults() HTTPLimits {
	set := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	set(&l.HeaderTimeout, DefaultHeaderTimeout)
	set(&l.BodyTimeout, DefaultBodyTimeout)
	set(&l.WriteTimeout, DefaultWriteTimeout)
	set(&l.IdleTimeout, DefaultIdleTimeout)
	set(&l.SessionIdleTimeout, DefaultSessionIdleTimeout)
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if l.MaxBodyBytes <= 0 {
		l.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if l.MaxConns <= 0 {
		l.MaxConns = DefaultMaxConns
	}
	if l.MaxConnsPerPeer <= 0 {
		l.MaxConnsPerPeer = DefaultMaxConnsPerPeer
	}
	if l.MaxSessions <= 0 {
		l.MaxSessions = DefaultMaxSessions
	}
	return l
}

// BodyBytesFor is the body bound that lets a call carry stdin of up to
// stdinMax bytes: the default, or twice stdinMax (JSON escapes) plus room
// for the rest of the message when that is more.
func BodyBytesFor(stdinMax int64) int64 {
	return max(DefaultMaxBodyBytes, 2*stdinMax+MaxCommandBytes*2+64<<10)
}

// File descriptors kept for executions: the executor holds about a dozen
// per run (pipes to the helpers, pidfds, the cgroup), more while it
// starts one; the base covers the audit log, the sockets and the helpers
// of the gateway itself.
const (
	FDReserveBase    = 64
	FDReservePerExec = 32
	// MinConns is the smallest connection budget the gateway serves with.
	MinConns = 16
)

// FDReserve is how many descriptors the listener leaves for maxConcurrent
// executions and the gateway's own files.
func FDReserve(maxConcurrent int) int {
	return FDReserveBase + FDReservePerExec*max(maxConcurrent, 1)
}

// ConnBudget is how many connections may be open at once without dipping
// into reserve: the soft RLIMIT_NOFILE (the Go runtime raises it to the
// hard limit at start), minus the descriptors open now, minus reserve. It
// is an error when that leaves fewer than MinConns.
func ConnBudget(reserve int) (int, error) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, fmt.Errorf("RLIMIT_NOFILE: %w", err)
	}
	limit := int(min(rl.Cur, 1<<30))
	budget := limit - openFDs() - reserve
	if budget < MinConns {
		return budget, fmt.Errorf("RLIMIT_NOFILE is %d: with %d descriptors open and %d kept for executions, %d are left for connections (at least %d are needed); raise the limit (ulimit -n, systemd LimitNOFILE=) or lower exec.limits.max_concurrent",
			limit, openFDs(), reserve, budget, MinConns)
	}
	return budget, nil
}

// openFDs counts this process's open descriptors (0 where it cannot).
func openFDs() int {
	for _, dir := range []string{"/proc/self/fd", "/dev/fd"} {
		if ents, err := os.ReadDir(dir); err == nil {
			return len(ents)
		}
	}
	return 0
}
