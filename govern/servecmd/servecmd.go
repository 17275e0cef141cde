// Package servecmd is the serving half of the command lines of
// mitrity-gateway (`serve`) and mitrity-sidecar: the flags, the config
// they load, the MCP server over stdio or Streamable HTTP with its bounds
// and tokens, the upstreams it proxies, the admin endpoints, SIGHUP
// reloads and the graceful stop. The binaries stay thin: each says what
// differs (the gateway also serves the admission socket; the sidecar
// fronts exactly one upstream and no shell).
package servecmd

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"

	"github.com/mitrity/mitrity/govern/cliapp"
	"github.com/mitrity/mitrity/govern/config"
	"github.com/mitrity/mitrity/govern/hold"
	"github.com/mitrity/mitrity/govern/mcpserver"
	"github.com/mitrity/mitrity/govern/metrics"
	"github.com/mitrity/mitrity/govern/ownfiles"
	"github.com/mitrity/mitrity/govern/policy"
	"github.com/mitrity/mitrity/govern/sandbox"
	"github.com/mitrity/mitrity/govern/service"
	"github.com/mitrity/mitrity/govern/yamlfile"
)

// ConfigFlag is --config.
var ConfigFlag = &cli.StringFlag{
	Name:  "config",
	Usage: "mitrity-gateway.yaml (default: $MITRITY_GATEWAY_CONFIG, ~/.config/mitrity/mitrity-gateway.yaml for a user, /etc/mitrity/mitrity-gateway.yaml, else the embedded default; never the working directory)",
}

// LoadConfig finds, loads and validates the config; on failure the error
// lists every problem, one per line, with file:line:column.
func LoadConfig(c *cli.Context) (*config.Config, error) {
	path, embedded := config.Locate(c.String("config"))
	if wd, err := os.Getwd(); err == nil && c.String("config") == "" {
		if stray := config.StrayFile(wd); stray != "" && stray != path {
			// Once read from the working directory: say why it no longer is.
			fmt.Fprintf(c.App.ErrWriter, "%s: ignoring %s: a config is never read from the working directory, which the commands it runs can write; pass --config or move it to %s\n", c.App.Name, stray, config.SystemPath)
		}
	}
	if embedded {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		return config.LoadEmbedded(wd)
	}
	cfg, err := config.Load(path)
	if err != nil {
		return nil, fmt.Errorf("invalid configuration, refusing to start:\n%w", err)
	}
	return cfg, nil
}

// FlagFiles are the gateway's own files that flags name: no run may see
// them, and a token file (every agent's bearer token) configures the
// gateway as much as its config does.
func FlagFiles(c *cli.Context) []ownfiles.File {
	var out []ownfiles.File
	if c.IsSet("token-file") {
		if p, err := filepath.Abs(c.String("token-file")); err == nil {
			out = append(out, ownfiles.File{Path: p, Role: ownfiles.Configures, Where: yamlfile.Loc{Path: "--token-file"}, What: "the agents' bearer tokens"})
		}
	}
	if d := c.String("admin-dir"); d != "" {
		if p, err := filepath.Abs(d); err == nil {
			out = append(out, ownfiles.File{Path: p, Role: ownfiles.Keeps, Where: yamlfile.Loc{Path: "--admin-dir"}, What: "the admin socket directory"})
		}
	}
	return out
}

