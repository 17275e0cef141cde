package main

import (
	"io"

	"github.com/urfave/cli/v2"

	"github.com/mitrity/mitrity/govern/cliapp"
)

// newApp builds the mitrity-egressproxy command line over the writers it is given.
func newApp(stdout, stderr io.Writer) *cli.App {
	return cliapp.New(cliapp.Spec{
		Name:     "mitrity-egressproxy",
		Usage:    "per-execution helper: the host:port allowlist proxy that is a sandboxed command's only way out",
		Version:  version,
		Commands: []*cli.Command{},
	}, stdout, stderr)
}
