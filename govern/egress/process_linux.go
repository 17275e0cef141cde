package egress

import (
	"os/exec"
	"runtime"
	"syscall"
)

// holdThread pins the calling goroutine to its OS thread until release is
// called. A child started with a parent-death signal gets it when the
// *thread* that forked it exits, not the process; Go ends a thread when a
// goroutine locked to it returns, and an unlocked thread can be taken by
// such a goroutine. A locked one cannot: hold it from the child's start
// until the child is gone.
func holdThread() (release func()) {
	runtime.LockOSThread()
	return runtime.UnlockOSThread
}

// startDying starts cmd so that the kernel SIGKILLs it when the gateway
// dies, SIGKILL included: the proxy never outlives the gateway that spawned
// it. The signal is set before exec, so there is no window. The caller
// holds its thread (holdThread) for as long as cmd runs.
func startDying(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	return cmd.Start()
}
