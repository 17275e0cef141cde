//go:build !linux

package egress

import "os/exec"

// holdThread: without a parent-death signal, no thread needs holding.
func holdThread() (release func()) { return func() {} }

// startDying starts cmd. Without a parent-death signal the proxy watches
// its parent itself (mitrity-egressproxy --parent-pid polls it).
func startDying(cmd *exec.Cmd) error { return cmd.Start() }
