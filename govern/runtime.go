package govern

import (
	"fmt"
	"os"
	"path/filepath"
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
