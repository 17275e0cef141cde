package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"gotest.tools/v3/assert"
)

// identity is who runs the sandbox, and so whom it runs as: root; root
// dropping to the test user with run_as; the test user itself, in a child
// process; a non-root developer only as themselves.
type identity struct {
	name     string
	uid, gid int
	runAs    *Identity
	child    bool
}

func identities(t *testing.T) []identity {
	t.Helper()
	if os.Geteuid() != 0 {
		return []identity{{name: "self", uid: os.Geteuid(), gid: os.Getegid()}}
	}
	testUsers.once.Do(func() {
		if _, err := user.Lookup(testUser); err != nil {
			if out, err := exec.Command("useradd", "-m", "-s", "/bin/bash", testUser).CombinedOutput(); err != nil {
				testUsers.err = fmt.Errorf("useradd %s: %v: %s", testUser, err, out)
				return
			}
		}
		u, err := user.Lookup(testUser)
		if err != nil {
			testUsers.err = err
			return
		}
		testUsers.uid, _ = strconv.Atoi(u.Uid)
		testUsers.gid, _ = strconv.Atoi(u.Gid)
		dir, err := os.MkdirTemp("/var/tmp", "mitrity-sandbox-test-")
		if err == nil {
			err = os.Chmod(dir, 0o755)
		}
		if err != nil {
			testUsers.err = err
			return
		}
		testUsers.bin = filepath.Join(dir, "sandbox.test")
		// cp writes the copy, never this process: a descriptor open for
		// writing here would be inherited by a child forked meanwhile, and
		// an exec of the copy then fails with ETXTBSY.
		self, _ := os.Executable()
		if out, err := exec.Command("cp", self, testUsers.bin).CombinedOutput(); err != nil {
			testUsers.err = fmt.Errorf("cp: %v: %s", err, out)
		} else {
			testUsers.err = os.Chmod(testUsers.bin, 0o755)
		}
	})
	if testUsers.err != nil {
		t.Fatal(testUsers.err)
	}
	ra := &Identity{UID: uint32(testUsers.uid), GID: uint32(testUsers.gid)}
	return []identity{
		{name: "root"},
		{name: "runas", uid: testUsers.uid, gid: testUsers.gid, runAs: ra},
		{name: "user", uid: testUsers.uid, gid: testUsers.gid, child: true},
	}
}

// eachIdentity runs f once per identity, in parallel subtests.
func eachIdentity(t *testing.T, f func(t *testing.T, id identity)) {
	for _, id := range identities(t) {
		t.Run(id.name, func(t *testing.T) {
			t.Parallel()
			f(t, id)
		})
	}
}

// run runs s as the identity.
func (id identity) run(t *testing.T, s *Spec) runOut {
	t.Helper()
	s.RunAs = id.runAs
	switch {
	case id.runAs != nil: // the helper where the user reaches it
		return runWith(t, context.Background(), s, testUsers.bin)
	case !id.child:
		return runIn(t, context.Background(), s)
	}
	setpriv, err := exec.LookPath("setpriv")
	assert.NilError(t, err, "setpriv (util-linux) runs the test as %s", testUser)
	spec, err := json.Marshal(s) // (no credential in these specs: a command line is fine)
	assert.NilError(t, err)
	resR, resW, err := os.Pipe()
	assert.NilError(t, err)
	defer resR.Close()
	cmd := exec.Command(setpriv, "--reuid="+strconv.Itoa(id.uid), "--regid="+strconv.Itoa(id.gid), "--init-groups", "--", testUsers.bin, helperRunSpec, string(spec))
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.ExtraFiles = []*os.File{resW}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 10 * time.Second
	assert.NilError(t, cmd.Start())
	resW.Close()
	b, _ := io.ReadAll(resR)
	waitErr := cmd.Wait()
	var r Result
	assert.NilError(t, json.Unmarshal(b, &r), "no result (%v): %s", waitErr, stderr.String())
	return runOut{Result: r, stdout: stdout.String(), stderr: stderr.String()}
}
