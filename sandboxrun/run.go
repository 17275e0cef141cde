package main

import (
	"github.com/urfave/cli/v2"

	"github.com/mitrity/mitrity/govern/sandbox"
)

// runCommand is "run" as the command line lists it. The gateway's calls
// never reach it: main hands "run" to sandbox.HelperMain before the
// framework is built, so that a run's start initialises nothing it does not
// use; this entry gives the same function to `help` and to the tests.
func runCommand() *cli.Command {
	return &cli.Command{
		Name:            sandbox.HelperRun,
		Usage:           "read a spec (JSON) on --spec-fd, run its command in the sandbox, write the result (JSON) on --result-fd; the command's stdin, stdout and stderr are this process's",
		ArgsUsage:       "--spec-fd N --result-fd M",
		SkipFlagParsing: true,
		Action: func(c *cli.Context) error {
			if code := sandbox.HelperMain(c.Args().Slice(), c.App.ErrWriter); code != 0 {
				return cli.Exit("", code)
			}
			return nil
		},
	}
}
