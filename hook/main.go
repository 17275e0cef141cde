// Command mitrity-hook: agent-framework hooks (Claude Code, Gemini CLI, OpenCode) that send each shell call to the gateway for admission.
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
