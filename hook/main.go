// Command mitrity-hook: agent-framework hooks (Claude Code, Gemini CLI, OpenCode) that send each shell call to the gateway for admission.
package main

import (
	"fmt"
	"os"
)

// version is set at link time: go build -ldflags "-X main.version=v1.2.3".
var version = "dev"

func main() {
	if err := newApp(os.Stdout, os.Stderr).Run(os.Args); err != nil {
		fmt.Fprintf(os.Stderr, "mitrity-hook: %v\n", err)
		os.Exit(1)
	}
}
