// Command mitrity-sandboxinit is the first process of every sandbox that
// mitrity-sandboxrun builds: it sets up what bubblewrap cannot and becomes
// the command. It is a binary of its own, without the command-line
// framework the other binaries share, because its start-up is paid on
// every run: the full mitrity-sandboxrun takes milliseconds longer.
package main

import (
	"os"

	"github.com/mitrity/mitrity/govern/sandbox/initproc"
)

func main() {
	initproc.Main()
	os.Exit(127) // Main returns only when the command could not be started
}
