package main

import (
	"io"

	"github.com/urfave/cli/v2"

	"github.com/mitrity/mitrity/govern/cliapp"
)

// newApp builds the mitrity-hook command line over the writers it is given.
func newApp(stdout, stderr io.Writer) *cli.App {
	return cliapp.New(cliapp.Spec{
		Name:     "mitrity-hook",
		Usage:    "agent-framework hooks (Claude Code, Gemini CLI, OpenCode) that send each shell call to the gateway for admission",
		Version:  version,
		Commands: []*cli.Command{},
	}, stdout, stderr)
}
