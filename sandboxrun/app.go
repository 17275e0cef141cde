package main

import (
	"io"

	"github.com/urfave/cli/v2"

	"github.com/mitrity/mitrity/govern/cliapp"
)

// newApp builds the mitrity-sandboxrun command line over the writers it is given.
func newApp(stdout, stderr io.Writer) *cli.App {
	return cliapp.New(cliapp.Spec{
		Name:     "mitrity-sandboxrun",
		Usage:    "per-execution helper that builds the kernel sandbox (bubblewrap, seccomp, namespaces, limits) and runs one judged command in it",
		Version:  version,
		Commands: []*cli.Command{},
	}, stdout, stderr)
}
