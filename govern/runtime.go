package govern

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// AdmissionSocketVar overrides the admission socket's default path, for the
// gateway and the hook alike.
const AdmissionSocketVar = "MITRITY_ADMISSION_SOCKET"

// RuntimeDir is the directory of the gateway's sockets for the user with
// euid: /run/mitrity for root; $XDG_RUNTIME_DIR/mitrity for a user, else a
// per-uid directory under the temporary directory. getenv is os.Getenv in
// production.
func RuntimeDir(euid int, getenv func(string) string) string {
	if euid == 0 {
		return "/run/mitrity"
	}
	if d := getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		return filepath.Join(d, "mitrity")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("mitrity-%d", euid))
}

// AdmissionSocket is where the gateway serves admission and the hook looks
// for it: $MITRITY_ADMISSION_SOCKET when set, else admission.sock in
// RuntimeDir. Both sides call this, so they agree without configuration.
func AdmissionSocket(euid int, getenv func(string) string) string {
	if p := getenv(AdmissionSocketVar); p != "" {
		return p
	}
	return filepath.Join(RuntimeDir(euid, getenv), "admission.sock")
}

// MakeRuntimeDir creates RuntimeDir when it is missing and checks that it
// is the gateway's own: a directory owned by euid that nobody else can
// write (root's is 0711, so that the run_as user can reach the per-run
// directories a root gateway hands it; a user's is 0700). One that
// someone else made first (under a shared /tmp) is refused, never used.
func MakeRuntimeDir(euid int, getenv func(string) string) (string, error) {
	dir := RuntimeDir(euid, getenv)
	return dir, makeRuntimeDir(dir, euid)
}

// makeRuntimeDir is MakeRuntimeDir's work on dir. Root's directory may
// have been made 0700 by a part that only needs it for itself (the live
// register, the probe cache, an admin socket's parent, created with
// MkdirAll before anything that hands directories to run_as ran); it
// then gets its search bits back, so that which part of the gateway ran
// first on a fresh host does not decide whether run_as can reach its
// credential and session directories. Search without read lists nothing.
func makeRuntimeDir(dir string, euid int) error {
	perm := os.FileMode(0o700)
	if euid == 0 {
		perm = 0o711
	}
	if err := os.Mkdir(dir, perm); err != nil && !os.IsExist(err) {
		return fmt.Errorf("runtime directory %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("runtime directory %s: %w", dir, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("runtime directory %s is not a directory", dir)
	case ok && int(st.Uid) != euid:
		return fmt.Errorf("runtime directory %s belongs to uid %d, not to the gateway's user (uid %d)", dir, st.Uid, euid)
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("runtime directory %s is writable by others (mode %04o)", dir, fi.Mode().Perm())
	case euid == 0 && fi.Mode().Perm()&0o011 != 0o011:
		if err := os.Chmod(dir, fi.Mode().Perm()|0o011); err != nil {
			return fmt.Errorf("runtime directory %s: making it traversable for exec.run_as: %w", dir, err)
		}
	}
	return nil
}
