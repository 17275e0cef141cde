package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestBinariesStart runs every command as a subprocess with --version and
// --help: each must exit 0 and name itself on stdout.
func TestBinariesStart(t *testing.T) {
	t.Parallel()
	for _, name := range binaries {
		if name == "mitrity-sandboxinit" {
			continue // the sandbox's first process, not a command: it only speaks the sandbox protocol
		}
		for _, flag := range []string{"--version", "--help"} {
			t.Run(name+"/"+flag, func(t *testing.T) {
				t.Parallel()
				path := binPath(t, name)
				ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
				defer cancel()
				var stdout, stderr bytes.Buffer
				cmd := exec.CommandContext(ctx, path, flag)
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				if err := cmd.Run(); err != nil {
					t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", name, flag, err, &stdout, &stderr)
				}
				if !strings.Contains(stdout.String(), name) {
					t.Errorf("%s %s: stdout does not name the binary:\n%s", name, flag, &stdout)
				}
			})
		}
	}
}
