package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/urfave/cli/v2"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/sandbox"
)

func TestProbeCommand(t *testing.T) {
	requireSandbox(t)
	for _, args := range [][]string{{"probe", "--json"}, {"--probe", "--json"}} {
		stdout, _, err := run(t, args...)
		assert.NilError(t, err, "%v", args)
		var r probeReport
		assert.NilError(t, json.Unmarshal([]byte(stdout), &r))
		assert.Check(t, is.Equal(r.Level, levelFull), "%v: %s", args, stdout)
		assert.Check(t, is.Len(r.Checks, 4))
	}
	stdout, _, err := run(t, "probe")
	assert.NilError(t, err)
	assert.Check(t, is.Contains(stdout, "level full: sandbox_mode bubblewrap"))
}

func TestRunCommandFlags(t *testing.T) {
	_, _, err := run(t, "run", "--spec-fd", "0", "--result-fd", "1")
	var ec cli.ExitCoder
	assert.Assert(t, errors.As(err, &ec), "%v", err)
	assert.Check(t, is.Equal(ec.ExitCode(), 2))
	_, stderr, _ := run(t, "run", "--spec-fd", "0", "--result-fd", "1")
	assert.Check(t, is.Contains(stderr, "two different descriptors above 2"))
	_, stderr, err = run(t, "run")
	assert.Check(t, err != nil)
	assert.Check(t, is.Contains(stderr, "spec-fd"))
}

// A spec that is not JSON still gets a result, with the reason.
func TestRunSpecUndecodable(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "spec")
	assert.NilError(t, os.WriteFile(in, []byte("{not json"), 0o600))
	f, err := os.Open(in)
	assert.NilError(t, err)
	r := sandbox.RunSpec(f)
	assert.Check(t, is.Equal(r.Status, govern.StatusFailedToStart))
	assert.Check(t, is.Equal(r.Reason, govern.ReasonSpawnError))
	assert.Check(t, is.Contains(r.Message, "decoding the spec"))
}
