package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGatewayHomeMasked: the gateway's own HOME is in the deny-read set
// wherever it points, not only when /etc/passwd or /home has it (before:
// a gateway whose HOME was a state directory elsewhere left its ~/.ssh
// readable to every command). Checked from inside the sandbox: the key's
// bytes do not come back.
func TestGatewayHomeMasked(t *testing.T) { forGatewayIdentities(t, testGatewayHomeMasked) }

func testGatewayHomeMasked(t *testing.T, asUser bool) {
	w := newWorldBackend(t, asUser, sandboxedPolicy, "auto")
	home, err := os.MkdirTemp("/var/tmp", "mitrity-e2e-home-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(home) })
	must(t, os.Chmod(home, 0o755))
	must(t, os.Mkdir(filepath.Join(home, ".ssh"), 0o755))
	const secret = "GATEWAY-HOME-SSH-KEY-7f3a"
	key := filepath.Join(home, ".ssh", "id_ed25519")
	must(t, os.WriteFile(key, []byte(secret+"\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(home, "visible"), []byte("visible\n"), 0o644))
	r := w.execWithHostEnv(t, []string{"HOME=" + home}, "--", "cat "+key+"; cat "+filepath.Join(home, "visible"))
	if strings.Contains(r.stdout+r.stderr, secret) {
		t.Fatalf("the gateway's ~/.ssh was readable in the sandbox: %+v", r)
	}
	if !strings.Contains(r.stdout, "visible") {
		t.Errorf("control: the home's other files should stay visible: %+v", r)
	}
}
