package executor

import (
	"context"
	"io"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/egress"
)

// WithEgressProxy names the mitrity-egressproxy binary. Without this option
// New looks it up with egress.FindBinary. An empty path means there is
// none: a plan with a non-empty allowlist then fails to start
// (spawn_error), sandboxed or in mode none, rather than run without its
// proxy.
func WithEgressProxy(path string) Option {
	return func(e *Executor) { e.proxyPath, e.proxySet = path, true }
}

// WithEgressSettings sets the host's exec.egress settings (allowed ports,
// denied and allowed private CIDRs) that every run's proxy starts from,
// sandboxed or in mode none; each plan supplies its allowlist. Without it
// a sandboxed run takes Sandbox.Egress, and a run in mode none the
// defaults: ports 443 and 80, no CIDR denied or opened.
func WithEgressSettings(cfg egress.Config) Option {
	return func(e *Executor) { e.egress = &cfg }
}

// WithEgressProxyLog sends the proxy's log lines (one egress.decision line
// per decision, at level and above) to w. Without it they are only kept, the
// last few KiB, to explain a proxy that failed.
func WithEgressProxyLog(w io.Writer, level string) Option {
	return func(e *Executor) { e.proxyLog, e.proxyLogLevel = w, level }
}

// egressSettings are the host's settings a run's proxy starts from.
func (e *Executor) egressSettings() egress.Config {
	switch {
	case e.egress != nil:
		return *e.egress
	case e.sandbox != nil:
		return e.sandbox.Egress
	}
	return egress.Config{}
}

// superviseProxy starts the watch on the proxy of a run whose allowlist is
// allow (egress.SuperviseProcess): its socket, the context the run goes on
// under (cancelled if the proxy dies), and finish, which, given the run's
// result once the command has ended, stops the proxy and records its
// report there, or why there is none.
func (e *Executor) superviseProxy(ctx context.Context, allow []string) (socket string, runCtx context.Context, finish func(*Result), err error) {
	cfg := e.egressSettings()
	cfg.Allow = allow
	px, runCtx, done, err := egress.SuperviseProcess(ctx, egress.ProcessOptions{Path: e.proxyPath, Config: cfg, Log: e.proxyLog, Level: e.proxyLogLevel})
	if err != nil {
		return "", ctx, nil, err
	}
	finish = func(res *Result) {
		o := done()
		res.Egress, res.EgressError = o.Report, o.Error
		if o.Died && res.Status == govern.StatusKilled {
			// The run was ended for it.
			res.Message = "ended because its egress proxy failed: " + o.Error
		}
	}
	return px.Socket(), runCtx, finish, nil
}
