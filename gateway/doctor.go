package main

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/mitrity/mitrity/govern/service"
)

func doctorCommand() *cli.Command {
	return &cli.Command{
		Name:  "doctor",
		Usage: "check this host against the configuration: shell, working directory, sandbox backend and why, seccomp, cgroups, credential sources, audit sink; runs no agent command and prints no credential value",
		Flags: []cli.Flag{configFlag, &cli.BoolFlag{Name: "json"}},
		Action: func(c *cli.Context) error {
			cfg, err := loadConfig(c)
			if err != nil {
				return cli.Exit(err.Error(), 1)
			}
			checks, ok := service.Doctor(c.Context, cfg)
			if c.Bool("json") {
				enc := json.NewEncoder(c.App.Writer)
				enc.SetIndent("", "  ")
				if err := enc.Encode(map[string]any{"ok": ok, "checks": checks}); err != nil {
					return err
				}
			} else {
				tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
				for _, ck := range checks {
					mark := "ok"
					if !ck.OK {
						mark = "FAIL"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\n", mark, ck.Name, ck.Detail)
					if !ck.OK && ck.Remedy != "" {
						fmt.Fprintf(tw, "\t\tremedy: %s\n", ck.Remedy)
					}
				}
				tw.Flush()
			}
			if !ok {
				return cli.Exit("", 1)
			}
			return nil
		},
	}
}
