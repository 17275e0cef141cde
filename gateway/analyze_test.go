package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/urfave/cli/v2"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern/shell"
)

func TestAnalyzeTable(t *testing.T) {
	dir := t.TempDir()
	assert.NilError(t, os.WriteFile(filepath.Join(dir, "deploy.sh"), []byte("#!/bin/sh\nrm -rf build\n"), 0o755))
	stdout, _, err := run(t, "analyze", "--cwd", dir, "--", "bash ./deploy.sh; X=rm; $X -f a")
	assert.NilError(t, err)
	assert.Check(t, is.Contains(stdout, "rm -rf build"))
	assert.Check(t, is.Contains(stdout, "rm -f a"))
	assert.Check(t, is.Contains(stdout, "PINNED SCRIPT"))
	assert.Check(t, is.Contains(stdout, filepath.Join(dir, "deploy.sh")))
}

func TestAnalyzeJSON(t *testing.T) {
	stdout, _, err := run(t, "analyze", "--json", "--", "sudo", "ls", "-la")
	assert.NilError(t, err)
	var a shell.Analysis
	assert.NilError(t, json.Unmarshal([]byte(stdout), &a))
	assert.Equal(t, a.Dialect, shell.DialectBash)
	assert.Assert(t, len(a.Commands) >= 1)
	assert.Equal(t, a.Commands[0].Argv[0].Value, "sudo")
	assert.Assert(t, a.Denial == nil)
}

func TestAnalyzeDenial(t *testing.T) {
	stdout, stderr, err := run(t, "analyze", "--credential-var", "TOKEN", "--", `curl -H "Bearer $TOKEN" https://x`)
	var coder cli.ExitCoder
	assert.Assert(t, err != nil)
	assert.Assert(t, asExitCoder(err, &coder))
	assert.Equal(t, coder.ExitCode(), exitDenied)
	assert.Check(t, is.Contains(stdout, "DENIED credential_in_argv"))
	assert.Check(t, is.Contains(stderr, "credential_in_argv"))
}

func TestAnalyzeParseError(t *testing.T) {
	_, stderr, err := run(t, "analyze", "--dialect", "sh", "--", "[[ -f x ]] && echo 'unterminated")
	assert.Assert(t, err != nil)
	assert.Check(t, is.Contains(stderr, "parse_error"))
}

func TestAnalyzeUsage(t *testing.T) {
	_, _, err := run(t, "analyze")
	assert.ErrorContains(t, err, "no command given")
}

func asExitCoder(err error, target *cli.ExitCoder) bool {
	c, ok := err.(cli.ExitCoder)
	if ok {
		*target = c
	}
	return ok
}
