package egress

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/mitrity/mitrity/govern/peer"
	"io"
	"net"

	"github.com/rs/zerolog"
)

// ServeOptions are what `mitrity-egressproxy serve` is run with.
type ServeOptions struct {
	// Socket is the Unix socket path to listen on (created 0600; must not
	// exist). Exactly one of Socket and Listener is set.
	Socket string
	// Listener is a socket already listening, inherited from the gateway,
	// which created it in a directory of its own and removes it. Connections
	// that arrived before Serve wait in its backlog, so the gateway need not
	// wait for ready before starting the sandbox.
	Listener *net.UnixListener
	// Stdin carries the JSON configuration, then stays open for as long as
	// the proxy should run: its end (the gateway closing the pipe, or dying)
	// stops the proxy.
	Stdin io.Reader
	// Stdout gets "ready\n" once the socket accepts connections, then the
	// JSON report, one line, when the proxy stops.
	Stdout io.Writer
	Logger zerolog.Logger
	// CheckerOptions and ProxyOptions pass through (tests, tuning).
	CheckerOptions []Option
	ProxyOptions   []ProxyOption
}

// Serve runs the proxy for one execution: read and validate the
// configuration (nothing is created when it is invalid), listen, say ready,
// serve until stdin ends or ctx is cancelled (SIGTERM), then close every
// connection and write the report. The report is written whenever the
// socket was listening, so the gateway always gets its counts.
func Serve(ctx context.Context, o ServeOptions) error {
	if (o.Socket == "") == (o.Listener == nil) {
		return errors.New("exactly one of --socket and --listen-fd is required")
	}
	cfg, dec, err := DecodeConfig(o.Stdin)
	if err != nil {
		return fmt.Errorf("reading the configuration from stdin: %w", err)
	}
	checker, err := NewChecker(cfg, o.CheckerOptions...)
	if err != nil {
		return err
	}
	proxy, err := NewProxy(checker, append([]ProxyOption{WithLogger(o.Logger)}, o.ProxyOptions...)...)
	if err != nil {
		return err
	}
	ln := o.Listener
	if ln == nil {
		if ln, err = ListenUnix(o.Socket); err != nil {
			return err
		}
	}
	served := make(chan error, 1)
	refused := func(p peer.Peer, err error) {
		o.Logger.Warn().Int("uid", p.UID).Int("pid", p.PID).Err(err).Msg("egress proxy: connection refused: only the sandbox's bridge may connect")
	}
	go func() { served <- proxy.Serve(hostPeers{Listener: ln, refused: refused}) }()
	if _, err := io.WriteString(o.Stdout, "ready\n"); err != nil {
		_ = proxy.Close()
		return fmt.Errorf("writing ready: %w", err)
	}
	o.Logger.Info().Str("socket", ln.Addr().String()).Int("entries", len(cfg.Allow)).Msg("egress proxy ready")

	// Whatever follows the configuration on stdin is ignored; its end is
	// the stop signal.
	stdinDone := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, io.MultiReader(dec.Buffered(), o.Stdin))
		close(stdinDone)
	}()
	var serveErr error
	stopped := false
	select {
	case <-stdinDone:
		o.Logger.Debug().Msg("stdin closed: stopping")
	case <-ctx.Done():
		o.Logger.Debug().Msg("signalled: stopping")
	case serveErr = <-served:
		stopped = true
	}
	closeErr := proxy.Close()
	if !stopped {
		serveErr = <-served
	}
	r := proxy.Report()
	o.Logger.Info().Int("allowed", r.Allowed).Int("denied", r.Denied).Msg("egress proxy stopped")
	if err := json.NewEncoder(o.Stdout).Encode(r); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	return errors.Join(serveErr, closeErr)
}
