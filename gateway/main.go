// Command mitrity-gateway: the governed-shell gateway. It judges shell
// commands for AI agents and runs them in a kernel sandbox.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"
)

// version is set at link time: go build -ldflags "-X main.version=v1.2.3".
var version = "dev"

func main() {
	err := newApp(os.Stdout, os.Stderr).Run(os.Args)
	if err == nil {
		return
	}
	code := 1
	var ec cli.ExitCoder
	if errors.As(err, &ec) {
		code = ec.ExitCode()
	}
	if msg := err.Error(); msg != "" {
		fmt.Fprintf(os.Stderr, "mitrity-gateway: %s\n", msg)
	}
	os.Exit(code)
}
