// Package cliapp builds the urfave/cli application every binary is: the
// common --log-level flag, a zerolog logger set up in Before and handed to
// subcommands, output only through the writers it is given (so tests run the
// app in-process), and exit codes carried by errors rather than os.Exit.
package cliapp

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"

	"github.com/mitrity/mitrity/govern/pollfd"
)

const metadataLogger = "logger"

// Spec names one binary.
type Spec struct {
	Name, Usage, Version string
	Commands             []*cli.Command
}

// New returns the application for spec, writing to stdout and stderr.
func New(spec Spec, stdout, stderr io.Writer) *cli.App {
	return &cli.App{
		Name:      spec.Name,
		Usage:     spec.Usage,
		Version:   spec.Version,
		Writer:    stdout,
		ErrWriter: stderr,
		Metadata:  map[string]any{},
		Commands:  spec.Commands,
		// Errors go back to Main, which prints them and exits; the library
		// must not exit the process itself.
		ExitErrHandler: func(*cli.Context, error) {},
		Flags: []cli.Flag{
			&cli.StringFlag{
				Name:  "log-level",
				Value: zerolog.InfoLevel.String(),
				Usage: "log level: trace, debug, info, warn, error or disabled",
			},
			&cli.StringFlag{
				Name:  "log-format",
				Value: "text",
				Usage: "log format: text (for a person) or json (one object a line, for a program reading it: the gateway reads its helpers' logs so)",
			},
		},
		Before: func(c *cli.Context) error {
			logger, err := NewLogger(stderr, c.String("log-level"))
			if err != nil {
				return err
			}
			switch f := c.String("log-format"); f {
			case "text":
			case "json":
				logger = zerolog.New(stderr).Level(logger.GetLevel()).With().Timestamp().Logger()
			default:
				return fmt.Errorf("invalid --log-format %q: want text or json", f)
			}
			c.App.Metadata[metadataLogger] = logger
			return nil
		},
	}
}

// Logger returns the logger Before set up.
func Logger(c *cli.Context) zerolog.Logger {
	if l, ok := c.App.Metadata[metadataLogger].(zerolog.Logger); ok {
		return l
	}
	return zerolog.Nop()
}

// NewLogger returns a human-readable logger writing to w at the named
// level, in colour only when w is a terminal.
func NewLogger(w io.Writer, level string) (zerolog.Logger, error) {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil || level == "" {
		return zerolog.Nop(), fmt.Errorf("invalid --log-level %q: want trace, debug, info, warn, error or disabled", level)
	}
	f, isFile := w.(*os.File)
	color := isFile && isatty.IsTerminal(f.Fd())
	out := zerolog.ConsoleWriter{Out: w, TimeFormat: time.RFC3339, NoColor: !color}
	return zerolog.New(out).Level(lvl).With().Timestamp().Logger(), nil
}

// Main runs app with the process arguments and exits: 0 on success, the
// code of a cli.ExitCoder error, else 1. A non-empty error message is
// printed to stderr first.
func Main(app *cli.App) {
	if manPage(app) {
		return
	}
	err := Run(app, os.Args)
	// Standard input and output made non-blocking for the poller are
	// shared with whoever started this process: hand them back blocking.
	pollfd.Restore()
	if err == nil {
		return
	}
	code := 1
	var ec cli.ExitCoder
	if errors.As(err, &ec) {
		code = ec.ExitCode()
	}
	if msg := err.Error(); msg != "" {
		fmt.Fprintf(app.ErrWriter, "%s: %s\n", app.Name, msg)
	}
	os.Exit(code)
}

// Run runs app with args after moving each command's own flags that follow
// its positional arguments in front of them: urfave/cli stops reading flags
// at the first argument, and people type `audit show ID --config F`. Only
// the command's known flags move; a `--` ends them, and a command that
// takes a command line (ArgsUsage "-- COMMAND") keeps everything after its
// first argument as it is, so `exec ls -la` and `exec echo --json` run
// what they say.
func Run(app *cli.App, args []string) error {
	if len(args) < 2 {
		return app.Run(args)
	}
	out := append([]string{args[0]}, permute(app.Flags, app.Commands, args[1:], false)...)
	return app.Run(out)
}

// permute orders args (what follows a command's name) as flags first, then
// positional arguments, descending into a subcommand when one is named.
func permute(flags []cli.Flag, cmds []*cli.Command, args []string, commandLine bool) []string {
	var lead, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			// Everything after it is an argument: "--" goes in front of
			// the arguments so that the ones before it stay arguments too.
			return append(append(append(lead, "--"), pos...), args[i+1:]...)
		}
		if commandLine && len(pos) > 0 {
			pos = append(pos, args[i:]...)
			break
		}
		if f, ok := knownFlag(flags, a); ok {
			lead = append(lead, a)
			if takesValue(f) && !strings.Contains(a, "=") && i+1 < len(args) {
				lead = append(lead, args[i+1])
				i++
			}
			continue
		}
		if len(pos) == 0 {
			if sub := findCommand(cmds, a); sub != nil {
				if sub.SkipFlagParsing {
					return append(append(lead, a), args[i+1:]...)
				}
				rest := permute(sub.Flags, sub.Subcommands, args[i+1:], strings.HasPrefix(sub.ArgsUsage, "--"))
				return append(append(lead, a), rest...)
			}
		}
		pos = append(pos, a)
	}
	return append(lead, pos...)
}

// knownFlag is the flag a token such as -x, --name or --name=v names.
func knownFlag(flags []cli.Flag, a string) (cli.Flag, bool) {
	if len(a) < 2 || a[0] != '-' {
		return nil, false
	}
	name, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
	for _, f := range append(flags, cli.HelpFlag) {
		if f == nil {
			continue
		}
		for _, n := range f.Names() {
			if n == name {
				return f, true
			}
		}
	}
	return nil, false
}

func takesValue(f cli.Flag) bool {
	d, ok := f.(cli.DocGenerationFlag)
	return ok && d.TakesValue()
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}
