package main

import (
	"os"
	"testing"

	"github.com/mitrity/mitrity/govern/sandbox"
)

// TestMain lets the test binary stand in for mitrity-sandboxrun when the
// probe runs its helper subcommands, and serve the tests' own helpers.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case sandbox.HelperInit, sandbox.HelperProbeSeccomp:
			if err := newApp(os.Stdout, os.Stderr).Run(os.Args); err != nil {
				os.Exit(1)
			}
			os.Exit(0)
		case denySeccompExec:
			denySeccompThenExec(os.Args[2:])
			os.Exit(127)
		}
	}
	code := m.Run()
	cleanupBuilt()
	os.Exit(code)
}
