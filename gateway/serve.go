package main

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
	"github.com/mitrity/mitrity/govern/sandbox"
	"github.com/mitrity/mitrity/govern/service"
)

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "serve the shell__execute MCP tool over stdio (the default) or Streamable HTTP, and the admission socket for agent-framework hooks",
		Description: "Every tools/call goes through the same pipeline, executor and audit as `mitrity-gateway exec`.\n" +
			"Over stdio every call is made as --agent. Over HTTP a bearer token is required: --token-file lists\n" +
			"`TOKEN AGENT_ID` lines (mode 0600) and the token names the agent. SIGTERM or SIGINT stops accepting\n" +
			"calls, lets running ones finish, and cancels (kills) those still running after --grace.\n" +
			"With admission.enabled (the default) the admission socket is served too, for mitrity-hook;\n" +
			"--admission-only serves nothing else. SIGHUP reopens the audit log (logrotate's postrotate) and reloads the\n" +
			"config and policy: the new ones are validated\n" +
			"whole first, and when they are not, the running ones stay and the log says why.",
		Flags: []cli.Flag{
			configFlag,
			&cli.BoolFlag{Name: "stdio", Usage: "serve MCP over stdin/stdout (the default)"},
			&cli.StringFlag{Name: "http", Usage: "serve Streamable HTTP on HOST:PORT (e.g. 127.0.0.1:8765; a non-loopback host must be given explicitly)"},
			&cli.StringFlag{Name: "token-file", Usage: "with --http: file of `TOKEN AGENT_ID` lines, mode 0600 (required)"},
			&cli.StringFlag{Name: "agent", Value: "local", Usage: "with --stdio: the agent id every call is made as"},
			&cli.DurationFlag{Name: "grace", Value: mcpserver.DefaultShutdownGrace, Usage: "on shutdown, how long running calls may finish before they are cancelled"},
			&cli.BoolFlag{Name: "admission-only", Usage: "serve only the admission socket (for mitrity-hook), no MCP"},
			&cli.StringFlag{Name: "admin-dir", Usage: "directory of admin sockets (approvals reach a held call here)", Value: hold.DefaultDir()},
			&cli.IntFlag{Name: "max-sessions", Value: mcpserver.DefaultMaxSessions, Usage: "with --http: MCP sessions open at once; an initialize past it gets 503"},
			&cli.DurationFlag{Name: "session-idle-timeout", Value: mcpserver.DefaultSessionIdleTimeout, Usage: "with --http: a session without a request for this long is closed"},
			&cli.IntFlag{Name: "max-connections", Value: mcpserver.DefaultMaxConns, Usage: "with --http: connections open at once (lowered to what RLIMIT_NOFILE allows after the reserve for executions)"},
			&cli.IntFlag{Name: "max-connections-per-peer", Value: mcpserver.DefaultMaxConnsPerPeer, Usage: "with --http: connections open at once from one peer (one local user on loopback, one address otherwise)"},
		},
		Action: runServe,
	}
}

