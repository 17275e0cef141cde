//go:build !linux

package executor

import (
	"os/exec"
	"syscall"
)

// holdThread: without a parent-death signal, no thread needs holding.
func holdThread() (release func()) { return func() {} }

// startDying starts cmd. Without a parent-death signal the helper watches
// its parent itself (mitrity-egressproxy --parent-pid polls it).
func startDying(cmd *exec.Cmd) error { return cmd.Start() }

// groupAttr puts the command of a mode-none run in its own process group,
// so a timeout reaches every process it started.
func groupAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
