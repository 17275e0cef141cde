package main

import (
	"bytes"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// run runs the app in-process. Tests here do not call t.Parallel: urfave/cli
// mutates package-level flags on every Run.
func run(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err = newApp(strings.NewReader(""), &out, &errOut).Run(append([]string{"mitrity-egressproxy"}, args...))
	return out.String(), errOut.String(), err
}

func TestVersion(t *testing.T) {
	stdout, _, err := run(t, "--version")
	assert.NilError(t, err)
	assert.Check(t, is.Contains(stdout, "mitrity-egressproxy version "+version))
}

func TestServeNeedsSocket(t *testing.T) {
	_, _, err := run(t, "serve")
	assert.ErrorContains(t, err, "socket")
}
