// Command mitrity-sidecar: runs next to one MCP server and puts the governed-shell decision pipeline in front of its tools.
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
