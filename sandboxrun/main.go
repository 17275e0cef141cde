// Command mitrity-sandboxrun: per-execution helper that builds the kernel sandbox (bubblewrap, seccomp, namespaces, limits) and runs one judged command in it.
package main

import (
	"os"

	"github.com/mitrity/mitrity/govern/cliapp"
	"github.com/mitrity/mitrity/govern/sandbox"
)

// version is set at link time: go build -ldflags "-X main.version=v1.2.3".
var version = "dev"

func main() {
	// The gateway's per-execution call, on the shortest path there is.
	if len(os.Args) > 1 && os.Args[1] == sandbox.HelperRun {
		os.Exit(sandbox.HelperMain(os.Args[2:], os.Stderr))
	}
	cliapp.Main(newApp(os.Stdout, os.Stderr))
}
