package main

import (
	"io"

	"github.com/urfave/cli/v2"

	"github.com/mitrity/mitrity/govern/cliapp"
)

// newApp builds the mitrity-sandboxrun command line over the writers it is given.
func newApp(stdout, stderr io.Writer) *cli.App {
	app := cliapp.New(cliapp.Spec{
		Name:     "mitrity-sandboxrun",
		Usage:    "per-execution helper that builds the kernel sandbox (bubblewrap, seccomp, namespaces, limits) and runs one judged command in it",
		Version:  version,
		Commands: []*cli.Command{runCommand(), probeCommand(), initCommand(), probeSeccompCommand()},
	}, stdout, stderr)
	// --probe [--json] [--require L] is the same as the probe subcommand:
	// the form a CI image's check is written in.
	app.Flags = append(app.Flags, probeFlags()...)
	app.Flags = append(app.Flags, &cli.BoolFlag{Name: "probe", Usage: probeUsage})
	app.Action = func(c *cli.Context) error {
		if c.Bool("probe") {
			return probeAction(c)
		}
		return cli.ShowAppHelp(c)
	}
	return app
}
