package main

import (
	"io"

	"github.com/urfave/cli/v2"

	"github.com/mitrity/mitrity/govern/cliapp"
)

// newApp builds the mitrity-gateway command line over the writers it is given.
func newApp(stdout, stderr io.Writer) *cli.App {
	return cliapp.New(cliapp.Spec{
		Name:     "mitrity-gateway",
		Usage:    "judge shell commands for AI agents, then run them in a kernel sandbox",
		Version:  version,
		Commands: []*cli.Command{analyzeCommand(), execCommand(), serveCommand(), validateCommand(), configCommand(), auditCommand(), approvalsCommand(), doctorCommand(), agentCommand()},
	}, stdout, stderr)
}