func runServe(c *cli.Context) error {
	if c.Bool("stdio") && c.IsSet("http") {
		return cli.Exit("serve: --stdio and --http are exclusive", 2)
	}
	if c.Bool("admission-only") && (c.Bool("stdio") || c.IsSet("http")) {
		return cli.Exit("serve: --admission-only serves no MCP; drop --stdio and --http", 2)
	}
	if c.NArg() > 0 {
		return cli.Exit(fmt.Sprintf("serve: unexpected arguments %q", c.Args().Slice()), 2)
	}
	logger := cliapp.Logger(c)
	addr := c.String("http")
	var tokens mcpserver.Tokens
	if c.IsSet("http") {
		loopback, err := mcpserver.CheckListenAddr(addr)
		if err != nil {
			return cli.Exit("serve: "+err.Error(), 2)
		}
		if !loopback {
			logger.Warn().Str("addr", addr).Msg("serving on a non-loopback address: anyone who can reach it and holds a token can run commands")
		}
		if c.String("token-file") == "" {
			return cli.Exit("serve: --http needs --token-file (lines of `TOKEN AGENT_ID`, mode 0600): no token, no call", 2)
		}
		if tokens, err = mcpserver.LoadTokens(c.String("token-file")); err != nil {
			return cli.Exit("serve: --token-file: "+err.Error(), 2)
		}
	} else if c.IsSet("token-file") {
		return cli.Exit("serve: --token-file applies to --http only", 2)
	}
	limits, err := httpLimits(c)
	if err != nil {
		return cli.Exit("serve: "+err.Error(), 2)
	}

	cfg, err := loadConfig(c)
	if err != nil {
		return cli.Exit(err.Error(), 126)
	}
	svc, err := service.Open(cfg, logger, flagFiles(c)...)
	if err != nil {
		return cli.Exit(fmt.Sprintf("serve: %v", err), 126)
	}
	defer svc.Close()
	if !cfg.Exec.Enabled {
		logger.Warn().Msg("exec.enabled is false: tools/list is empty")
	}

	sock := filepath.Join(c.String("admin-dir"), fmt.Sprintf("serve-%d.sock", os.Getpid()))
	if srv, err := hold.Listen(sock, svc.Pipeline().Holds(), sandbox.OnlyHost); err == nil {
		defer srv.Close()
	} else {
		logger.Warn().Err(err).Msg("admin socket unavailable: a held call can only expire")
	}

	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	grace := c.Duration("grace")
	go reloadOnHUP(ctx, c, svc, logger)

	var m *metrics.Metrics
	if cfg.Admin.Listen != "" {
		m = metrics.New()
		svc.SetMetrics(m)
		_, stopAdmin, err := startAdmin(ctx, cfg.Admin.Listen, m, logger)
		if err != nil {
			return cli.Exit(fmt.Sprintf("serve: admin.listen: %v", err), 1)
		}
		defer stopAdmin()
	}
	if c.Bool("admission-only") && !cfg.Admission.Enabled {
		return cli.Exit("serve: --admission-only, but admission.enabled is false", 2)
	}
	if cfg.Admission.Enabled {
		adm, err := listenAdmission(cfg, svc, logger)
		switch {
		case err == nil:
			defer adm.shutdown(grace)
		case c.Bool("admission-only") || addr != "":
			return cli.Exit(fmt.Sprintf("serve: %v", err), 1)
		default:
			// An agent that starts its own stdio gateway per session
			// finds the socket served by the first: that one answers
			// the hooks.
			logger.Warn().Err(err).Msg("admission socket not served by this process")
		}
	}
	if c.Bool("admission-only") {
		<-ctx.Done()
		logger.Info().Msg("stopping: admission calls in flight may finish within the grace period")
		return nil
	}

	if addr == "" {
		srv := mcpserver.New(mcpserver.Options{Service: svc, Enabled: cfg.Exec.Enabled, Agent: c.String("agent"),
			Version: version, Logger: logger, Upstreams: upstreamsOf(cfg, svc)})
		startUpstreams(cfg, svc, srv)
		logger.Info().Str("agent", c.String("agent")).Msg("serving MCP on stdio")
		if err := srv.ServeStdio(ctx, mcpserver.StdioTransport(logger), grace); err != nil && ctx.Err() == nil {
			return cli.Exit(fmt.Sprintf("serve: %v", err), 1)
		}
		return nil
	}
	// Connections never take the descriptors executions need: what the
	// limit leaves after a reserve for max_concurrent runs bounds them.
	limits.MaxBodyBytes = mcpserver.BodyBytesFor(cfg.Exec.Limits.StdinMaxBytes)
	reserve := mcpserver.FDReserve(cfg.Exec.Limits.MaxConcurrent)
	budget, err := mcpserver.ConnBudget(reserve)
	if err != nil {
		return cli.Exit("serve: "+err.Error(), 1)
	}
	if budget < limits.MaxConns {
		logger.Info().Int("max_connections", budget).Int("fd_reserve", reserve).Msg("connections bounded by RLIMIT_NOFILE after the reserve for executions")
		limits.MaxConns = budget
	}
	srv := mcpserver.New(mcpserver.Options{Service: svc, Enabled: cfg.Exec.Enabled, Agent: c.String("agent"),
		Version: version, Logger: logger, HTTP: limits, Metrics: m, Upstreams: upstreamsOf(cfg, svc)})
	startUpstreams(cfg, svc, srv)
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return cli.Exit(fmt.Sprintf("serve: %v", err), 1)
	}
	logger.Info().Str("addr", l.Addr().String()).Int("tokens", tokens.Len()).Int("max_connections", limits.MaxConns).
		Int("max_connections_per_peer", limits.MaxConnsPerPeer).Int("max_sessions", limits.MaxSessions).
		Dur("session_idle_timeout", limits.SessionIdleTimeout).Msg("serving MCP on Streamable HTTP")
	if err := srv.ServeHTTP(ctx, l, tokens, grace); err != nil {
		return cli.Exit(fmt.Sprintf("serve: %v", err), 1)
	}
	return nil
}

// reloadOnHUP reopens the audit log and reloads the config and policy on
// each SIGHUP. A config that
// does not validate, or a policy that does not compile, leaves the running
// generation in place; either way the log says what happened.
func reloadOnHUP(ctx context.Context, c *cli.Context, svc *service.Service, logger zerolog.Logger) {
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
		cfg, err := loadConfig(c)
		if err == nil {
			err = svc.Reload(cfg, logger)
		}
		if err != nil {
			logger.Error().Err(err).Msg("reload refused: the running configuration and policy stay")
			continue
		}
		logger.Info().Str("config", cfg.File).Str("policy", cfg.Policy).Msg("reloaded configuration and policy")
	}
}

// httpLimits reads the --http bounds of the flags.
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

// upstreamWait is how long serve waits for the upstreams' first connect
// before it answers clients (a slow one is served once it is up).
const upstreamWait = 15 * time.Second

// upstreamsOf is the service as the MCP server's upstreams, when the
// config names any.
func upstreamsOf(cfg *config.Config, svc *service.Service) mcpserver.Upstreams {
	if len(cfg.Upstreams) == 0 {
		return nil
	}
	return svc
}

// startUpstreams connects the upstream servers and serves their tools.
func startUpstreams(cfg *config.Config, svc *service.Service, srv *mcpserver.Server) {
	if len(cfg.Upstreams) == 0 {
		return
	}
	svc.SetVersion(version)
	svc.StartUpstreams(srv.SyncUpstreamTools, func(name string) bool { return name == mcpserver.ToolName }, upstreamWait)
}
