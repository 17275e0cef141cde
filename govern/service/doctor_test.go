package service

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/mitrity/mitrity/govern/config"
)

func TestDoctor(t *testing.T) {
	ws := t.TempDir()
	dir := t.TempDir()
	yaml := "exec:\n  enabled: true\n  shell: /bin/bash\n  default_cwd: " + ws + "\n  run_as: nobody\n  sandbox:\n    backend: none\n" +
		"credentials:\n  present:\n    env: DOCTOR_TEST_PRESENT\n  absent:\n    env: DOCTOR_TEST_ABSENT\n" +
		"audit:\n  path: " + filepath.Join(dir, "audit.jsonl") + "\n"
	cfg, err := config.Loader{}.Parse("d.yaml", []byte(yaml))
	assert.NilError(t, err)
	t.Setenv("DOCTOR_TEST_PRESENT", "a-value-long-enough")
	checks, ok := Doctor(context.Background(), cfg)
	assert.Assert(t, !ok, "a missing credential fails the doctor")
	var report strings.Builder
	for _, c := range checks {
		report.WriteString(c.Name + " " + c.Detail + "\n")
		switch c.Name {
		case "credential present", "shell", "default_cwd", "audit", "sandbox_backend":
			assert.Assert(t, c.OK, c.Name+": "+c.Detail)
		case "credential absent":
			assert.Assert(t, !c.OK)
		}
	}
	// Never a value.
	assert.Assert(t, !strings.Contains(report.String(), "a-value-long-enough"))
	os.Unsetenv("DOCTOR_TEST_ABSENT")
}
