package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mitrity/mitrity/govern/policy"
	"github.com/mitrity/mitrity/govern/regfile"
)

// Tokens maps bearer tokens to agent ids. Copies share one set, which
// Replace swaps (a reload of the token file).
type Tokens struct {
	set *tokenSet
}

type tokenSet struct {
	entries atomic.Pointer[[]tokenEntry]
}

type tokenEntry struct {
	token []byte
	agent string
}

// MinTokenLength is the shortest bearer token accepted in a token file.
const MinTokenLength = 16

// NewTokens builds Tokens from a token → agent map.
func NewTokens(m map[string]string) Tokens {
	entries := make([]tokenEntry, 0, len(m))
	for tok, agent := range m {
		entries = append(entries, tokenEntry{token: []byte(tok), agent: agent})
	}
	t := Tokens{set: &tokenSet{}}
	t.set.entries.Store(&entries)
	return t
}

func (t Tokens) list() []tokenEntry {
	if t.set == nil {
		return nil
	}
	return *t.set.entries.Load()
}

// Len is the number of tokens.
func (t Tokens) Len() int { return len(t.list()) }

// Replace makes t (and every copy of it) answer with next's tokens from
// now on: a token no longer listed is refused on its next request, on a
// session it opened too.
func (t Tokens) Replace(next Tokens) { t.set.entries.Store(next.set.entries.Load()) }

// LoadTokens reads a token file: one `TOKEN AGENT_ID` per line, blank
// lines and lines starting with # ignored. The file must not be readable
// or writable by group or others (0600).
func LoadTokens(path string) (Tokens, error) {
	f, err := regfile.Open(path)
	if err != nil {
		return Tokens{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Tokens{}, err
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
		if !policy.ValidAgentID(fields[1]) {
			return Tokens{}, fmt.Errorf("%s:%d: agent id %q: an agent id is 1 to 128 letters, digits, '_', '-', '.', '@' or ':'", path, line, fields[1])
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
	for _, e := range t.list() {
		if subtle.ConstantTimeCompare(e.token, []byte(token)) == 1 {
			agent, ok = e.agent, true
		}
	}
	return agent, ok
}

// requestContextKey holds, in the TokenInfo of an authenticated request,
// that HTTP request's context: it ends when the client's connection goes
// away (or the request is answered). The SDK hands each call the
// TokenInfo of the POST that carried it, so the call's handler can tie
// its own context to that connection.
const requestContextKey = "mitrity.http_request_context"

func (t Tokens) verify(_ context.Context, token string, r *http.Request) (*auth.TokenInfo, error) {
	agent, ok := t.Agent(token)
	if !ok {
		return nil, fmt.Errorf("%w: unknown bearer token", auth.ErrInvalidToken)
	}
	return &auth.TokenInfo{UserID: agent, Extra: map[string]any{requestContextKey: r.Context()}}, nil
}

// httpRequestContext is the context of the HTTP request that carried a
// call, or nil (stdio).
func httpRequestContext(req *mcp.CallToolRequest) context.Context {
	if req == nil || req.Extra == nil || req.Extra.TokenInfo == nil {
		return nil
	}
	ctx, _ := req.Extra.TokenInfo.Extra[requestContextKey].(context.Context)
	return ctx
}

// Handler is the Streamable HTTP handler: Origin validated, a bearer token
// required (no valid token, 401, the connection closed, and no call), the
// token's agent id the caller of every call on the session. Each write of
// a response must complete within the write bound, a body must arrive
// within the body bound, and a new session past the session bound is
// refused with 503.
func (s *Server) Handler(tokens Tokens) http.Handler {
	lim := s.limits
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp },
		&mcp.StreamableHTTPOptions{PropagateRequestCancellation: true, SessionTimeout: lim.SessionIdleTimeout,
			MaxRequestBodyBytes: lim.MaxBodyBytes})
	next := s.limitSessions(h)
	next = readBody(next, lim)
	next = auth.RequireBearerToken(tokens.verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(next)
	next = checkOrigin(next)
	return bound(next, lim)
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
//
// Every phase of a connection is bounded (Options.HTTP): the headers, the
// body, each write, the time idle between requests; and l is wrapped so
// that at most MaxConns connections are open, MaxConnsPerPeer per peer.
func (s *Server) ServeHTTP(ctx context.Context, l net.Listener, tokens Tokens, grace time.Duration) error {
	lim := s.limits
	ll := newLimitListener(l, lim.MaxConns, lim.MaxConnsPerPeer, s.metrics.ConnRefused)
	ll.peerFailed = func(err error) {
		s.log.Warn().Err(err).Msg("the user behind a loopback connection cannot be read: loopback clients share one connection limit " +
			"(a systemd unit that sets RestrictAddressFamilies= needs AF_NETLINK)")
	}
	s.metrics.SetServing(ll.Open, s.Sessions)
	srv := &http.Server{
		Handler:           s.Handler(tokens),
		ReadHeaderTimeout: lim.HeaderTimeout,
		IdleTimeout:       lim.IdleTimeout,
		MaxHeaderBytes:    lim.MaxHeaderBytes,
		ErrorLog:          log.New(s.log, "mcp http: ", 0),
		// No ReadTimeout and no WriteTimeout: they would bound the whole
		// request and response, and a call legitimately runs for up to
		// the execution ceiling while an SSE stream stays open. The body
		// and each write are bounded by the handler instead.
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ll) }()
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

// bound bounds each write of a response to lim.WriteTimeout (a client
// that stops reading loses the connection, and the writer its goroutine)
// and the request body to lim.BodyTimeout, whoever reads it: readBody, or
// net/http discarding what a refused request sent. A 401 or 403 closes
// the connection: a client refused at the door keeps nothing open.
func bound(next http.Handler, lim HTTPLimits) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bw := &boundWriter{ResponseWriter: w, rc: http.NewResponseController(w), d: lim.WriteTimeout}
		bw.arm()
		_ = bw.rc.SetReadDeadline(time.Now().Add(lim.BodyTimeout))
		next.ServeHTTP(bw, r)
		// What the handler left buffered is written after it returns.
		bw.arm()
	})
}