// Flags are the serving flags both binaries take; listen names the flag
// that serves Streamable HTTP (--http for the gateway, --listen for the
// sidecar).
func Flags(listen string) []cli.Flag {
	return []cli.Flag{
		ConfigFlag,
		&cli.BoolFlag{Name: "stdio", Usage: "serve MCP over stdin/stdout (the default)"},
		&cli.StringFlag{Name: listen, Usage: "serve Streamable HTTP on HOST:PORT (e.g. 127.0.0.1:8765; a non-loopback host must be given explicitly)"},
		&cli.StringFlag{Name: "token-file", Usage: "with --" + listen + ": file of `TOKEN AGENT_ID` lines, mode 0600 (required)"},
		&cli.StringFlag{Name: "agent", Value: "local", Usage: "with --stdio: the agent id every call is made as"},
		&cli.DurationFlag{Name: "grace", Value: mcpserver.DefaultShutdownGrace, Usage: "on shutdown, how long running calls may finish before they are cancelled"},
		&cli.StringFlag{Name: "admin-dir", Usage: "directory of admin sockets (approvals reach a held call here)", Value: hold.DefaultDir()},
		&cli.IntFlag{Name: "max-sessions", Value: mcpserver.DefaultMaxSessions, Usage: "with --" + listen + ": MCP sessions open at once; an initialize past it gets 503"},
		&cli.DurationFlag{Name: "session-idle-timeout", Value: mcpserver.DefaultSessionIdleTimeout, Usage: "with --" + listen + ": a session without a request for this long is closed"},
		&cli.IntFlag{Name: "max-connections", Value: mcpserver.DefaultMaxConns, Usage: "with --" + listen + ": connections open at once (lowered to what RLIMIT_NOFILE allows after the reserve for executions)"},
		&cli.IntFlag{Name: "max-connections-per-peer", Value: mcpserver.DefaultMaxConnsPerPeer, Usage: "with --" + listen + ": connections open at once from one peer (one local user on loopback, one address otherwise)"},
	}
}

// Options say what a binary's serving does beyond the common part.
type Options struct {
	// Name prefixes the errors ("serve"; "" for none).
	Name string
	// Listen is the name of the HTTP flag (http or listen).
	Listen  string
	Version string
	// Adjust changes a loaded config before it is used, at start and on
	// every reload (the sidecar puts its one upstream in and the shell
	// out); an error refuses it.
	Adjust func(*config.Config) error
	// Before runs once the service is open and before MCP is served (the
	// gateway's admission socket). It returns what to do at the stop, and
	// done=true when nothing else is to be served (--admission-only).
	Before func(ctx context.Context, cfg *config.Config, svc *service.Service, logger zerolog.Logger, grace time.Duration) (stop func(), done bool, err error)
	// Ready, when set, runs once, when every listener serves (systemd's
	// READY=1); a start that fails never runs it.
	Ready func(what string)
}

func (o Options) ready(what string) {
	if o.Ready != nil {
		o.Ready(what)
	}
}

// prefix starts each of the command line's messages ("" for a binary
// whose messages its own name already starts).
func (o Options) prefix() string {
	if o.Name == "" {
		return ""
	}
	return o.Name + ": "
}

// UpstreamWait is how long serving waits for the upstreams' first
// connect before it answers clients (a slow one is served once it is up).
const UpstreamWait = 15 * time.Second

