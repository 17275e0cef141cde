package cliapp

import (
	"bytes"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
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

// TestRunFlagsAfterArguments: a command's flags work after its arguments,
// as people type them; a command line after `--` or after the first
// argument of a command that takes one is left alone.
func TestRunFlagsAfterArguments(t *testing.T) {
	type got struct {
		config string
		json   bool
		args   []string
	}
	var g got
	action := func(c *cli.Context) error {
		g = got{c.String("config"), c.Bool("json"), c.Args().Slice()}
		return nil
	}
	flags := func() []cli.Flag {
		return []cli.Flag{&cli.StringFlag{Name: "config", Aliases: []string{"c"}}, &cli.BoolFlag{Name: "json"}}
	}
	cmds := func() []*cli.Command {
		return []*cli.Command{
			{Name: "audit", Subcommands: []*cli.Command{{Name: "show", ArgsUsage: "EVENT_ID", Flags: flags(), Action: action}}},
			{Name: "exec", ArgsUsage: "-- COMMAND", Flags: flags(), Action: action},
		}
	}
	tests := []struct {
		args []string
		want got
	}{
		{[]string{"audit", "show", "ID", "--config", "f.yaml"}, got{"f.yaml", false, []string{"ID"}}},
		{[]string{"audit", "show", "ID", "--config=f.yaml", "--json"}, got{"f.yaml", true, []string{"ID"}}},
		{[]string{"audit", "show", "-c", "f.yaml", "ID"}, got{"f.yaml", false, []string{"ID"}}},
		{[]string{"audit", "show", "ID", "--", "--config"}, got{"", false, []string{"ID", "--config"}}},
		{[]string{"audit", "show", "ID", "-x"}, got{"", false, []string{"ID", "-x"}}},
		{[]string{"exec", "--json", "--", "echo", "--config", "x"}, got{"", true, []string{"echo", "--config", "x"}}},
		{[]string{"exec", "--config", "f", "ls", "-la", "--json"}, got{"f", false, []string{"ls", "-la", "--json"}}},
	}
	for _, tt := range tests {
		var out, errOut bytes.Buffer
		g = got{}
		assert.NilError(t, Run(newTestApp(&out, &errOut, cmds()...), append([]string{"mitrity-test"}, tt.args...)), "%v", tt.args)
		assert.Check(t, is.DeepEqual(g, tt.want, gocmp.AllowUnexported(got{})), "%v", tt.args)
	}
}
