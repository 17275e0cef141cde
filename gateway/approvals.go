package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/mitrity/mitrity/govern/hold"
)

func approvalsCommand() *cli.Command {
	dir := &cli.StringFlag{Name: "admin-dir", Value: hold.DefaultDir(), Usage: "directory of the gateways' admin sockets"}
	answer := func(approve bool) cli.ActionFunc {
		return func(c *cli.Context) error {
			if c.NArg() != 1 {
				return cli.Exit("usage: mitrity-gateway approvals approve|deny ID", 1)
			}
			if err := (hold.Client{Dir: c.String("admin-dir")}).Answer(c.Context, c.Args().First(), approve); err != nil {
				return cli.Exit(fmt.Sprintf("%s: %v", c.Args().First(), err), 1)
			}
			verb := "denied"
			if approve {
				verb = "approved"
			}
			fmt.Fprintf(c.App.Writer, "%s %s\n", verb, c.Args().First())
			return nil
		}
	}
	return &cli.Command{
		Name:  "approvals",
		Usage: "list and answer held calls (owner-only admin socket)",
		Subcommands: []*cli.Command{
			{Name: "list", Flags: []cli.Flag{dir}, Usage: "pending held calls", Action: func(c *cli.Context) error {
				ps, err := hold.Client{Dir: c.String("admin-dir")}.List(c.Context)
				if err != nil {
					return cli.Exit(err.Error(), 1)
				}
				tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tAGENT\tREASON\tRULE\tEXPIRES\tCOMMAND")
				for _, p := range ps {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", p.ID, p.Agent, p.Reason, p.Rule, p.ExpiresAt.Format("15:04:05"), p.Command)
				}
				return tw.Flush()
			}},
			{Name: "show", ArgsUsage: "ID", Flags: []cli.Flag{dir}, Usage: "one pending held call in full: its command, or its tool and every byte of its arguments", Action: func(c *cli.Context) error {
				if c.NArg() != 1 {
					return cli.Exit("usage: mitrity-gateway approvals show ID", 1)
				}
				ps, err := hold.Client{Dir: c.String("admin-dir")}.List(c.Context)
				if err != nil {
					return cli.Exit(err.Error(), 1)
				}
				for _, p := range ps {
					if p.ID != c.Args().First() {
						continue
					}
					w := c.App.Writer
					fmt.Fprintf(w, "id: %s\nagent: %s\nreason: %s\n", p.ID, p.Agent, p.Reason)
					if p.Rule != "" {
						fmt.Fprintf(w, "rule: %s\n", p.Rule)
					}
					if p.Message != "" {
						fmt.Fprintf(w, "message: %s\n", p.Message)
					}
					if p.Cwd != "" {
						fmt.Fprintf(w, "cwd: %s\n", p.Cwd)
					}
					fmt.Fprintf(w, "expires: %s\n", p.ExpiresAt.Format("15:04:05"))
					if p.Arguments != "" {
						// The tool, then the arguments in full on a line of
						// their own: the list shows their first 2 KiB.
						tool, _, _ := strings.Cut(p.Command, " ")
						fmt.Fprintf(w, "tool: %s\narguments (%d bytes):\n%s\n", tool, len(p.Arguments), p.Arguments)
						return nil
					}
					fmt.Fprintf(w, "command:\n%s\n", p.Command)
					return nil
				}
				return cli.Exit(fmt.Sprintf("%s: %v", c.Args().First(), hold.ErrUnknown), 1)
			}},
			{Name: "approve", ArgsUsage: "ID", Flags: []cli.Flag{dir}, Action: answer(true)},
			{Name: "deny", ArgsUsage: "ID", Flags: []cli.Flag{dir}, Action: answer(false)},
		},
	}
}
