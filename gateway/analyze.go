package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/shell"
)

// exitDenied is the exit code of a command the analyzer refuses to judge.
const exitDenied = 2

func analyzeCommand() *cli.Command {
	return &cli.Command{
		Name:      "analyze",
		Usage:     "parse a command the way the gateway judges it and print what it would run (runs nothing)",
		ArgsUsage: "-- COMMAND",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dialect", Value: "bash", Usage: "bash or sh: the shell that would run the command"},
			&cli.StringSliceFlag{Name: "root", Usage: "script-inspection root (repeatable; default: the working directory)"},
			&cli.StringFlag{Name: "cwd", Usage: "directory the command would run in (default: the current directory)"},
			&cli.StringSliceFlag{Name: "credential-var", Usage: "environment variable that carries a credential (repeatable; MITRITY_CRED_* always do)"},
			&cli.BoolFlag{Name: "json", Usage: "print the analysis as JSON"},
		},
		Action: runAnalyze,
	}
}

func runAnalyze(c *cli.Context) error {
	if c.NArg() == 0 {
		return cli.Exit("analyze: no command given; usage: mitrity-gateway analyze [--json] -- 'COMMAND'", exitDenied)
	}
	cwd := c.String("cwd")
	if cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return fmt.Errorf("analyze: %w", err)
		}
		cwd = wd
	}
	cwd, err := filepath.Abs(cwd)
	if err != nil {
		return fmt.Errorf("analyze: --cwd: %w", err)
	}
	roots := c.StringSlice("root")
	if len(roots) == 0 {
		roots = []string{cwd}
	}
	for i, r := range roots {
		if roots[i], err = filepath.Abs(r); err != nil {
			return fmt.Errorf("analyze: --root %s: %w", r, err)
		}
	}
	a := shell.Analyze(shell.Input{
		Text:            strings.Join(c.Args().Slice(), " "),
		Dialect:         shell.Dialect(c.String("dialect")),
		Cwd:             cwd,
		Path:            filepath.SplitList(os.Getenv("PATH")),
		Home:            os.Getenv("HOME"),
		InspectionRoots: roots,
		WritableRoots:   []string{cwd},
		CredentialVars:  c.StringSlice("credential-var"),
		CredentialDir:   govern.CredentialDir,
	})
	out := c.App.Writer
	if c.Bool("json") {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(a); err != nil {
			return err
		}
	} else if err := a.WriteReport(out); err != nil {
		return err
	}
	if a.Denial != nil {
		fmt.Fprintf(c.App.ErrWriter, "denied: %s\n", a.Denial.Error())
		return cli.Exit("", exitDenied)
	}
	return nil
}
