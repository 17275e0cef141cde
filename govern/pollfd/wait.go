package pollfd

import "os/exec"

// Wait waits for a started cmd as cmd.Wait does, the wait for its exit
// in the poller (AwaitExit) rather than in waitid(2).
func Wait(cmd *exec.Cmd) error {
	AwaitExit(cmd.Process)
	return cmd.Wait()
}
