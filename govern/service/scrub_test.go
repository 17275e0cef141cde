package service

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"gotest.tools/v3/assert"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/config"
)

// What the gateway says to an agent names its own files by what they are,
// never by their host path; the audit keeps the path for the operator.
func TestAgentNeverSeesOwnPaths(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	assert.NilError(t, os.Mkdir(ws, 0o755))
	pol := filepath.Join(dir, "policy.yaml")
	assert.NilError(t, os.WriteFile(pol, []byte("default_agent:\n  profile: dev\nprofiles:\n  dev:\n    sandbox_required: false\n    rules: []\n"), 0o644))
	runAs := ""
	if os.Geteuid() == 0 {
		runAs = "  run_as: nobody\n"
	}
	audit := filepath.Join(dir, "state", "audit.jsonl")
	yaml := "exec:\n  enabled: true\n  shell: /bin/bash\n  default_cwd: " + ws + "\n" + runAs + "  sandbox:\n    backend: none\n" +
		"policy: policy.yaml\naudit:\n  path: " + audit + "\n"
	cfgPath := filepath.Join(dir, "mitrity-gateway.yaml")
	assert.NilError(t, os.WriteFile(cfgPath, []byte(yaml), 0o644))
	cfg, err := config.Loader{}.Load(cfgPath)
	assert.NilError(t, err)
	svc, err := Open(cfg, zerolog.Nop())
	assert.NilError(t, err)
	defer svc.Close()
	for _, tc := range []struct{ cwd, must string }{
		{pol, "<the policy that judges every command>"},
		{cfgPath, "<the gateway's configuration>"},
		{filepath.Dir(audit), "<the audit log's directory>"},
	} {
		res := svc.Call(context.Background(), govern.Call{Agent: "a", Surface: "cli", Command: "true", Cwd: tc.cwd})
		assert.Assert(t, res.IsError, res.Text)
		assert.Assert(t, !strings.Contains(res.Text, tc.cwd), "the agent was shown %s: %s", tc.cwd, res.Text)
		assert.Assert(t, strings.Contains(res.Text, tc.must), res.Text)
	}
	b, err := os.ReadFile(audit)
	assert.NilError(t, err)
	assert.Assert(t, strings.Contains(string(b), pol), "the audit keeps the path for the operator")
}
