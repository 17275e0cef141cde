package main

import (
	"bytes"
	"testing"

	"github.com/rs/zerolog"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// The tests do not call t.Parallel: urfave/cli/v2 mutates its package-level
// HelpFlag and VersionFlag on every Run, which the race detector reports.

func run(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	app := newApp(&out, &errOut)
	err = app.Run(append([]string{"mitrity-gateway"}, args...))
	return out.String(), errOut.String(), err
}

func TestVersion(t *testing.T) {
	stdout, _, err := run(t, "--version")
	assert.NilError(t, err)
	assert.Check(t, is.Contains(stdout, "mitrity-gateway version "+version))
}

func TestHelp(t *testing.T) {
	stdout, _, err := run(t, "--help")
	assert.NilError(t, err)
	assert.Check(t, is.Contains(stdout, "mitrity-gateway"))
	assert.Check(t, is.Contains(stdout, "--log-level"))
}

func TestLogLevel(t *testing.T) {
	var out, errOut bytes.Buffer
	app := newApp(&out, &errOut)
	assert.NilError(t, app.Run([]string{"mitrity-gateway", "--log-level", "debug"}))
	logger, ok := app.Metadata[metadataLogger].(zerolog.Logger)
	assert.Assert(t, ok, "Before stored no zerolog.Logger in app.Metadata")
	assert.Equal(t, logger.GetLevel(), zerolog.DebugLevel)

	logger.Debug().Msg("hello")
	assert.Check(t, is.Contains(errOut.String(), "hello"))
}

func TestBadLogLevel(t *testing.T) {
	_, _, err := run(t, "--log-level", "loud")
	assert.ErrorContains(t, err, "invalid --log-level \"loud\"")
}
