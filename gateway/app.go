package main

import (
	"io"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"

	"github.com/mitrity/mitrity/govern/logging"
)

// metadataLogger is the app.Metadata key under which Before stores the
// zerolog.Logger that subcommands pass into the constructors they call.
const metadataLogger = "logger"

// newApp builds the mitrity-gateway command line. It writes only to stdout and
// stderr, never to the process's own streams, so tests can run it in-process.
func newApp(stdout, stderr io.Writer) *cli.App {
	return &cli.App{
		Name:      "mitrity-gateway",
		Usage:     "judge shell commands for AI agents, then run them in a kernel sandbox",
		Version:   version,
		Writer:    stdout,
		ErrWriter: stderr,
		Metadata:  map[string]any{},
		// Errors are returned to main, which prints them and exits non-zero;
		// the library must not exit the process itself.
		ExitErrHandler: func(*cli.Context, error) {},
		Flags: []cli.Flag{
			&cli.StringFlag{
				Name:  "log-level",
				Value: zerolog.InfoLevel.String(),
				Usage: logging.Levels,
			},
		},
		Commands: []*cli.Command{
			analyzeCommand(),
		},
		Before: func(c *cli.Context) error {
			logger, err := logging.New(stderr, c.String("log-level"))
			if err != nil {
				return err
			}
			c.App.Metadata[metadataLogger] = logger
			return nil
		},
	}
}
