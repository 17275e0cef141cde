// Command mitrity-egressproxy: per-execution helper: the host:port allowlist proxy that is a sandboxed command's only way out.
package main

import (
	"fmt"
	"os"
)

// version is set at link time: go build -ldflags "-X main.version=v1.2.3".
var version = "dev"

func main() {
	if err := newApp(os.Stdout, os.Stderr).Run(os.Args); err != nil {
		fmt.Fprintf(os.Stderr, "mitrity-egressproxy: %v\n", err)
		os.Exit(1)
	}
}
