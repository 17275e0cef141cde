package sandbox

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// DieWithParent makes the calling process receive SIGKILL when its parent
// dies, so that a SIGKILLed gateway leaves no sandboxrun (and so no
// sandbox) behind. It fails if the parent is already gone.
func DieWithParent() error {
	ppid := os.Getppid()
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(unix.SIGKILL), 0, 0, 0); err != nil {
		return err
	}
	if os.Getppid() != ppid {
		return errors.New("the parent process is already gone")
	}
	return nil
}
