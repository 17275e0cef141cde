package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"gotest.tools/v3/assert"

	"github.com/mitrity/mitrity/govern/sandbox"
)

// testUser is the unprivileged user the suite runs sandboxrun as, created
// when missing (root only).
const testUser = "mitritytest"

// requireSandbox skips without bubblewrap, unless GOVERN_REQUIRE_SANDBOX=1
// (make test, CI), where a missing tool fails.
func requireSandbox(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		if _, err2 := os.Stat("/usr/bin/bwrap"); err2 != nil {
			if os.Getenv("GOVERN_REQUIRE_SANDBOX") == "1" {
				t.Fatalf("GOVERN_REQUIRE_SANDBOX=1 and bubblewrap is missing: %v", err)
			}
			t.Skip("bubblewrap is not installed")
		}
	}
}

var built struct {
	once sync.Once
	dir  string // 0755, so the unprivileged user reaches what is in it
	bin  string
	err  error
}

// sandboxrunBin builds mitrity-sandboxrun, with mitrity-sandboxinit beside
// it as make build installs them, once for the whole run, into a directory
// every test identity can reach.
func sandboxrunBin(t testing.TB) string {
	t.Helper()
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "mitrity-sandboxrun-test-")
		if err != nil {
			built.err = err
			return
		}
		built.dir = dir
		if built.err = os.Chmod(dir, 0o755); built.err != nil {
			return
		}
		built.bin = filepath.Join(dir, "mitrity-sandboxrun")
		// Built as make build builds them (see the Makefile: static, and
		// without urfave/cli's documentation generator).
		for _, b := range [][]string{
			{"-tags", "urfave_cli_no_docs", "-o", built.bin, "github.com/mitrity/mitrity/sandboxrun"},
			{"-o", filepath.Join(dir, sandbox.InitName), "github.com/mitrity/mitrity/sandboxrun/sandboxinit"},
		} {
			cmd := exec.Command("go", append([]string{"build"}, b...)...)
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				built.err = fmt.Errorf("go build %v: %v\n%s", b, err, out)
				return
			}
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bin
}

func cleanupBuilt() {
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
}

// scratch returns a fresh 0755 directory under the build directory.
func scratch(t testing.TB) string {
	t.Helper()
	sandboxrunBin(t)
	d, err := os.MkdirTemp(built.dir, "t-")
	assert.NilError(t, err)
	assert.NilError(t, os.Chmod(d, 0o755))
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func randHex(t testing.TB) string {
	var b [6]byte
	_, err := rand.Read(b[:])
	assert.NilError(t, err)
	return hex.EncodeToString(b[:])
}

// identity is who runs sandboxrun, and so whom the sandbox runs as.
type identity struct {
	name  string
	wrap  []string // argv prefix that drops to the user
	uid   int      // the sandbox's uid on the host
	gid   int
	home  string
	runAs *sandbox.Identity
}

var users struct {
	once sync.Once
	u    *user.User
	err  error
}

// unprivileged returns the test user, created with useradd when missing.
func unprivileged(t *testing.T) (uid, gid int, home string) {
	t.Helper()
	users.once.Do(func() {
		if _, err := user.Lookup(testUser); err != nil {
			if out, err := exec.Command("useradd", "-m", "-s", "/bin/bash", testUser).CombinedOutput(); err != nil {
				users.err = fmt.Errorf("useradd %s: %v: %s", testUser, err, out)
				return
			}
		}
		users.u, users.err = user.Lookup(testUser)
	})
	if users.err != nil {
		t.Fatal(users.err)
	}
	uid, _ = strconv.Atoi(users.u.Uid)
	gid, _ = strconv.Atoi(users.u.Gid)
	return uid, gid, users.u.HomeDir
}

// identities are every way the suite runs sandboxrun: as root (limits by
// cgroup v1 here), as the unprivileged user through setpriv (rlimits), and
// as root dropping to that user with run_as (cgroup, then the user). A
// non-root developer gets only "self".
func identities(t *testing.T) []identity {
	t.Helper()
	if os.Geteuid() != 0 {
		u, _ := user.Current()
		return []identity{{name: "self", uid: os.Geteuid(), gid: os.Getegid(), home: u.HomeDir}}
	}
	uid, gid, home := unprivileged(t)
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Fatalf("setpriv (util-linux) is needed to run as %s: %v", testUser, err)
	}
	return []identity{
		{name: "root", uid: 0, gid: 0, home: "/root"},
		{name: "user", wrap: []string{setpriv, "--reuid=" + strconv.Itoa(uid), "--regid=" + strconv.Itoa(gid), "--init-groups", "--"}, uid: uid, gid: gid, home: home},
		{name: "runas", uid: uid, gid: gid, home: home, runAs: &sandbox.Identity{UID: uint32(uid), GID: uint32(gid)}},
	}
}

