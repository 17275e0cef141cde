package main

import (
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

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

// TestNothingElseRunsOnTheMainThread: the main goroutine holds the main
// thread (init), so no other goroutine (a lookup as the sandbox's user,
// which changes its thread's file-system ids) can run there and clear the
// parent-death signal the gateway armed on it. Without the lock, the
// runtime hands the idle main thread to the goroutines started here.
func TestNothingElseRunsOnTheMainThread(t *testing.T) {
	pid := unix.Getpid()
	for range 2000 {
		on := make(chan bool)
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			on <- unix.Gettid() == pid
		}()
		if <-on {
			t.Fatal("a goroutine ran on the main thread")
		}
	}
}
