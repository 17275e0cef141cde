package cliapp

import (
	"bytes"
	"testing"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// The tests do not call t.Parallel: urfave/cli/v2 mutates its package-level
// HelpFlag and VersionFlag on every Run, which the race detector reports.

func newTestApp(out, errOut *bytes.Buffer, cmds ...*cli.Command) *cli.App {
	return New(Spec{Name: "mitrity-test", Usage: "a test binary", Version: "v9", Commands: cmds}, out, errOut)
}

func TestVersionAndHelp(t *testing.T) {
	var out, errOut bytes.Buffer
	assert.NilError(t, newTestApp(&out, &errOut).Run([]string{"mitrity-test", "--version"}))
	assert.Check(t, is.Contains(out.String(), "mitrity-test version v9"))
	out.Reset()
	assert.NilError(t, newTestApp(&out, &errOut).Run([]string{"mitrity-test", "--help"}))
	assert.Check(t, is.Contains(out.String(), "a test binary"))
	assert.Check(t, is.Contains(out.String(), "--log-level"))
}

func TestLoggerReachesCommands(t *testing.T) {
	var out, errOut bytes.Buffer
	var got zerolog.Level
	cmd := &cli.Command{Name: "x", Action: func(c *cli.Context) error {
		l := Logger(c)
		got = l.GetLevel()
		l.Debug().Msg("hello")
		return nil
	}}
	assert.NilError(t, newTestApp(&out, &errOut, cmd).Run([]string{"mitrity-test", "--log-level", "debug", "x"}))
	assert.Equal(t, got, zerolog.DebugLevel)
	assert.Check(t, is.Contains(errOut.String(), "hello"))
}

func TestBadLogLevel(t *testing.T) {
	var out, errOut bytes.Buffer
	err := newTestApp(&out, &errOut).Run([]string{"mitrity-test", "--log-level", "loud"})
	assert.ErrorContains(t, err, `invalid --log-level "loud"`)
	_, err = NewLogger(&out, "")
	assert.ErrorContains(t, err, "invalid --log-level")
}

func TestNewLoggerLevel(t *testing.T) {
	var buf bytes.Buffer
	l, err := NewLogger(&buf, "warn")
	assert.NilError(t, err)
	l.Info().Msg("hidden")
	l.Warn().Msg("shown")
	assert.Check(t, !bytes.Contains(buf.Bytes(), []byte("hidden")))
	assert.Check(t, is.Contains(buf.String(), "shown"))
}
