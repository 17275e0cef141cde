package main

import (
	"io"

	"github.com/urfave/cli/v2"

	"github.com/mitrity/mitrity/govern/cliapp"
)

// newApp builds the mitrity-sidecar command line over the writers it is given.
func newApp(stdout, stderr io.Writer) *cli.App {
	return cliapp.New(cliapp.Spec{
		Name:     "mitrity-sidecar",
		Usage:    "runs next to one MCP server and puts the governed-shell decision pipeline in front of its tools",
		Version:  version,
		Commands: []*cli.Command{},
	}, stdout, stderr)
}
