package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/sandbox"
)

// maxSpecBytes bounds the spec read from the pipe: a 64 KiB command, the
// environment, pinned scripts and credential files fit many times over.
const maxSpecBytes = 64 << 20

func runCommand() *cli.Command {
	return &cli.Command{
		Name:  "run",
		Usage: "read a spec (JSON) on --spec-fd, run its command in the sandbox, write the result (JSON) on --result-fd; the command's stdin, stdout and stderr are this process's",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "spec-fd", Required: true, Usage: "descriptor to read the spec from, to EOF"},
			&cli.IntFlag{Name: "result-fd", Required: true, Usage: "descriptor to write the result to"},
		},
		Action: func(c *cli.Context) error {
			specFD, resultFD := c.Int("spec-fd"), c.Int("result-fd")
			if specFD < 3 || resultFD < 3 || specFD == resultFD {
				return cli.Exit("--spec-fd and --result-fd must be two different descriptors above 2", 2)
			}
			out := os.NewFile(uintptr(resultFD), "result")
			if out == nil {
				return cli.Exit(fmt.Sprintf("--result-fd %d is not open", resultFD), 2)
			}
			defer out.Close()
			res := runSpec(os.NewFile(uintptr(specFD), "spec"))
			if err := json.NewEncoder(out).Encode(res); err != nil {
				return cli.Exit(fmt.Sprintf("writing the result: %v", err), 1)
			}
			return nil
		},
	}
}

// runSpec reads the spec and runs it; SIGTERM or SIGINT end the run as
// cancelled.
func runSpec(in *os.File) sandbox.Result {
	if err := sandbox.DieWithParent(); err != nil {
		return sandbox.Result{Status: govern.StatusFailedToStart, Reason: govern.ReasonSpawnError, Message: "parent-death signal: " + err.Error()}
	}
	if in == nil {
		return sandbox.Result{Status: govern.StatusFailedToStart, Reason: govern.ReasonSpawnError, Message: "the spec descriptor is not open"}
	}
	b, err := io.ReadAll(io.LimitReader(in, maxSpecBytes+1))
	in.Close()
	var spec sandbox.Spec
	switch {
	case err != nil:
		err = fmt.Errorf("reading the spec: %w", err)
	case len(b) > maxSpecBytes:
		err = fmt.Errorf("the spec is larger than %d bytes", maxSpecBytes)
	default:
		if err = json.Unmarshal(b, &spec); err != nil {
			err = fmt.Errorf("decoding the spec: %w", err)
		}
	}
	if err != nil {
		return sandbox.Result{Status: govern.StatusFailedToStart, Reason: govern.ReasonSpawnError, Message: err.Error()}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return sandbox.Run(ctx, &spec, sandbox.Stdio{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
}
