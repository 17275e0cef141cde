package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/mitrity/mitrity/govern/pipeline"
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
			pol, err := service.LoadPolicy(cfg)
			if err != nil {
				return cli.Exit(fmt.Sprintf("invalid policy, refusing to start:\n%v", err), 1)
			}
			if _, err := pipeline.New(cfg, pol, cfg.Exec.DefaultCwd); err != nil {
				return cli.Exit(fmt.Sprintf("invalid policy, refusing to start:\n%v", err), 1)
			}
			if err := service.CheckOwnFiles(cfg, pol); err != nil {
				return cli.Exit(fmt.Sprintf("the gateway's own files are within reach of the commands it runs, refusing to start:\n%v", err), 1)
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
