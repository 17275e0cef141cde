package egress

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// Proxy defaults. A proxy serves one execution, so the bounds are about a
// misbehaving sandbox starving the host, not about fairness.
const (
	DefaultMaxConns       = 256
	DefaultIdleTimeout    = 5 * time.Minute
	DefaultHeaderTimeout  = 10 * time.Second
	DefaultMaxHeaderBytes = 32 << 10
	// closeWait bounds how long Close waits for handlers still deciding, so
	// that the report it precedes is final.
	closeWait = 5 * time.Second
)

// Proxy is an HTTP forward proxy in front of a Checker: CONNECT host:port
// and absolute-form plain HTTP, nothing else. Bodies are not inspected and
// TLS is not terminated; a destination is allowed or denied as a whole.
type Proxy struct {
	checker        *Checker
	log            zerolog.Logger
	onDeny         func(Denial)
	maxConns       int
	idleTimeout    time.Duration
	headerTimeout  time.Duration
	maxHeaderBytes int

	srv *http.Server
	rec recorder

	mu       sync.Mutex
	closed   bool
	handlers sync.WaitGroup
	tunnels  map[io.Closer]struct{}
}

// ProxyOption configures a Proxy.
type ProxyOption func(*Proxy) error

// WithLogger sets where the proxy's one line per decision goes.
func WithLogger(l zerolog.Logger) ProxyOption {
	return func(p *Proxy) error { p.log = l; return nil }
}

// WithDenialHook is called once per refused connection, synchronously on
// the connection's goroutine: keep it short. nil means no hook.
func WithDenialHook(f func(Denial)) ProxyOption {
	return func(p *Proxy) error { p.onDeny = f; return nil }
}

// WithMaxConns caps concurrent client connections; more wait in accept.
func WithMaxConns(n int) ProxyOption {
	return func(p *Proxy) error {
		if n < 1 {
			return errors.New("max conns must be at least 1")
		}
		p.maxConns = n
		return nil
	}
}

// WithIdleTimeout closes a tunnel when neither direction moved a byte for
// d, and a client connection idle between requests after d.
func WithIdleTimeout(d time.Duration) ProxyOption {
	return func(p *Proxy) error {
		if d <= 0 {
			return errors.New("idle timeout must be positive")
		}
		p.idleTimeout = d
		return nil
	}
}

// WithHeaderTimeout bounds reading a request's headers.
func WithHeaderTimeout(d time.Duration) ProxyOption {
	return func(p *Proxy) error {
		if d <= 0 {
			return errors.New("header timeout must be positive")
		}
		p.headerTimeout = d
		return nil
	}
}

// WithMaxHeaderBytes bounds the size of a request's headers.
func WithMaxHeaderBytes(n int) ProxyOption {
	return func(p *Proxy) error {
		if n < 1024 {
			return errors.New("max header bytes must be at least 1024")
		}
		p.maxHeaderBytes = n
		return nil
	}
}

// NewProxy returns a proxy deciding with c. Serve starts it.
func NewProxy(c *Checker, opts ...ProxyOption) (*Proxy, error) {
	if c == nil {
		return nil, errors.New("nil checker")
	}
	p := &Proxy{
		checker:        c,
		log:            zerolog.Nop(),
		maxConns:       DefaultMaxConns,
		idleTimeout:    DefaultIdleTimeout,
		headerTimeout:  DefaultHeaderTimeout,
		maxHeaderBytes: DefaultMaxHeaderBytes,
		tunnels:        map[io.Closer]struct{}{},
	}
	for _, o := range opts {
		if err := o(p); err != nil {
			return nil, err
		}
	}
	p.srv = &http.Server{
		Handler:           p,
		ReadHeaderTimeout: p.headerTimeout,
		IdleTimeout:       p.idleTimeout,
		MaxHeaderBytes:    p.maxHeaderBytes,
		ErrorLog:          log.New(zerologWriter{p.log}, "", 0),
	}
	return p, nil
}

// zerologWriter sends net/http's own complaints (bad requests, TLS noise)
// to the logger at debug level.
type zerologWriter struct{ l zerolog.Logger }

func (w zerologWriter) Write(b []byte) (int, error) {
	w.l.Debug().Msg(strings.TrimSpace(string(b)))
	return len(b), nil
}

// Serve accepts connections on l until Close. It returns nil after Close.
func (p *Proxy) Serve(l net.Listener) error {
	if p.srv == nil {
		return errors.New("egress: Proxy not made by NewProxy")
	}
	err := p.srv.Serve(newCapListener(l, p.maxConns))
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops accepting, closes every client connection and tunnel, and
// waits (boundedly) for handlers still deciding, so that Report is final.
func (p *Proxy) Close() error {
	if p.srv == nil {
		return nil
	}
	p.mu.Lock()
	p.closed = true
	tunnels := p.tunnels
	p.tunnels = map[io.Closer]struct{}{}
	p.mu.Unlock()
	err := p.srv.Close()
	for c := range tunnels {
		_ = c.Close()
	}
	done := make(chan struct{})
	go func() { p.handlers.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(closeWait):
		p.log.Warn().Msg("egress proxy closed with handlers still running")
	}
	return err
}

// Report returns the counts so far; after Close they are final.
func (p *Proxy) Report() Report { return p.rec.snapshot() }

// track registers a tunnel's connections so Close can end them; false when
// the proxy is already closed (the caller closes them itself).
func (p *Proxy) track(cs ...io.Closer) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	for _, c := range cs {
		p.tunnels[c] = struct{}{}
	}
	return true
}

