package servecmd

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/mitrity/mitrity/govern/mcpserver"
	"github.com/mitrity/mitrity/govern/metrics"
)

// Bounds of the admin listener. A scrape is small and local; nothing here
// should hold a connection or a goroutine for long.
const (
	adminReadHeaderTimeout = 5 * time.Second
	adminReadTimeout       = 10 * time.Second
	adminWriteTimeout      = 30 * time.Second
	adminIdleTimeout       = 60 * time.Second
	adminMaxHeaderBytes    = 16 << 10
	adminShutdownTimeout   = 5 * time.Second
	// A scraper holds one or two connections: these bound what a local
	// user can make the gateway hold open (descriptors executions need).
	adminMaxConns        = 64
	adminMaxConnsPerPeer = 8
)

// adminHandler serves GET /metrics (the Prometheus exposition of m) and
// GET /healthz (200 "ok"); anything else is 404, another method 405.
func adminHandler(m *metrics.Metrics) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok")
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Cache-Control", "no-store")
		mux.ServeHTTP(w, r)
	})
}

// startAdmin serves the admin endpoints on addr (admin.listen, HOST:PORT)
// until ctx is done or stop is called, and returns the address it bound
// (the real port when addr asks for port 0). An empty addr serves nothing:
// it returns "", a no-op stop and no error. A listen failure is returned;
// a later serve failure is logged. The endpoints have no authentication, so
// a listener that is not loopback-only is logged as a warning.
//
// stop shuts the server down (in-flight scrapes get a few seconds) and
// returns once it has; it may be called more than once.
func startAdmin(ctx context.Context, addr string, m *metrics.Metrics, logger zerolog.Logger) (addrUsed string, stop func(), err error) {
	if addr == "" {
		return "", func() {}, nil
	}
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return "", nil, err
	}
	addrUsed = l.Addr().String()
	logger = logger.With().Str("admin_addr", addrUsed).Logger()
	if !loopbackAddr(l.Addr()) {
		logger.Warn().Str("addr", addr).Msg("admin listener on a non-loopback address: anyone who can reach it can read the metrics (there is no authentication)")
	}
	l = mcpserver.LimitListener(l, adminMaxConns, adminMaxConnsPerPeer)
	srv := &http.Server{
		Handler:           adminHandler(m),
		ReadHeaderTimeout: adminReadHeaderTimeout,
		ReadTimeout:       adminReadTimeout,
		WriteTimeout:      adminWriteTimeout,
		IdleTimeout:       adminIdleTimeout,
		MaxHeaderBytes:    adminMaxHeaderBytes,
		ErrorLog:          log.New(logger, "admin: ", 0),
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error().Err(err).Msg("admin listener stopped: metrics are no longer served")
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			sctx, cancel := context.WithTimeout(context.Background(), adminShutdownTimeout)
			defer cancel()
			if err := srv.Shutdown(sctx); err != nil {
				_ = srv.Close()
			}
			<-done
		})
	}
	go func() {
		select {
		case <-ctx.Done():
			stop()
		case <-done:
		}
	}()
	logger.Info().Msg("serving metrics on the admin listener (GET /metrics, GET /healthz)")
	return addrUsed, stop, nil
}

// loopbackAddr reports whether a bound address accepts loopback
// connections only. The wildcard address does not.
func loopbackAddr(a net.Addr) bool {
	t, ok := a.(*net.TCPAddr)
	return ok && t.IP.IsLoopback()
}
