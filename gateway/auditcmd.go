package main

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/mitrity/mitrity/govern/audit"
)

func auditCommand() *cli.Command {
	return &cli.Command{
		Name:  "audit",
		Usage: "read the audit log",
		Subcommands: []*cli.Command{
			{
				Name:  "list",
				Usage: "one line per call, oldest first (--all: one per event)",
				Flags: []cli.Flag{
					configFlag,
					&cli.StringFlag{Name: "sandbox-mode", Usage: "only executions stamped with this mode"},
					&cli.StringFlag{Name: "status", Usage: "only executions with this status"},
					&cli.StringFlag{Name: "agent"},
					&cli.StringFlag{Name: "since", Usage: "RFC 3339 time or a duration back from now (1h)"},
					&cli.BoolFlag{Name: "json", Usage: "one JSON event per line"},
					&cli.BoolFlag{Name: "all", Usage: "every event: a call that ran shows its decision (written before it started) as well as its execution"},
				},
				Action: func(c *cli.Context) error {
					cfg, err := loadConfig(c)
					if err != nil {
						return cli.Exit(err.Error(), 1)
					}
					f := audit.Filter{SandboxMode: c.String("sandbox-mode"), Status: c.String("status"), Agent: c.String("agent")}
					if s := c.String("since"); s != "" {
						if d, err := time.ParseDuration(s); err == nil {
							f.Since = time.Now().Add(-d)
						} else if t, err := time.Parse(time.RFC3339, s); err == nil {
							f.Since = t
						} else {
							return cli.Exit(fmt.Sprintf("--since %q: want RFC 3339 or a duration", s), 1)
						}
					}
					events, err := audit.ReadAll(cfg.Audit.Path, f)
					if err != nil && len(events) == 0 {
						return cli.Exit(err.Error(), 1)
					}
					if !c.Bool("all") {
						events = audit.Calls(events)
					}
					if c.Bool("json") {
						enc := json.NewEncoder(c.App.Writer)
						for _, ev := range events {
							if err := enc.Encode(ev); err != nil {
								return err
							}
						}
					} else if err := audit.RenderList(c.App.Writer, events); err != nil {
						return err
					}
					if err != nil {
						fmt.Fprintln(c.App.ErrWriter, err)
					}
					return nil
				},
			},
			{
				Name:      "show",
				Usage:     "the execution card of one event, and the events linked to it",
				ArgsUsage: "EVENT_ID",
				Flags:     []cli.Flag{configFlag, &cli.BoolFlag{Name: "json"}},
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return cli.Exit("usage: mitrity-gateway audit show EVENT_ID", 1)
					}
					cfg, err := loadConfig(c)
					if err != nil {
						return cli.Exit(err.Error(), 1)
					}
					ev, err := audit.Find(cfg.Audit.Path, c.Args().First())
					if err != nil {
						return cli.Exit(err.Error(), 1)
					}
					// A decision's execution, an execution's refused
					// destinations: the call, whichever id was given.
					linked, _ := audit.Linked(cfg.Audit.Path, ev.ID)
					for _, e := range append([]*audit.Event{ev}, linked...) {
						if c.Bool("json") {
							enc := json.NewEncoder(c.App.Writer)
							enc.SetIndent("", "  ")
							if err := enc.Encode(e); err != nil {
								return err
							}
							continue
						}
						if e != ev {
							fmt.Fprintln(c.App.Writer)
						}
						if err := audit.RenderCard(c.App.Writer, e); err != nil {
							return err
						}
					}
					return nil
				},
			},
		},
	}
}
