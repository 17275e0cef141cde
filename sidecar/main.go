// Command mitrity-sidecar: runs next to one MCP server and puts the governed-shell decision pipeline in front of its tools.
package main

import (
	"fmt"
	"os"
)

// version is set at link time: go build -ldflags "-X main.version=v1.2.3".
var version = "dev"

func main() {
	if err := newApp(os.Stdout, os.Stderr).Run(os.Args); err != nil {
		fmt.Fprintf(os.Stderr, "mitrity-sidecar: %v\n", err)
		os.Exit(1)
	}
}
