package main

import (
	"context"
	"fmt"
	"time"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"

	"github.com/mitrity/mitrity/govern/cliapp"
	"github.com/mitrity/mitrity/govern/config"
	"github.com/mitrity/mitrity/govern/servecmd"
	"github.com/mitrity/mitrity/govern/service"
)

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "serve the shell__execute MCP tool and the upstreams' tools over stdio (the default) or Streamable HTTP, and the admission socket for agent-framework hooks",
		Description: "Every tools/call goes through the same pipeline, executor and audit as `mitrity-gateway exec`.\n" +
			"The tools of the upstream MCP servers under upstreams: are served as <server>__<tool> beside shell__execute.\n" +
			"Over stdio every call is made as --agent. Over HTTP a bearer token is required: --token-file lists\n" +
			"`TOKEN AGENT_ID` lines (mode 0600) and the token names the agent. SIGTERM or SIGINT stops accepting\n" +
			"calls, lets running ones finish, and cancels (kills) those still running after --grace.\n" +
			"With admission.enabled (the default) the admission socket is served too, for mitrity-hook;\n" +
			"--admission-only serves nothing else. SIGHUP reopens the audit log (logrotate's postrotate) and reloads the\n" +
			"config and policy: the new ones are validated\n" +
			"whole first, and when they are not, the running ones stay and the log says why.",
		Flags: append(servecmd.Flags("http"),
			&cli.BoolFlag{Name: "admission-only", Usage: "serve only the admission socket (for mitrity-hook), no MCP"}),
		Action: runServe,
	}
}

func runServe(c *cli.Context) error {
	if c.Bool("admission-only") && (c.Bool("stdio") || c.IsSet("http")) {
		return cli.Exit("serve: --admission-only serves no MCP; drop --stdio and --http", 2)
	}
	if c.NArg() > 0 {
		return cli.Exit(fmt.Sprintf("serve: unexpected arguments %q", c.Args().Slice()), 2)
	}
	// systemd's descriptors first: nothing started may inherit them.
	if err := takePassed(cliapp.Logger(c)); err != nil {
		return cli.Exit(fmt.Sprintf("serve: %v", err), 1)
	}
	return servecmd.Serve(c, servecmd.Options{Name: "serve", Listen: "http", Version: version,
		Before: func(ctx context.Context, cfg *config.Config, svc *service.Service, logger zerolog.Logger, grace time.Duration) (func(), bool, error) {
			return serveAdmission(c, cfg, svc, logger, grace)
		},
		Ready: func(what string) { notifyReady(what, cliapp.Logger(c)) }})
}

// serveAdmission serves the admission socket for mitrity-hook, when the config
// enables it: done when --admission-only serves nothing else.
func serveAdmission(c *cli.Context, cfg *config.Config, svc *service.Service, logger zerolog.Logger, grace time.Duration) (stop func(), done bool, err error) {
	if c.Bool("admission-only") && !cfg.Admission.Enabled {
		return nil, false, cli.Exit("serve: --admission-only, but admission.enabled is false", 2)
	}
	if !cfg.Admission.Enabled {
		dropPassed(logger)
	}
	if cfg.Admission.Enabled {
		adm, err := listenAdmission(cfg, svc, logger)
		switch {
		case err == nil:
			stop = func() { adm.shutdown(grace) }
		case c.Bool("admission-only") || c.IsSet("http"):
			return nil, false, cli.Exit(fmt.Sprintf("serve: %v", err), 1)
		default:
			// An agent that starts its own stdio gateway per session
			// finds the socket served by the first: that one answers
			// the hooks.
			logger.Warn().Err(err).Msg("admission socket not served by this process")
		}
	}
	return stop, c.Bool("admission-only"), nil
}
