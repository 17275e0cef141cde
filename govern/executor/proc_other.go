//go:build !linux

package executor

import "syscall"

// holdThread: without a parent-death signal, no thread needs holding.
func holdThread() (release func()) { return func() {} }

// groupAttr puts the command of a mode-none run in its own process group,
// so a timeout reaches every process it started.
func groupAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
