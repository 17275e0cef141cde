package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/mitrity/mitrity/govern/cliapp"
	"github.com/mitrity/mitrity/govern/egress"
)

// serveCommand is `mitrity-egressproxy serve --socket PATH` (or
// --listen-fd N): configuration as JSON on stdin, "ready" then the JSON
// report on stdout; it stops when stdin closes or on SIGTERM/SIGINT, and
// dies with its parent.
func serveCommand(stdin io.Reader, stdout io.Writer) *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "serve the allowlist proxy on a Unix socket: config JSON on stdin, report JSON on stdout",
		Description: `Reads {"allow": [...], "allowed_ports": [...], "denied_cidrs": [...],
"allowed_private_cidrs": [...]} from stdin, listens on --socket (mode 0600) or
serves the listening socket inherited as --listen-fd, prints "ready" when
listening, and serves CONNECT and absolute-form http:// requests until stdin
is closed or SIGTERM arrives; then prints the report {"allowed", "denied",
"denied_hosts", "denials", ...} and exits 0.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "socket", Usage: "Unix socket `PATH` to create and listen on; must not exist"},
			&cli.IntFlag{Name: "listen-fd", Value: -1, Usage: "serve the listening Unix stream socket inherited as descriptor `N` (how the gateway runs it)"},
			&cli.IntFlag{Name: "parent-pid", Usage: "exit at once unless the parent is still `PID` (closes the race before the parent-death signal is set)"},
		},
		Action: func(c *cli.Context) error {
			if err := dieWithParent(c.Int("parent-pid")); err != nil {
				return cli.Exit(fmt.Sprintf("parent-death signal: %v", err), 1)
			}
			o := egress.ServeOptions{
				Socket: c.String("socket"),
				Stdin:  stdin,
				Stdout: stdout,
				Logger: cliapp.Logger(c),
			}
			if fd := c.Int("listen-fd"); fd >= 0 {
				if o.Socket != "" {
					return cli.Exit("--socket and --listen-fd exclude each other", 1)
				}
				ln, err := inheritedListener(fd)
				if err != nil {
					return cli.Exit(fmt.Sprintf("--listen-fd %d: %v", fd, err), 1)
				}
				o.Listener = ln
			}
			ctx, stop := signal.NotifyContext(c.Context, syscall.SIGTERM, os.Interrupt)
			defer stop()
			return egress.Serve(ctx, o)
		},
	}
}
