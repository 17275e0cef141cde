package main

import (
	"io"

	"github.com/urfave/cli/v2"

	"github.com/mitrity/mitrity/govern/cliapp"
)

// newApp builds the mitrity-egressproxy command line over the streams it is
// given.
func newApp(stdin io.Reader, stdout, stderr io.Writer) *cli.App {
	return cliapp.New(cliapp.Spec{
		Name:     "mitrity-egressproxy",
		Usage:    "per-execution helper: the host:port allowlist proxy that is a sandboxed command's only way out",
		Version:  version,
		Commands: []*cli.Command{serveCommand(stdin, stdout)},
	}, stdout, stderr)
}
