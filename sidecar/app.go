package main

import (
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/mitrity/mitrity/govern/cliapp"
	"github.com/mitrity/mitrity/govern/config"
	"github.com/mitrity/mitrity/govern/servecmd"
)

// newApp builds the mitrity-sidecar command line over the writers it is given.
func newApp(stdout, stderr io.Writer) *cli.App {
	app := cliapp.New(cliapp.Spec{
		Name:    "mitrity-sidecar",
		Usage:   "runs next to one MCP server and puts the governed-shell decision pipeline in front of its tools",
		Version: version,
	}, stdout, stderr)
	app.UsageText = "mitrity-sidecar [--config F] [--name NAME] -- SERVER COMMAND...     (stdio: the agent launches the sidecar, the sidecar launches the server, sandboxed)\n" +
		"mitrity-sidecar [--config F] [--name NAME] --listen ADDR --token-file F --upstream-url URL     (Streamable HTTP in front of an HTTP server)"
	app.Description = "The same pipeline as mitrity-gateway in front of exactly one MCP server: tool permissions, injection scan,\n" +
		"threat intel, policy rules, holds, DLP and credential brokering on every call; redaction and an injection scan\n" +
		"of every result; tool definitions hashed and a changed one withheld until approved; one audit event per call.\n" +
		"The server is the config's one upstreams: entry, or the command after -- (or --upstream-url), named --name.\n" +
		"No shell__execute is served and no admission socket. SIGHUP reloads the policy; SIGTERM stops gracefully."
	app.Flags = append(app.Flags, append(servecmd.Flags("listen"),
		&cli.StringFlag{Name: "name", Usage: "the server's name: its tools are served as NAME__<tool> (default: the config's one upstream's name, else \"server\")"},
		&cli.StringFlag{Name: "upstream-url", Usage: "the Streamable HTTP MCP server to front (instead of a command after --)"},
	)...)
	app.Action = serve
	return app
}

func serve(c *cli.Context) error {
	command := c.Args().Slice()
	url := c.String("upstream-url")
	if len(command) > 0 && url != "" {
		return cli.Exit("give the server as a command after -- or as --upstream-url, not both", 2)
	}
	return servecmd.Serve(c, servecmd.Options{Listen: "listen", Version: version,
		Adjust: func(cfg *config.Config) error { return front(cfg, c.String("name"), command, url) }})
}

// front makes cfg the sidecar's: exactly one upstream (the config's one
// entry, its command or URL replaced by the command line's when given),
// no governed shell and no admission socket.
func front(cfg *config.Config, name string, command []string, url string) error {
	var u config.Upstream
	switch len(cfg.Upstreams) {
	case 0:
		if name == "" {
			name = "server"
		}
		u = config.NewUpstream(name)
	case 1:
		u = cfg.Upstreams[slices.Collect(maps.Keys(cfg.Upstreams))[0]]
		if name != "" && name != u.Name {
			return fmt.Errorf("--name %s, but the config's upstream is named %s", name, u.Name)
		}
	default:
		return fmt.Errorf("a sidecar fronts exactly one server, and the config names %d upstreams (%v); use mitrity-gateway serve for several", len(cfg.Upstreams), slices.Sorted(maps.Keys(cfg.Upstreams)))
	}
	switch {
	case len(command) > 0:
		u.Command, u.URL, u.Headers, u.TLS = command, "", nil, config.UpstreamTLS{}
	case url != "":
		u.URL, u.Command, u.Env, u.Cwd, u.WritableRoots, u.Egress = url, nil, nil, "", nil, nil
	case len(cfg.Upstreams) == 0:
		return fmt.Errorf("no server to front: give its command after --, --upstream-url, or one upstreams: entry in the config")
	}
	cfg.Upstreams = map[string]config.Upstream{u.Name: u}
	cfg.Exec.Enabled = false
	cfg.Admission.Enabled = false
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("invalid configuration, refusing to start:\n%w", err)
	}
	return nil
}
