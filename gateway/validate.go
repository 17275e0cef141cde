package main

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/mitrity/mitrity/govern/service"
)

func validateCommand() *cli.Command {
	return &cli.Command{
		Name:  "validate",
		Usage: "check the configuration and its policy the way the gateway does at boot; exit non-zero naming each problem",
		Flags: []cli.Flag{configFlag},
		Action: func(c *cli.Context) error {
			cfg, err := loadConfig(c)
			if err != nil {
				return cli.Exit(err.Error(), 1)
			}
			// What a start builds, so that what passes here starts.
			pol, err := service.Preflight(cfg)
			if err != nil {
				if msg := err.Error(); !strings.Contains(msg, "refusing to start") {
					return cli.Exit("invalid configuration or policy, refusing to start:\n"+msg, 1)
				}
				return cli.Exit(err.Error(), 1)
			}
			src := cfg.File
			if cfg.Embedded {
				src = "embedded default configuration"
			}
			fmt.Fprintf(c.App.Writer, "ok: %s (policy: %s)\n", src, pol.File)
			return nil
		},
	}
}

func configCommand() *cli.Command {
	return &cli.Command{
		Name:  "config",
		Usage: "show configuration",
		Subcommands: []*cli.Command{{
			Name:  "print-default",
			Usage: "print the embedded default configuration",
			Action: func(c *cli.Context) error {
				_, err := c.App.Writer.Write(configDefault())
				return err
			},
		}},
	}
}
