// Command mitrity-gateway is the governed-shell gateway: it judges shell commands for AI agents and runs them in a kernel sandbox.
package main

import (
	"os"

	"github.com/mitrity/mitrity/govern/cliapp"
)

// version is set at link time: go build -ldflags "-X main.version=v1.2.3".
var version = "dev"

func main() {
	cliapp.Main(newApp(os.Stdout, os.Stderr))
}
