// Command mitrity-sandboxrun: per-execution helper that builds the kernel sandbox (bubblewrap, seccomp, namespaces, limits) and runs one judged command in it.
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
