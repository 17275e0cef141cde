package executor

import (
	"runtime"
	"syscall"
)

// holdThread pins the calling goroutine to its OS thread until release is
// called. A child started with a parent-death signal gets it when the
// *thread* that forked it exits, not the process; Go ends a thread when a
// goroutine locked to it returns (govern/sandbox does so on purpose for its
// lookups as the sandbox's user), and an unlocked thread can be taken by
// such a goroutine. A locked one cannot: hold it from the child's start
// until the child is gone.
func holdThread() (release func()) {
	runtime.LockOSThread()
	return runtime.UnlockOSThread
}

// groupAttr puts the command of a mode-none run in its own process group,
// so a timeout reaches every process it started, and dead with the gateway
// (the caller holds its thread).
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
