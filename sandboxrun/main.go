// Command mitrity-sandboxrun: per-execution helper that builds the kernel sandbox (bubblewrap, seccomp, namespaces, limits) and runs one judged command in it.
package main

import (
	"fmt"
	"os"
)

// version is set at link time: go build -ldflags "-X main.version=v1.2.3".
var version = "dev"

func main() {
	if err := newApp(os.Stdout, os.Stderr).Run(os.Args); err != nil {
		fmt.Fprintf(os.Stderr, "mitrity-sandboxrun: %v\n", err)
		os.Exit(1)
	}
}
