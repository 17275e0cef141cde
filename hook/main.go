// Command mitrity-hook: agent-framework hooks (Claude Code, Codex CLI, Gemini CLI, OpenCode) that send each shell call to the gateway for admission, and the relay that runs a routed call's ticket.
package main

import (
	"fmt"
	"os"

	"github.com/mitrity/mitrity/govern/cliapp"
	"github.com/mitrity/mitrity/hook/framework"
)

// version is set at link time: go build -ldflags "-X main.version=v1.2.3".
var version = "dev"

func main() {
	if len(os.Args) > 1 && framework.Name(os.Args[1]).Valid() {
		// A framework reads any exit code but 0 and 2 as "go ahead":
		// whatever fails in a framework hook blocks the call.
		if err := cliapp.Run(newApp(os.Stdout, os.Stderr), os.Args); err != nil {
			if msg := err.Error(); msg != "" {
				fmt.Fprintln(os.Stderr, msg)
			}
			os.Exit(2)
		}
		return
	}
	cliapp.Main(newApp(os.Stdout, os.Stderr))
}
