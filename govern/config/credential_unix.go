//go:build unix

package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// checkOwner refuses a credential file another user owns: that user could
// replace the value the gateway injects.
func checkOwner(fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return errors.New("cannot read the file's owner")
	}
	if euid := os.Geteuid(); int(st.Uid) != euid {
		return fmt.Errorf("owned by uid %d, not the gateway's uid %d", st.Uid, euid)
	}
	return nil
}
