// Command mitrity-egressproxy: per-execution helper: the host:port allowlist proxy that is a sandboxed command's only way out.
package main

import (
	"os"

	"github.com/mitrity/mitrity/govern/cliapp"
	"github.com/mitrity/mitrity/govern/pollfd"
)

// version is set at link time: go build -ldflags "-X main.version=v1.2.3".
var version = "dev"

func main() {
	// Its stdin (the gateway's pipe, read until it closes) and stdout
	// through the poller: see pollfd.
	cliapp.Main(newApp(pollfd.Stdin(), pollfd.Stdout(), os.Stderr))
}
