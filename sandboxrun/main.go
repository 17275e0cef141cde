// Command mitrity-sandboxrun: per-execution helper that builds the kernel sandbox (bubblewrap, seccomp, namespaces, limits) and runs one judged command in it.
package main

import (
	"os"
	"runtime"

	"github.com/mitrity/mitrity/govern/cliapp"
	"github.com/mitrity/mitrity/govern/sandbox"
)

func init() {
	// The main goroutine keeps the main thread for the whole run: the
	// parent-death signal the gateway arms (Pdeathsig, then
	// sandbox.DieWithParent) belongs to that thread, and a change of a
	// thread's file-system ids clears it. The sandbox's lookups as its user
	// (setfsuid on a thread of their own) must never land on this one, or
	// a SIGKILLed gateway leaves this helper, and the sandbox, running.
	runtime.LockOSThread()
}

// version is set at link time: go build -ldflags "-X main.version=v1.2.3".
var version = "dev"

func main() {
	// The gateway's per-execution call, on the shortest path there is.
	if len(os.Args) > 1 && os.Args[1] == sandbox.HelperRun {
		os.Exit(sandbox.HelperMain(os.Args[2:], os.Stderr))
	}
	cliapp.Main(newApp(os.Stdout, os.Stderr))
}