func (p *Proxy) untrack(cs ...io.Closer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.tunnels, c)
	}
}

// forwardable are the methods forwarded as plain HTTP. TRACE is not: it
// would echo the request, headers and all, back through the proxy.
var forwardable = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodOptions: true,
}

// ServeHTTP dispatches one request: CONNECT, or an absolute-form http://
// request; anything else is a bad request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		http.Error(w, "egress proxy closing", http.StatusServiceUnavailable)
		return
	}
	p.handlers.Add(1)
	p.mu.Unlock()
	defer p.handlers.Done()

	if r.Method == http.MethodConnect {
		p.connect(w, r)
		return
	}
	switch {
	case !r.URL.IsAbs() || r.URL.Host == "":
		p.bad(w, r, http.StatusBadRequest, "this is a forward proxy: send CONNECT host:port or an absolute http:// URL")
	case r.URL.Scheme != "http":
		p.bad(w, r, http.StatusBadRequest, "only http:// is forwarded; use CONNECT for https and everything else")
	case !forwardable[r.Method]:
		p.bad(w, r, http.StatusMethodNotAllowed, "method not proxied: "+methodWord(r.Method))
	case r.Header.Get("Upgrade") != "":
		p.bad(w, r, http.StatusBadRequest, "protocol upgrades are not proxied over plain HTTP; use CONNECT")
	default:
		p.forward(w, r)
	}
}

// bad answers a request refused unread. No destination was looked at, but
// the request still names where the script tried to go, and a script must
// not probe hosts unrecorded by asking malformed questions: it is a refusal
// like the others (reason bad_request), counted, listed and handed to the
// denial hook, and also counted in BadRequests.
func (p *Proxy) bad(w http.ResponseWriter, r *http.Request, code int, msg string) {
	p.rec.badRequest()
	p.decided(methodWord(r.Method), Decision{Reason: ReasonBadRequest, Target: requestTarget(r), Detail: msg})
	w.Header().Set("Connection", "close")
	http.Error(w, "egress: "+msg, code)
}

// maxMethodLen bounds a method as a denial records it: net/http accepts
// any token as a method, as long as the headers allow.
const maxMethodLen = 32

// methodWord is r.Method as a denial records it. net/http has checked it
// is a token, so it needs no quoting, only a bound.
func methodWord(m string) string {
	if len(m) > maxMethodLen {
		return m[:maxMethodLen]
	}
	return m
}

// defaultPorts are the ports an absolute-form URL without one means.
var defaultPorts = map[string]uint16{"http": 80, "ws": 80, "https": 443, "wss": 443, "ftp": 21}

// requestTarget is the destination a request refused unread asked for, as
// a Decision's Target: CONNECT's authority, an absolute URL's host and port
// (its scheme's default when none is given), or an origin-form request's
// Host header; canonical when it can be, else quoted as Check quotes.
func requestTarget(r *http.Request) string {
	if r.Method == http.MethodConnect {
		if h, ps, err := net.SplitHostPort(r.RequestURI); err == nil {
			if port, ok := parsePort(ps); ok {
				return canonicalTarget(h, port)
			}
		}
		return quoteRaw(r.RequestURI)
	}
	u := r.URL
	if !u.IsAbs() || u.Host == "" {
		u = &url.URL{Scheme: "http", Host: r.Host}
	}
	port := defaultPorts[strings.ToLower(u.Scheme)]
	if ps := u.Port(); ps != "" {
		n, ok := parsePort(ps)
		if !ok {
			return quoteRaw(u.Host)
		}
		port = n
	}
	return canonicalTarget(u.Hostname(), port)
}

// canonicalTarget is host:port with host canonical, or quoted when it
// cannot be canonicalised.
func canonicalTarget(host string, port uint16) string {
	if h, err := CanonicalHost(host); err == nil {
		return hostPort(h.String(), port)
	}
	return quoteTarget(host, port)
}