type boundWriter struct {
	http.ResponseWriter
	rc *http.ResponseController // of the wrapped writer
	d  time.Duration
}

func (w *boundWriter) arm() { _ = w.rc.SetWriteDeadline(time.Now().Add(w.d)) }

func (w *boundWriter) WriteHeader(code int) {
	if code == http.StatusUnauthorized || code == http.StatusForbidden {
		// Nor is the rest of its body waited for.
		w.Header().Set("Connection", "close")
		_ = w.rc.SetReadDeadline(time.Now())
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *boundWriter) Write(p []byte) (int, error) {
	w.arm()
	return w.ResponseWriter.Write(p)
}

// FlushError is what http.ResponseController.Flush calls (the SDK flushes
// every SSE event that way).
func (w *boundWriter) FlushError() error {
	w.arm()
	return w.rc.Flush()
}

func (w *boundWriter) Flush() { _ = w.FlushError() }

// Unwrap lets http.ResponseController reach the connection's deadlines.
func (w *boundWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// readBody reads the whole request body within lim.MaxBodyBytes, and the
// deadline bound set, before anything else sees it (a body trickled a
// byte at a time holds its connection no longer than the bound), then
// clears the read deadline: while the call runs, the server's read of the
// connection only waits to see the client go away. A body that fails
// leaves the deadline expired, so nothing waits for the rest of it.
func readBody(next http.Handler, lim HTTPLimits) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if r.Body != nil && r.Body != http.NoBody {
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, lim.MaxBodyBytes))
			if err != nil {
				_ = rc.SetReadDeadline(time.Now())
				w.Header().Set("Connection", "close")
				var mbe *http.MaxBytesError
				switch {
				case errors.As(err, &mbe):
					http.Error(w, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit), http.StatusRequestEntityTooLarge)
				case errors.Is(err, os.ErrDeadlineExceeded):
					http.Error(w, fmt.Sprintf("the request body did not arrive within %v", lim.BodyTimeout), http.StatusRequestTimeout)
				default:
					http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
				}
				return
			}
			// The message checks of the stdio transport (ids, members,
			// batches; see checkMessage), so that both transports accept
			// the same messages; a refused one gets its JSON-RPC error.
			if r.Method == http.MethodPost {
				if v := checkMessage(body); v.reply != nil || v.drop {
					reply := v.reply
					if reply == nil {
						reply = errorResponse(nullID, jsonrpc.CodeInvalidRequest, "Invalid Request: "+v.why)
					}
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusBadRequest)
					_, _ = w.Write(append(reply, '\n'))
					return
				}
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		_ = rc.SetReadDeadline(time.Time{})
		next.ServeHTTP(w, r)
	})
}

// Sessions is the number of MCP sessions open.
func (s *Server) Sessions() int {
	n := 0
	for range s.mcp.Sessions() {
		n++
	}
	return n
}

// CodeSessionLimit is the JSON-RPC error code of an initialize refused
// because the session bound is reached (implementation-defined range).
const CodeSessionLimit = -32000

// limitSessions refuses a request that would open a session (a POST
// without Mcp-Session-Id) once MaxSessions are open or being opened: 503,
// with a JSON-RPC error the client can show.
func (s *Server) limitSessions(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" {
			next.ServeHTTP(w, r)
			return
		}
		s.sessMu.Lock()
		// A session being opened is counted twice once the SDK has it:
		// the bound may refuse early during a burst, never late.
		if n := s.Sessions() + s.opening; n >= s.limits.MaxSessions {
			s.sessMu.Unlock()
			s.metrics.SessionRefused()
			refuseSession(w, r, s.limits)
			return
		}
		s.opening++
		s.sessMu.Unlock()
		defer func() {
			s.sessMu.Lock()
			s.opening--
			s.sessMu.Unlock()
		}()
		next.ServeHTTP(w, r)
	})
}

func refuseSession(w http.ResponseWriter, r *http.Request, lim HTTPLimits) {
	id := json.RawMessage("null")
	if body, err := io.ReadAll(r.Body); err == nil {
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(body, &m) == nil && validID(m.ID) {
			id = m.ID
		}
	}
	msg := fmt.Sprintf("the gateway has %d MCP sessions open, its limit: end sessions you no longer use (HTTP DELETE with their Mcp-Session-Id), "+
		"or retry once idle ones expire (after %v without a request)", lim.MaxSessions, lim.SessionIdleTimeout)
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": CodeSessionLimit, "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", "60")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write(b)
}
