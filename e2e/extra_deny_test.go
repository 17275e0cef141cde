package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExtraDenyPaths: a profile's extra_deny_paths are unreadable inside
// the sandbox on top of the mandatory deny set (they were parsed and then
// ignored before), for both identities; the file is there on the host, and
// readable by the user the command runs as.
func TestExtraDenyPaths(t *testing.T) {
	for _, asUser := range []bool{false, true} {
		name := "as-root-with-run_as"
		if asUser {
			name = "unprivileged"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dir, err := os.MkdirTemp("/var/tmp", "mitrity-e2e-deny-")
			must(t, err)
			t.Cleanup(func() { os.RemoveAll(dir) })
			must(t, os.Chmod(dir, 0o755))
			secret := filepath.Join(dir, "vault", "token.txt")
			must(t, os.MkdirAll(filepath.Dir(secret), 0o755))
			must(t, os.WriteFile(secret, []byte("extra-deny-secret-material\n"), 0o644))
			open := filepath.Join(dir, "open.txt")
			must(t, os.WriteFile(open, []byte("readable-material\n"), 0o644))
			pol := sandboxPolicy + "    extra_deny_paths: [" + filepath.Dir(secret) + "]\n"
			w := newWorldBackend(t, asUser, pol, "auto")
			r := w.exec(t, "--json", "--", "cat "+secret+" 2>&1; cat "+open)
			if strings.Contains(r.stdout, "extra-deny-secret-material") {
				t.Fatalf("a path in extra_deny_paths was read inside the sandbox: %s", r.stdout)
			}
			if !strings.Contains(r.stdout, "readable-material") || !strings.Contains(r.stdout, `"sandbox_mode": "bubblewrap"`) {
				t.Fatalf("the control file was not read, or not sandboxed: %s %s", r.stdout, r.stderr)
			}
			if b, err := os.ReadFile(secret); err != nil || !strings.Contains(string(b), "extra-deny") {
				t.Fatalf("the file on the host: %q %v", b, err)
			}
		})
	}
}
