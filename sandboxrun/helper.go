package main

import (
	"github.com/urfave/cli/v2"

	"github.com/mitrity/mitrity/govern/sandbox"
)

// The hidden subcommands run inside the sandbox (init) or beside it
// (probe-seccomp); nothing else calls them.

func initCommand() *cli.Command {
	return &cli.Command{
		Name:   sandbox.HelperInit,
		Hidden: true,
		Usage:  "the sandbox's first process: egress listener, limits, then execve of the command",
		Action: func(*cli.Context) error { return sandbox.Init() },
	}
}

func probeSeccompCommand() *cli.Command {
	return &cli.Command{
		Name:   sandbox.HelperProbeSeccomp,
		Hidden: true,
		Usage:  "install the command's seccomp filter on this process and check it holds",
		Action: func(*cli.Context) error {
			if err := sandbox.ProbeSeccompChild(); err != nil {
				return cli.Exit("", 1)
			}
			return nil
		},
	}
}
