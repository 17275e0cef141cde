package main

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// dieWithParent asks the kernel to SIGKILL this process when its parent
// dies, so a proxy never outlives the gateway that spawned it, even when the
// gateway is SIGKILLed. SIGKILL, not SIGTERM: nobody is left to read a
// report. If the parent died before the signal was set, parentPID (when
// given) catches it. The gateway should also set SysProcAttr.Pdeathsig,
// which the kernel applies before exec and so has no such window.
func dieWithParent(parentPID int) error {
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		return err
	}
	if parentPID > 0 && os.Getppid() != parentPID {
		return errors.New("parent already gone")
	}
	return nil
}