// Serve runs the serving command line.
func Serve(c *cli.Context, o Options) error {
	listen := o.Listen
	if c.Bool("stdio") && c.IsSet(listen) {
		return cli.Exit(o.prefix()+fmt.Sprintf("--stdio and --%s are exclusive", listen), 2)
	}
	logger := cliapp.Logger(c)
	if !c.IsSet(listen) && !policy.ValidAgentID(c.String("agent")) {
		return cli.Exit(o.prefix()+fmt.Sprintf("--agent %q: an agent id is 1 to 128 letters, digits, '_', '-', '.', '@' or ':'", c.String("agent")), 2)
	}
	tuneGC()
	addr := c.String(listen)
	var tokens mcpserver.Tokens
	if c.IsSet(listen) {
		loopback, err := mcpserver.CheckListenAddr(addr)
		if err != nil {
			return cli.Exit(o.prefix()+err.Error(), 2)
		}
		if !loopback {
			logger.Warn().Str("addr", addr).Msg("serving on a non-loopback address: anyone who can reach it and holds a token can call its tools")
		}
		if c.String("token-file") == "" {
			return cli.Exit(o.prefix()+fmt.Sprintf("--%s needs --token-file (lines of `TOKEN AGENT_ID`, mode 0600): no token, no call", listen), 2)
		}
		if tokens, err = mcpserver.LoadTokens(c.String("token-file")); err != nil {
			return cli.Exit(o.prefix()+"--token-file: "+err.Error(), 2)
		}
	} else if c.IsSet("token-file") {
		return cli.Exit(o.prefix()+fmt.Sprintf("--token-file applies to --%s only", listen), 2)
	}
	limits, err := httpLimits(c)
	if err != nil {
		return cli.Exit(o.prefix()+err.Error(), 2)
	}

	load := func() (*config.Config, error) {
		cfg, err := LoadConfig(c)
		if err == nil && o.Adjust != nil {
			err = o.Adjust(cfg)
		}
		return cfg, err
	}
	cfg, err := load()
	if err != nil {
		return cli.Exit(err.Error(), 126)
	}
	// Before the service starts any process (the probe, upstreams, runs):
	// a child left in the delegated cgroup would keep it from delegating.
	delegateCgroup(logger)
	svc, err := service.Open(cfg, logger, FlagFiles(c)...)
	if err != nil {
		return cli.Exit(o.prefix()+err.Error(), 126)
	}
	defer svc.Close()

	defer ServeHolds(c, svc, "serve", logger)()

	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	grace := c.Duration("grace")
	var reloadTokens func() error
	if tokens.Len() > 0 {
		file := c.String("token-file")
		reloadTokens = func() error {
			next, err := mcpserver.LoadTokens(file)
			if err == nil {
				tokens.Replace(next)
			}
			return err
		}
	}
	var m *metrics.Metrics
	if cfg.Admin.Listen != "" {
		m = metrics.New()
		svc.SetMetrics(m)
	}
	// After the metrics: every reload is counted, the first one too.
	go reloadOnHUP(ctx, load, reloadTokens, svc, m, logger)

	if m != nil {
		_, stopAdmin, err := startAdmin(ctx, cfg.Admin.Listen, m, logger)
		if err != nil {
			return cli.Exit(o.prefix()+"admin.listen: "+err.Error(), 1)
		}
		defer stopAdmin()
	}
	if o.Before != nil {
		after, done, err := o.Before(ctx, cfg, svc, logger, grace)
		if err != nil {
			return err
		}
		if after != nil {
			defer after()
		}
		if done {
			o.ready("serving the admission socket")
			<-ctx.Done()
			logger.Info().Msg("stopping: calls in flight may finish within the grace period")
			return nil
		}
	}

	opts := mcpserver.Options{Service: svc, Enabled: cfg.Exec.Enabled, Agent: c.String("agent"),
		Version: o.Version, Logger: logger, HTTP: limits, Metrics: m}
	if len(cfg.Upstreams) > 0 {
		opts.Upstreams = svc
	} else if !cfg.Exec.Enabled {
		logger.Warn().Msg("exec.enabled is false and no upstream is configured: tools/list is empty")
	}
	if addr == "" {
		opts.HTTP, opts.Metrics = mcpserver.HTTPLimits{}, nil
		srv := mcpserver.New(opts)
		startUpstreams(cfg, svc, srv, o.Version)
		logger.Info().Str("agent", c.String("agent")).Msg("serving MCP on stdio")
		o.ready("serving MCP on stdio")
		if err := srv.ServeStdio(ctx, mcpserver.StdioTransport(logger), grace); err != nil && ctx.Err() == nil {
			return cli.Exit(o.prefix()+err.Error(), 1)
		}
		return nil
	}
	// Connections never take the descriptors executions need: what the
	// limit leaves after a reserve for max_concurrent runs bounds them.
	limits.MaxBodyBytes = mcpserver.BodyBytesFor(cfg.Exec.Limits.StdinMaxBytes)
	reserve := mcpserver.FDReserve(cfg.Exec.Limits.MaxConcurrent)
	budget, err := mcpserver.ConnBudget(reserve)
	if err != nil {
		return cli.Exit(o.prefix()+err.Error(), 1)
	}
	if limits.MaxConns > budget {
		logger.Warn().Int("requested", limits.MaxConns).Int("budget", budget).Int("reserved_for_executions", reserve).Msg("--max-connections lowered to what the file descriptor limit allows")
		limits.MaxConns = budget
	}
	opts.HTTP = limits
	srv := mcpserver.New(opts)
	startUpstreams(cfg, svc, srv, o.Version)
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return cli.Exit(o.prefix()+err.Error(), 1)
	}
	logger.Info().Str("addr", l.Addr().String()).Int("tokens", tokens.Len()).Int("max_connections", limits.MaxConns).
		Int("max_connections_per_peer", limits.MaxConnsPerPeer).Int("max_sessions", limits.MaxSessions).
		Dur("session_idle_timeout", limits.SessionIdleTimeout).Msg("serving MCP on Streamable HTTP")
	o.ready("serving MCP on " + l.Addr().String())
	if err := srv.ServeHTTP(ctx, l, tokens, grace); err != nil {
		return cli.Exit(o.prefix()+err.Error(), 1)
	}
	return nil
}

