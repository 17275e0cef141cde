// Command mitrity-gateway: the governed-shell gateway: judges shell commands for AI agents and runs them in a kernel sandbox.
package main

import (
	"fmt"
	"os"
)

// version is set at link time: go build -ldflags "-X main.version=v1.2.3".
var version = "dev"

func main() {
	if err := newApp(os.Stdout, os.Stderr).Run(os.Args); err != nil {
		fmt.Fprintf(os.Stderr, "mitrity-gateway: %v\n", err)
		os.Exit(1)
	}
}