// workspace returns a workspace root owned by the identity.
func (id identity) workspace(t *testing.T) string {
	t.Helper()
	ws := filepath.Join(scratch(t), "ws")
	assert.NilError(t, os.Mkdir(ws, 0o755))
	id.own(t, ws)
	return ws
}

// own gives p (recursively) to the identity's user.
func (id identity) own(t *testing.T, p string) {
	t.Helper()
	if os.Geteuid() != 0 || id.uid == 0 {
		return
	}
	assert.NilError(t, filepath.Walk(p, func(q string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(q, id.uid, id.gid)
	}))
}

// spec is a bash invocation of script in ws, with generous bounds.
func (id identity) spec(ws, script string) *sandbox.Spec {
	return &sandbox.Spec{
		Argv:           []string{"/bin/bash", "--noprofile", "--norc", "-c", script},
		Env:            []string{"PATH=/usr/bin:/bin", "HOME=" + ws, "LC_ALL=C"},
		Cwd:            ws,
		WorkspaceRoots: []string{ws},
		Seccomp:        sandbox.SeccompRequired,
		TimeoutMS:      20000,
		KillGraceMS:    500,
		RunAs:          id.runAs,
	}
}

// outcome is one sandboxrun run seen from outside.
type outcome struct {
	sandbox.Result
	stdout, stderr string
	wall           time.Duration
	exitErr        error
}

// run starts sandboxrun run as the identity with spec on a pipe and
// returns the result it wrote on the other.
func (id identity) run(t *testing.T, spec *sandbox.Spec) outcome {
	t.Helper()
	return id.runWith(t, spec, nil, nil)
}

// runWith also lets the caller prefix the command (a wrapper) and watch
// the started process.
func (id identity) runWith(t *testing.T, spec *sandbox.Spec, prefix []string, started func(*exec.Cmd)) outcome {
	t.Helper()
	bin := sandboxrunBin(t)
	specR, specW, err := os.Pipe()
	assert.NilError(t, err)
	resR, resW, err := os.Pipe()
	assert.NilError(t, err)
	argv := append(append(append([]string{}, id.wrap...), prefix...), bin, "run", "--spec-fd", "3", "--result-fd", "4")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.ExtraFiles = []*os.File{specR, resW}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	assert.NilError(t, cmd.Start())
	specR.Close()
	resW.Close()
	go func() {
		json.NewEncoder(specW).Encode(spec)
		specW.Close()
	}()
	resCh := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(resR)
		resR.Close()
		resCh <- b
	}()
	if started != nil {
		started(cmd)
	}
	waitErr := cmd.Wait()
	o := outcome{stdout: stdout.String(), stderr: stderr.String(), wall: time.Since(start), exitErr: waitErr}
	b := <-resCh
	if len(b) > 0 {
		assert.NilError(t, json.Unmarshal(b, &o.Result), "result: %s", b)
	} else if started == nil {
		t.Fatalf("no result (sandboxrun: %v)\nstderr: %s", waitErr, stderr.String())
	}
	return o
}

// hostProcsWith lists host processes whose command line holds marker.
func hostProcsWith(marker string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && bytes.Contains(b, []byte(marker)) {
			out = append(out, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}

// waitNoProcsWith polls until no host process holds marker, up to d.
func waitNoProcsWith(marker string, d time.Duration) []string {
	deadline := time.Now().Add(d)
	for {
		left := hostProcsWith(marker)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// denySeccompExec names the test binary's helper that runs a program
// under a filter denying seccomp(2): the host of a container runtime whose
// profile forbids nested filters.
const denySeccompExec = "deny-seccomp-exec"

func denySeccompThenExec(argv []string) {
	if len(argv) == 0 {
		return
	}
	err := seccomp.LoadFilter(seccomp.Filter{
		NoNewPrivs: true,
		Flag:       seccomp.FilterFlagTSync,
		Policy: seccomp.Policy{
			DefaultAction: seccomp.ActionAllow,
			Syscalls: []seccomp.SyscallGroup{{
				Action: seccomp.ActionErrno,
				Names:  []string{"seccomp"},
				// prctl(PR_SET_SECCOMP), bubblewrap's way in.
				NamesWithCondtions: []seccomp.NameWithConditions{{Name: "prctl", Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.Equal, Value: 22}}}},
			}},
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	syscall.Exec(argv[0], argv, os.Environ())
}
