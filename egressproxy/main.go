// Command mitrity-egressproxy: per-execution helper: the host:port allowlist proxy that is a sandboxed command's only way out.
package main

import (
	"os"

	"github.com/mitrity/mitrity/govern/cliapp"
)

// version is set at link time: go build -ldflags "-X main.version=v1.2.3".
var version = "dev"

func main() {
	cliapp.Main(newApp(os.Stdin, os.Stdout, os.Stderr))
}
