package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// helperRunSpec is the test binary's mode that runs one spec, given as its
// argument, with its own stdout and stderr, and writes the result on fd 3:
// how a test runs the sandbox as another user.
const helperRunSpec = "run-spec"

func runSpecChild() {
	var s Spec
	if len(os.Args) < 3 || json.Unmarshal([]byte(os.Args[2]), &s) != nil {
		fmt.Fprintln(os.Stderr, "run-spec SPEC-JSON")
		os.Exit(2)
	}
	self, _ := os.Executable()
	r := Run(context.Background(), &s, Stdio{Stdout: os.Stdout, Stderr: os.Stderr}, WithHelper(self))
	json.NewEncoder(os.NewFile(3, "result")).Encode(r)
	os.Exit(0)
}

// testUser is the unprivileged user the identity tests run the sandbox as,
// created when missing (root only).
const testUser = "mitritytest"

var testUsers struct {
	once     sync.Once
	uid, gid int
	bin      string // a copy of the test binary the user can run
	err      error
}

// cleanupIdentities removes the copy of the test binary.
func cleanupIdentities() {
	if testUsers.bin != "" {
		os.RemoveAll(filepath.Dir(testUsers.bin))
	}
}
