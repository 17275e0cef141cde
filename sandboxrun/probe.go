package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/mitrity/mitrity/govern/sandbox"
)

func probeFlags() []cli.Flag {
	return []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print the probe report as JSON"}}
}

func probeCommand() *cli.Command {
	return &cli.Command{
		Name:   "probe",
		Usage:  "report what this host can enforce (bubblewrap, user namespaces, seccomp, cgroups); exit 0 only at full strength",
		Flags:  probeFlags(),
		Action: probeAction,
	}
}

func probeAction(c *cli.Context) error {
	r := sandbox.Probe(context.Background())
	w := c.App.Writer
	if c.Bool("json") {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return err
		}
	} else {
		for _, ck := range r.Checks {
			state := "ok  "
			if !ck.OK {
				state = "FAIL"
			}
			fmt.Fprintf(w, "%s %-16s %s%s\n", state, ck.Name, ck.Detail, ck.Reason)
			if ck.Remedy != "" {
				fmt.Fprintf(w, "     %-16s remedy: %s\n", "", ck.Remedy)
			}
		}
		if r.FullStrength {
			fmt.Fprintln(w, "full strength: sandbox_mode bubblewrap")
		} else {
			fmt.Fprintln(w, "not full strength: see the failed checks")
		}
	}
	if !r.FullStrength {
		return cli.Exit("", 1)
	}
	return nil
}
