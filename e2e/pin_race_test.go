package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPinRace: two calls at once through two gateways, as the finding had
// it. Call B is judged on x.sh, which is benign, and pinned; call A renames
// a new x.sh over it while B waits to run it, and a rule denies what the
// new one does. B runs the judged bytes, A's rename is refused while B
// runs, and the host file is unchanged.
func TestPinRace(t *testing.T) { forGatewayIdentities(t, testPinRace) }

func testPinRace(t *testing.T, asUser bool) {
	policy := `default_agent:
  profile: dev
profiles:
  dev:
    sandbox_required: true
    exec_timeout_seconds: 30
    script_inspection_roots: ["${workspace}"]
    rules:
      - name: no-evil
        when: 'commands.exists(c, c.name == "evilcmd")'
        action: deny
        message: evilcmd is not allowed
`
	w := newWorldBackend(t, asUser, policy, "auto")
	uid, gid := ensureUser(t)
	marks := filepath.Join(w.dir, "marks")
	must(t, os.Mkdir(marks, 0o755))
	must(t, os.Chown(marks, int(uid), int(gid)))
	marker := filepath.Join(marks, "PWNED")
	x := filepath.Join(w.ws, "x.sh")
	must(t, os.WriteFile(x, []byte("echo JUDGED\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(w.ws, "evil"), []byte("evilcmd 2>/dev/null; echo EVIL; touch "+marker+"\n"), 0o644))
	for _, p := range []string{x, filepath.Join(w.ws, "evil")} {
		must(t, os.Chown(p, int(uid), int(gid)))
	}
	// The control: the rule refuses the new bytes when they are judged.
	if r := w.exec(t, "--", "evilcmd"); r.code == 0 {
		t.Fatalf("control: the rule did not refuse evilcmd: %+v", r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := make(chan result, 1)
	// A renames once B runs (B's marker), not after a fixed time: a B
	// gateway slow to start would be judged after the rename.
	go func() {
		done <- w.gw(t, ctx, "", "--log-level", "error", "exec", "--config", w.cfg, "--admin-dir", w.admin, "--",
			"for i in $(seq 400); do [ -e b-runs ] && break; sleep 0.05; done; mv -f evil x.sh; echo mv=$?")
	}()
	b := w.gw(t, ctx, "", "--log-level", "error", "exec", "--config", w.cfg, "--admin-dir", w.admin, "--", "touch b-runs; sleep 3; bash x.sh")
	a := <-done
	if b.code != 0 || b.stdout != "JUDGED\n" {
		t.Errorf("the pinned call ran other bytes than judged: %+v", b)
	}
	if !strings.Contains(a.stdout, "mv=1") {
		t.Errorf("the concurrent call replaced the pinned script: %+v", a)
	}
	if got := readFile(t, x); got != "echo JUDGED\n" {
		t.Errorf("x.sh on the host is now %q", got)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the unjudged script ran (%s exists)", marker)
	}
}