// decided logs one canonical line per decision, counts it and, for a
// refusal, calls the denial hook. The level follows the outcome.
func (p *Proxy) decided(method string, d Decision) {
	ev := p.log.Info()
	if !d.Allowed {
		ev = p.log.Warn()
	}
	ev = ev.Str("method", method).Str("target", d.Target).Bool("allow", d.Allowed).Str("reason", string(d.Reason))
	if d.Entry != "" {
		ev = ev.Str("entry", d.Entry)
	}
	if d.Category != "" {
		ev = ev.Str("category", string(d.Category))
	}
	if d.Detail != "" {
		ev = ev.Str("detail", d.Detail)
	}
	if len(d.Addrs) > 0 {
		addrs := make([]string, len(d.Addrs))
		for i, a := range d.Addrs {
			addrs[i] = a.String()
		}
		ev = ev.Strs("addrs", addrs)
	}
	ev.Msg("egress.decision")
	if d.Allowed {
		p.rec.allowed()
		return
	}
	den := Denial{Time: time.Now(), Method: method, Decision: d}
	p.rec.denied(den)
	if p.onDeny != nil {
		p.onDeny(den)
	}
}

// deny answers a refused destination with 403 and a short plain reason.
func deny(w http.ResponseWriter, d Decision) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Connection", "close")
	w.WriteHeader(http.StatusForbidden)
	_, _ = io.WriteString(w, d.Message()+"\n")
}

func upstreamError(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	http.Error(w, "egress: could not connect to the destination", http.StatusBadGateway)
}

// connect serves CONNECT host:port: decide, dial the address that passed,
// then relay bytes both ways until both sides are done or the tunnel idles.
func (p *Proxy) connect(w http.ResponseWriter, r *http.Request) {
	authority := r.RequestURI
	if strings.Contains(authority, "/") {
		p.bad(w, r, http.StatusBadRequest, "CONNECT wants host:port")
		return
	}
	if _, _, err := net.SplitHostPort(authority); err != nil {
		p.bad(w, r, http.StatusBadRequest, "CONNECT wants host:port")
		return
	}
	d := p.checker.CheckAuthority(r.Context(), authority)
	p.decided(http.MethodConnect, d)
	if !d.Allowed {
		deny(w, d)
		return
	}
	upstream, err := p.checker.Dial(r.Context(), d)
	if err != nil {
		p.rec.dialError()
		p.log.Warn().Str("target", d.Target).Err(err).Msg("egress.dial_failed")
		upstreamError(w)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		_ = upstream.Close()
		upstreamError(w)
		return
	}
	client, brw, err := hj.Hijack()
	if err != nil {
		_ = upstream.Close()
		return
	}
	if !p.track(client, upstream) {
		_ = client.Close()
		_ = upstream.Close()
		return
	}
	defer p.untrack(client, upstream)
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		_ = client.Close()
		_ = upstream.Close()
		return
	}
	// Bytes the client sent right behind the CONNECT (an eager TLS
	// ClientHello) sit in the server's buffer; they go first.
	var early []byte
	if n := brw.Reader.Buffered(); n > 0 {
		early, _ = brw.Reader.Peek(n)
	}
	tunnel(client, upstream, p.idleTimeout, early)
}

// forward serves one absolute-form plain HTTP request: decide on the URL's
// host:port, then forward through a one-shot transport that dials only the
// decision's addresses. Hop-by-hop and Proxy-* headers are removed both
// ways; no X-Forwarded-* is added.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request) {
	port := uint16(80)
	if ps := r.URL.Port(); ps != "" {
		n, ok := parsePort(ps)
		if !ok {
			d := Decision{Reason: ReasonInvalidPort, Target: quoteRaw(r.URL.Host)}
			p.decided(r.Method, d)
			deny(w, d)
			return
		}
		port = n
	}
	d := p.checker.Check(r.Context(), r.URL.Hostname(), port)
	p.decided(r.Method, d)
	if !d.Allowed {
		deny(w, d)
		return
	}
	var dialFailed atomic.Bool
	transport := &http.Transport{
		Proxy: nil, // never the gateway's own HTTP_PROXY
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			c, err := p.checker.Dial(ctx, d)
			dialFailed.Store(err != nil)
			return c, err
		},
		DisableKeepAlives:      true,
		DisableCompression:     true,
		MaxResponseHeaderBytes: 1 << 20,
		// An upstream that never answers must not hold the handler forever.
		ResponseHeaderTimeout: p.idleTimeout,
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			stripProxyHeaders(pr.Out.Header)
			pr.Out.Host = r.Host
		},
		Transport: transport,
		ModifyResponse: func(resp *http.Response) error {
			stripProxyHeaders(resp.Header)
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			if dialFailed.Load() {
				p.rec.dialError()
			}
			p.log.Warn().Str("target", d.Target).Err(err).Msg("egress.forward_failed")
			upstreamError(w)
		},
		ErrorLog: log.New(zerologWriter{p.log}, "", 0),
	}
	rp.ServeHTTP(w, r)
}

// stripProxyHeaders removes every Proxy-* header (Proxy-Authorization,
// Proxy-Connection, Proxy-Authenticate...): they are between the client
// and this proxy and must not leak to the destination or back.
func stripProxyHeaders(h http.Header) {
	for k := range h {
		if strings.HasPrefix(k, "Proxy-") {
			delete(h, k)
		}
	}
}
