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

// TestPinThroughLink: a script named through a symbolic link in the
// workspace is refused before anything runs, because the run could
// re-point the link and run unjudged bytes by the same name (the review's
// `bash L/s.sh; ln -sfn e L; bash L/s.sh` printed GOOD, then EVIL). Named by
// its real path, the same swap changes nothing. Checked on the host: the
// unjudged script's marker is never written, the link is unchanged.
func TestPinThroughLink(t *testing.T) { forGatewayIdentities(t, testPinThroughLink) }

// sandboxedPolicy: every command in the sandbox, scripts in the workspace
// inspected.
const sandboxedPolicy = `default_agent:
  profile: dev
profiles:
  dev:
    sandbox_required: true
    exec_timeout_seconds: 30
    script_inspection_roots: ["${workspace}"]
`

func testPinThroughLink(t *testing.T, asUser bool) {
	w := newWorldBackend(t, asUser, sandboxedPolicy, "auto")
	uid, gid := ensureUser(t)
	marker := filepath.Join(w.ws, "PWNED")
	for dir, body := range map[string]string{"d": "echo GOOD\n", "e": "echo EVIL; : > " + marker + "\n"} {
		must(t, os.Mkdir(filepath.Join(w.ws, dir), 0o755))
		must(t, os.WriteFile(filepath.Join(w.ws, dir, "s.sh"), []byte(body), 0o644))
	}
	must(t, os.Symlink("d", filepath.Join(w.ws, "L")))
	must(t, os.Symlink("d/s.sh", filepath.Join(w.ws, "run.sh")))
	chownTree(t, w.ws, int(uid), int(gid))
	for _, c := range []struct{ name, command, link, target string }{
		{"directory-link", "bash L/s.sh; ln -sfn e L; bash L/s.sh", "L", "d"},
		{"file-link", "bash run.sh; ln -sf e/s.sh run.sh; bash run.sh", "run.sh", "d/s.sh"},
		{"link-unchanged", "bash L/s.sh", "L", "d"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := w.exec(t, "--", c.command)
			if r.code == 0 || strings.Contains(r.stdout, "GOOD") || !strings.Contains(r.stderr, "symbolic link") {
				t.Errorf("a script named through a link in the workspace was not refused before running: %+v", r)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatalf("the unjudged script ran (%s exists)", marker)
			}
			if got, err := os.Readlink(filepath.Join(w.ws, c.link)); err != nil || got != c.target {
				t.Errorf("the link %s now points to %q (%v)", c.link, got, err)
			}
		})
	}
	// The control: by the real path the swap runs the judged bytes twice.
	t.Run("real-path", func(t *testing.T) {
		r := w.exec(t, "--", "bash d/s.sh; ln -sfn e L; bash d/s.sh; ln -sfn d L")
		if r.code != 0 || r.stdout != "GOOD\nGOOD\n" {
			t.Errorf("named by its real path: %+v", r)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("the unjudged script ran (%s exists)", marker)
		}
	})
}
