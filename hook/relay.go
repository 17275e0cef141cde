package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/mitrity/mitrity/admission"
)

// Relay exit codes besides the command's own.
const (
	exitTimedOut    = 124
	exitCannotStart = 126
	exitKilled      = 137
)

func execCommand() *cli.Command {
	return &cli.Command{
		Name:      "exec",
		Usage:     "the relay: redeem a ticket at the gateway, stream the command's redacted output, exit with its code",
		ArgsUsage: "TICKET",
		Description: "The gateway runs the plan it judged at admit time, in its own sandbox; this process never runs the\n" +
			"command itself. Exit codes: the command's own; 124 timed out; 126 could not start or the ticket was\n" +
			"refused (unknown, used, expired, another agent's); 137 killed (also when this relay is interrupted, or the\n" +
			"gateway stops mid-run).",
		Flags:  []cli.Flag{socketFlag, &cli.StringFlag{Name: "agent", Usage: "the agent id the ticket must have been issued to (default: $" + AgentVar + ", else not checked)"}},
		Action: runRelay,
		// A relay that cannot even parse its arguments could not start:
		// 126, never urfave/cli's 1, which would read as the command's.
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return cli.Exit("mitrity-hook exec: "+err.Error(), exitCannotStart)
		},
	}
}

func runRelay(c *cli.Context) error {
	if c.NArg() != 1 {
		return cli.Exit("mitrity-hook exec: want exactly one TICKET", exitCannotStart)
	}
	agent := c.String("agent")
	if agent == "" {
		agent = os.Getenv(AgentVar)
	}
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	client := admission.Client{Socket: socketPath(c)}
	out, errOut := c.App.Writer, c.App.ErrWriter
	res, err := client.Redeem(ctx, admission.RedeemRequest{Ticket: c.Args().First(), Agent: agent}, func(f admission.Frame) error {
		w := out
		if f.Type == admission.FrameStderr {
			w = errOut
		}
		_, err := w.Write(f.Data)
		return err
	})
	if ctx.Err() != nil {
		// Interrupted: closing the stream made the gateway kill the run.
		return cli.Exit("mitrity-hook exec: interrupted; the command was killed", exitKilled)
	}
	if err != nil {
		var e *admission.Error
		if errors.As(err, &e) && e.Code == admission.ErrTicketRefused {
			return cli.Exit("mitrity-hook exec: the gateway refused the ticket ("+e.Message+"); nothing ran", exitCannotStart)
		}
		if errors.Is(err, admission.ErrUnreachable) {
			// No connection, so the ticket never reached the gateway: the
			// model may retry once the gateway is back.
			return cli.Exit("mitrity-hook exec: "+err.Error()+"; the ticket was never presented, so nothing ran", exitCannotStart)
		}
		if e != nil {
			// The gateway answered with an error before any output: a run
			// starts only after the stream does.
			return cli.Exit("mitrity-hook exec: the gateway refused the request ("+e.Message+"); nothing ran", exitCannotStart)
		}
		if errors.Is(err, admission.ErrStreamBroken) {
			// The gateway took the ticket and went away mid-run: a dropped
			// stream kills the run with it.
			return cli.Exit("mitrity-hook exec: "+err.Error()+"; the gateway stopped and the command was killed", exitKilled)
		}
		return cli.Exit("mitrity-hook exec: "+err.Error()+"; the command's outcome is unknown", exitCannotStart)
	}
	if res.Message != "" {
		fmt.Fprintln(errOut, res.Message)
	}
	if len(res.ProtectedCreated) > 0 {
		fmt.Fprintf(errOut, "[protected paths created, reported to the operator: %s]\n", strings.Join(res.ProtectedCreated, ", "))
	}
	switch {
	case res.ExitCode < 0 || res.ExitCode > 255:
		return cli.Exit(fmt.Sprintf("mitrity-hook exec: the gateway sent exit code %d", res.ExitCode), exitCannotStart)
	case res.ExitCode != 0:
		return cli.Exit("", res.ExitCode)
	}
	return nil
}
