package e2e

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// runSpec is how a test runs a binary to its end: as whom, where, with
// what environment and input.
type runSpec struct {
	cred    *syscall.Credential // nil: the test's own user
	dir     string
	env     []string
	stdin   string        // "": /dev/null
	timeout time.Duration // then it is killed (exit code -1); 0: a minute
}

// runAs runs argv as s says and returns its output and exit code. A run
// that could not start fails t, and so does a clean exit whose output a
// child left behind holds open 10 s past it.
func runAs(t testing.TB, s runSpec, argv ...string) result {
	t.Helper()
	timeout := s.timeout
	if timeout == 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return runAsCtx(t, ctx, s, argv...)
}

// runAsCtx is runAs with ctx, not s.timeout, bounding the run (killed when
// ctx is done: exit code -1).
func runAsCtx(t testing.TB, ctx context.Context, s runSpec, argv ...string) result {
	t.Helper()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = s.dir, s.env
	if s.stdin != "" {
		cmd.Stdin = strings.NewReader(s.stdin)
	}
	if s.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	}
	cmd.WaitDelay = 10 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%v: %v\nstdout: %s\nstderr: %s", argv, err, tail(out.String()), tail(errb.String()))
	}
	return result{out.String(), errb.String(), code}
}
