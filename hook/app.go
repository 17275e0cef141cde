package main

import (
	"io"

	"github.com/urfave/cli/v2"

	"github.com/mitrity/mitrity/govern/cliapp"
	"github.com/mitrity/mitrity/hook/framework"
)

// newApp builds the mitrity-hook command line over the writers it is given.
func newApp(stdout, stderr io.Writer) *cli.App {
	return cliapp.New(cliapp.Spec{
		Name:     "mitrity-hook",
		Usage:    "agent-framework hooks (Claude Code, Codex CLI, Gemini CLI, OpenCode) that send each shell call to the gateway for admission",
		Version:  version,
		Commands: commands(),
	}, stdout, stderr)
}

func commands() []*cli.Command {
	var cmds []*cli.Command
	for _, n := range framework.Names {
		cmds = append(cmds, frameworkCommand(n))
	}
	return append(cmds, execCommand(), renderSettingsCommand(), renderOpenCodePluginCommand())
}