// delegateCgroup readies a delegated cgroup v2 (systemd Delegate=yes) for
// the runs' memory and pids cgroups, and logs what it did; whatever the
// outcome, serving goes on (runs fall back to cgroup v1 or rlimits, and
// each says so).
func delegateCgroup(logger zerolog.Logger) {
	d := sandbox.DelegateCgroup()
	logger.Info().Bool("delegated", d.Delegated).Bool("moved", d.Moved).Str("cgroup", d.Dir).Str("leaf", d.Leaf).
		Strs("controllers", d.Controllers).Str("detail", d.Detail).Msg("run cgroups")
}

// startUpstreams connects the upstream servers and serves their tools.
func startUpstreams(cfg *config.Config, svc *service.Service, srv *mcpserver.Server, version string) {
	if len(cfg.Upstreams) == 0 {
		return
	}
	svc.SetVersion(version)
	svc.StartUpstreams(srv.SyncUpstreamTools, func(name string) bool { return name == mcpserver.ToolName }, UpstreamWait)
}

// reloadOnHUP reopens the audit log and reloads the config and policy on
// each SIGHUP. A config that does not validate, or a policy that does not
// compile, leaves the running generation in place; either way the log says
// what happened, and m counts it (mitrity_config_reloads_total).
func reloadOnHUP(ctx context.Context, load func() (*config.Config, error), reloadTokens func() error, svc *service.Service, m *metrics.Metrics, logger zerolog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		// The audit log first, whatever the config: logrotate's
		// postrotate sends SIGHUP once it has renamed the file.
		if err := svc.ReopenAudit(); err != nil {
			logger.Error().Err(err).Msg("the audit log could not be reopened")
		}
		// The token file too, on its own: revoking a token must not wait
		// for a restart, nor for a config that loads.
		if reloadTokens != nil {
			if err := reloadTokens(); err != nil {
				logger.Error().Err(err).Msg("token file reload refused: the running tokens stay")
			} else {
				logger.Info().Msg("reloaded the token file")
			}
		}
		cfg, err := load()
		if err == nil {
			err = svc.Reload(cfg, logger)
		}
		m.Reloaded(err)
		if err != nil {
			logger.Error().Err(err).Msg("reload refused: the running configuration and policy stay")
			continue
		}
		logger.Info().Str("config", cfg.File).Str("policy", cfg.Policy).Msg("reloaded configuration and policy")
	}
}

// ServeHolds serves svc's approval queue (held calls, changed tool
// definitions) on this process's admin socket, <kind>-<pid>.sock in
// --admin-dir, for `mitrity-gateway approvals`, until the returned stop.
func ServeHolds(c *cli.Context, svc *service.Service, kind string, logger zerolog.Logger) (stop func()) {
	sock := filepath.Join(c.String("admin-dir"), fmt.Sprintf("%s-%d.sock", kind, os.Getpid()))
	srv, err := hold.Listen(sock, svc.Pipeline().Holds(), sandbox.OnlyHost)
	if err != nil {
		logger.Warn().Err(err).Msg("admin socket unavailable: a held call can only expire")
		return func() {}
	}
	return func() { srv.Close() }
}

// httpLimits reads the HTTP bounds' flags.
func httpLimits(c *cli.Context) (mcpserver.HTTPLimits, error) {
	l := mcpserver.HTTPLimits{MaxSessions: c.Int("max-sessions"), SessionIdleTimeout: c.Duration("session-idle-timeout"),
		MaxConns: c.Int("max-connections"), MaxConnsPerPeer: c.Int("max-connections-per-peer")}
	for name, v := range map[string]int{"max-sessions": l.MaxSessions, "max-connections": l.MaxConns, "max-connections-per-peer": l.MaxConnsPerPeer} {
		if v < 1 {
			return l, fmt.Errorf("--%s %d: want at least 1", name, v)
		}
	}
	if l.SessionIdleTimeout < time.Second {
		return l, fmt.Errorf("--session-idle-timeout %v: want at least 1s", l.SessionIdleTimeout)
	}
	return l, nil
}
