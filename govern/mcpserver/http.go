package mcpserver

import (
	"bufio"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tokens maps bearer tokens to agent ids.
type Tokens struct {
	entries []tokenEntry
}

type tokenEntry struct {
	token []byte
	agent string
}

// MinTokenLength is the shortest bearer token accepted in a token file.
const MinTokenLength = 16

// NewTokens builds Tokens from a token → agent map.
func NewTokens(m map[string]string) Tokens {
	var t Tokens
	for tok, agent := range m {
		t.entries = append(t.entries, tokenEntry{token: []byte(tok), agent: agent})
	}
	return t
}

// Len is the number of tokens.
func (t Tokens) Len() int { return len(t.entries) }

// LoadTokens reads a token file: one `TOKEN AGENT_ID` per line, blank
// lines and lines starting with # ignored. The file must not be readable
// or writable by group or others (0600).
func LoadTokens(path string) (Tokens, error) {
	f, err := os.Open(path)
	if err != nil {
		return Tokens{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Tokens{}, err
	}
	if !fi.Mode().IsRegular() {
		return Tokens{}, fmt.Errorf("%s is not a regular file", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return Tokens{}, fmt.Errorf("%s has mode %04o: a token file must be readable by its owner only (chmod 600)", path, perm)
	}
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Fields(text)
		if len(fields) != 2 {
			return Tokens{}, fmt.Errorf("%s:%d: want `TOKEN AGENT_ID`, found %d fields", path, line, len(fields))
		}
		if len(fields[0]) < MinTokenLength {
			return Tokens{}, fmt.Errorf("%s:%d: the token is %d characters; at least %d", path, line, len(fields[0]), MinTokenLength)
		}
		if _, dup := m[fields[0]]; dup {
			return Tokens{}, fmt.Errorf("%s:%d: the token is listed twice", path, line)
		}
		m[fields[0]] = fields[1]
	}
	if err := sc.Err(); err != nil {
		return Tokens{}, fmt.Errorf("%s: %w", path, err)
	}
	if len(m) == 0 {
		return Tokens{}, fmt.Errorf("%s holds no tokens", path)
	}
	return NewTokens(m), nil
}

// Agent is the agent a token maps to; every entry is compared in constant
// time.
func (t Tokens) Agent(token string) (string, bool) {
	agent, ok := "", false
	for _, e := range t.entries {
		if subtle.ConstantTimeCompare(e.token, []byte(token)) == 1 {
			agent, ok = e.agent, true
		}
	}
	return agent, ok
}

func (t Tokens) verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	agent, ok := t.Agent(token)
	if !ok {
		return nil, fmt.Errorf("%w: unknown bearer token", auth.ErrInvalidToken)
	}
	return &auth.TokenInfo{UserID: agent}, nil
}

// Handler is the Streamable HTTP handler: Origin validated, a bearer token
// required (no valid token, 401 and no call), the token's agent id the
// caller of every call on the session.
func (s *Server) Handler(tokens Tokens) http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp },
		&mcp.StreamableHTTPOptions{PropagateRequestCancellation: true})
	authed := auth.RequireBearerToken(tokens.verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
	return checkOrigin(authed)
}

// checkOrigin refuses a request whose Origin header, when present, is not
// a localhost origin (DNS rebinding and browser cross-origin requests).
func checkOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" && !LocalOrigin(o) {
			http.Error(w, "forbidden: Origin "+o+" is not a localhost origin", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// LocalOrigin reports whether an Origin header names http(s)://localhost,
// 127.0.0.1 or [::1] (any port).
func LocalOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil || (u.Path != "" && u.Path != "/") {
		return false
	}
	switch u.Hostname() {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	return false
}

// CheckListenAddr checks an --http address: host and port both explicit.
// It reports whether the host is a loopback address.
func CheckListenAddr(addr string) (loopback bool, err error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("--http %q: %w (want HOST:PORT, e.g. 127.0.0.1:8765)", addr, err)
	}
	if host == "" {
		return false, fmt.Errorf("--http %q: name the host; 127.0.0.1:%s serves loopback only", addr, port)
	}
	if port == "" {
		return false, fmt.Errorf("--http %q: no port", addr)
	}
	if host == "localhost" {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}

// ServeHTTP serves the handler on l until ctx is done, then shuts down:
// no new calls, running calls finish or are cancelled after grace, then
// the listener and the connections close.
func (s *Server) ServeHTTP(ctx context.Context, l net.Listener, tokens Tokens, grace time.Duration) error {
	srv := &http.Server{Handler: s.Handler(tokens), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	dctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	s.Drain(dctx)
	sctx, cancel2 := context.WithTimeout(context.Background(), time.Second)
	defer cancel2()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close() // long-lived SSE streams
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// ServeStdio serves one session over t until the client disconnects or
// ctx is done; on ctx, running calls finish or are cancelled after grace
// before the transport closes. When the client disconnects its running
// calls are cancelled. Either way the Server is drained afterwards: a
// Server serves one stdio session in its lifetime.
func (s *Server) ServeStdio(ctx context.Context, t mcp.Transport, grace time.Duration) error {
	runCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- s.mcp.Run(runCtx, t) }()
	select {
	case err := <-errc:
		// The client went away: cancel what is still running.
		s.stopCall()
		s.Drain(context.Background())
		return err
	case <-ctx.Done():
	}
	dctx, dcancel := context.WithTimeout(context.Background(), grace)
	defer dcancel()
	s.Drain(dctx)
	// The last results are written after their handlers return: give
	// them a moment to reach the client before the transport closes.
	time.Sleep(settle)
	cancel()
	err := <-errc
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// settle is how long a stdio shutdown waits, after the last call returned,
// for its result to be written.
const settle = 200 * time.Millisecond

// StdioTransport is the process's own stdin and stdout: newline-delimited
// JSON-RPC (logs must go to stderr).
func StdioTransport() mcp.Transport { return &mcp.StdioTransport{} }
