package initproc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// reaperWait bounds how long init waits for bubblewrap's pid 1 to arm its
// parent-death signal.
const reaperWait = 5 * time.Second

// wait4 is the system call bubblewrap's pid 1 sits in once it is armed.
var wait4 = map[string]int{"amd64": 61, "arm64": 260}

// awaitArmedReaper returns once bubblewrap's pid 1, this process's parent
// in the sandbox, is in its wait loop: bubblewrap arms pid 1's
// parent-death signal (--die-with-parent) only after it forked this
// process, just before that loop.
//
// /proc/1/syscall names the call pid 1 is blocked in. Where that cannot
// be told (an architecture without a known number, a /proc that does not
// show it), nothing says pid 1 is armed, and the command is not started.
func awaitArmedReaper() error {
	want, ok := wait4[runtime.GOARCH]
	if !ok {
		return fmt.Errorf("sandbox init: no way to tell that bubblewrap's pid 1 is armed on %s: the command is not started", runtime.GOARCH)
	}
	prefix := []byte(strconv.Itoa(want) + " ")
	deadline := time.Now().Add(reaperWait)
	for delay := 50 * time.Microsecond; ; delay = min(2*delay, 5*time.Millisecond) {
		b, err := os.ReadFile("/proc/1/syscall")
		if err != nil {
			return fmt.Errorf("sandbox init: reading pid 1's state, to tell that bubblewrap armed its parent-death signal: %w: the command is not started", err)
		}
		if bytes.HasPrefix(b, prefix) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("sandbox init: bubblewrap's pid 1 did not reach its wait loop within %v (%q): the sandbox's parent-death signal may not be armed, so the command is not started", reaperWait, bytes.TrimSpace(b))
		}
		time.Sleep(delay)
	}
}

// lifelineHeld reports an error when the lifeline (a pipe read end whose
// only writer is bubblewrap's outer process) has no writer left.
func lifelineHeld(fd int) error {
	if fd <= 0 {
		return errors.New("sandbox init: no lifeline was given: nothing says bubblewrap's outer process is there, so the command is not started")
	}
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("sandbox init: the lifeline: %w", err)
		}
		break
	}
	unix.Close(fd)
	if fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 {
		return errors.New("sandbox init: bubblewrap's outer process is gone (its supervisor was killed during the setup): nothing would stop this sandbox, so the command is not started")
	}
	return nil
}
