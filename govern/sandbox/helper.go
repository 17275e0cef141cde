package sandbox

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/mitrity/mitrity/govern"
)

// The helper protocol. The gateway runs every execution in a process of
// its own, mitrity-sandboxrun, started for that execution alone and never
// reused: "run --spec-fd 3 --result-fd 4", the spec in on descriptor 3
// (JSON, to EOF), the result out on descriptor 4 (JSON, one object), the
// command's stdin, stdout and stderr the helper's own; SIGTERM cancels the
// run. A supervisor bug, or a command that finds one, can then take down
// that process only, never the gateway, its credentials or its audit
// writer. Spawn is the gateway's half, HelperMain the helper's; the Spec
// and the Result are the wire form.

// HelperRun is mitrity-sandboxrun's subcommand that runs one spec.
const HelperRun = "run"

// maxSpecBytes bounds the spec read from the pipe: a 64 KiB command, the
// environment, pinned scripts and credential files fit many times over.
const maxSpecBytes = 64 << 20

// maxResultBytes bounds the result read back: a result is a few KiB.
const maxResultBytes = 4 << 20

// HelperMain is "run": it parses its flags (the standard library's, so
// that nothing on a run's path initialises a command-line framework),
// runs the spec and writes the result. It returns the exit code: 0 once a
// result is written, whatever the run's status; 1 when the result could
// not be written; 2 for a usage error.
func HelperMain(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet(HelperRun, flag.ContinueOnError)
	fs.SetOutput(stderr)
	specFD := fs.Int("spec-fd", -1, "descriptor to read the spec from, to EOF")
	resultFD := fs.Int("result-fd", -1, "descriptor to write the result to")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *specFD < 0 || *resultFD < 0 {
		fmt.Fprintln(stderr, "run: --spec-fd and --result-fd are required")
		return 2
	}
	if *specFD < 3 || *resultFD < 3 || *specFD == *resultFD || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "run: --spec-fd and --result-fd must be two different descriptors above 2, and nothing else")
		return 2
	}
	// Neither descriptor may reach bubblewrap or the command: a command
	// that held the result descriptor could write the gateway a result.
	syscall.CloseOnExec(*specFD)
	syscall.CloseOnExec(*resultFD)
	out := os.NewFile(uintptr(*resultFD), "result")
	if out == nil {
		fmt.Fprintf(stderr, "run: --result-fd %d is not open\n", *resultFD)
		return 2
	}
	defer out.Close()
	res := RunSpec(os.NewFile(uintptr(*specFD), "spec"))
	if err := json.NewEncoder(out).Encode(res); err != nil {
		fmt.Fprintf(stderr, "run: writing the result: %v\n", err)
		return 1
	}
	return 0
}

// RunSpec reads a spec from in (to EOF) and runs it with this process's
// standard streams; SIGTERM or SIGINT end the run as cancelled. Whatever
// goes wrong, it returns a result that says so.
func RunSpec(in *os.File) Result {
	if err := DieWithParent(); err != nil {
		return notStarted(govern.StatusFailedToStart, govern.ReasonSpawnError, "parent-death signal: %v", err)
	}
	if in == nil {
		return notStarted(govern.StatusFailedToStart, govern.ReasonSpawnError, "the spec descriptor is not open")
	}
	b, err := io.ReadAll(io.LimitReader(in, maxSpecBytes+1))
	in.Close()
	var spec Spec
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
		return notStarted(govern.StatusFailedToStart, govern.ReasonSpawnError, "%v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return Run(ctx, &spec, Stdio{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
}
