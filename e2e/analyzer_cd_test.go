package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Issue 11, item 6: the analyzer judged another script than the shell ran.
// CDPATH (bash's and dash's cd look there first), physical resolution
// (set -P: ".." after a symlink is the target's parent) and a script read
// from /dev/stdin each ran a script other than the one pinned, with no
// flag. Through bin/mitrity-gateway exec, with a rule that denies what only
// the unjudged script does (touch), each is now either judged correctly
// (the real script is pinned and the rule fires) or runs the judged bytes,
// and the marker the unjudged script writes on the host stays absent.

const analyzerCdPolicy = `default_agent:
  profile: dev
profiles:
  dev:
    sandbox_required: false
    exec_timeout_seconds: 30
    script_inspection_roots: ["${workspace}"]
    rules:
      - name: deny-touch
        when: 'commands.exists(c, c.name == "touch")'
        action: deny
        message: the judged script touches files
`

func TestAnalyzerCd(t *testing.T) {
	for _, v := range []struct {
		name, backend string
		asUser        bool
	}{{"none", "none", false}, {"bubblewrap", "auto", false}, {"unprivileged-gateway", "none", true}} {
		if v.asUser && os.Geteuid() != 0 {
			continue // the invoking user's own run is the variant above
		}
		backend := v.backend
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			// As the unprivileged gateway, the command runs as the user
			// that owns the stdin pipe, so /dev/stdin opens.
			w := newWorldBackend(t, v.asUser, analyzerCdPolicy, backend)
			// The call may set CDPATH: the analyzer must see it, or the
			// shell must not get it.
			cfg, err := os.ReadFile(w.cfg)
			must(t, err)
			settable := []byte("agent_settable: [DEPLOY_ENV, API_TOKEN]")
			if !bytes.Contains(cfg, settable) {
				t.Fatalf("the world's config changed shape:\n%s", cfg)
			}
			must(t, os.WriteFile(w.cfg, bytes.Replace(cfg, settable, []byte("agent_settable: [DEPLOY_ENV, API_TOKEN, CDPATH, PWD, OLDPWD]"), 1), 0o644))
			if backend == "auto" && os.Getenv("GOVERN_REQUIRE_SANDBOX") != "" {
				// The pins are bound over the paths inside bubblewrap.
				if r := w.exec(t, "--json", "--", "true"); !strings.Contains(r.stdout, `"sandbox_mode": "bubblewrap"`) {
					t.Fatalf("backend auto did not run in bubblewrap: %+v", r)
				}
			}
			testAnalyzerCd(t, w)
		})
	}
}

func testAnalyzerCd(t *testing.T, w *world) {
	marker := filepath.Join(w.ws, "UNJUDGED-RAN")
	evil := "touch " + marker + "\n"
	// The scripts the old analyzer judged print; the ones the shell really
	// ran touch the marker.
	for name, body := range map[string]string{
		"x.sh":       "echo judged-top\n",
		"sub/x.sh":   "echo judged-sub\n",
		"c/sub/x.sh": evil, // found through CDPATH
		"a/x.sh":     evil, // the physical parent of l
		"a/b/x.sh":   "echo in-b\n",
		"stdin.sh":   evil,
		// cwd phys/inner, named logically as logi/link: cd .. is logi.
		"phys/x.sh":       "echo judged-phys\n",
		"phys/inner/keep": "",
		"logi/x.sh":       evil,
	} {
		p := filepath.Join(w.ws, name)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(body), 0o755))
	}
	must(t, os.Symlink("a/b", filepath.Join(w.ws, "l")))
	must(t, os.Symlink("../phys/inner", filepath.Join(w.ws, "logi", "link")))

	noMarker := func(t *testing.T, what string, r result) {
		t.Helper()
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("%s: the unjudged script ran (the marker exists): %+v", what, r)
		}
	}
	denied := func(t *testing.T, what string, r result) {
		t.Helper()
		noMarker(t, what, r)
		if r.code != 126 || !strings.Contains(r.stderr, "the judged script touches files") {
			t.Fatalf("%s: want the rule's denial (the script that runs is judged), got %+v", what, r)
		}
	}
	ran := func(t *testing.T, what string, r result, out string) {
		t.Helper()
		noMarker(t, what, r)
		if r.code != 0 || r.stdout != out {
			t.Fatalf("%s: want the judged bytes to run (%q), got %+v", what, out, r)
		}
	}
	// Either the rule denies it (the analysis saw what runs) or the judged
	// bytes run (the shell did not get what the analysis did not see).
	deniedOrRan := func(t *testing.T, what string, r result, out string) {
		t.Helper()
		noMarker(t, what, r)
		if r.code == 126 && strings.Contains(r.stderr, "the judged script touches files") {
			return
		}
		ran(t, what, r, out)
	}

	cdpath := filepath.Join(w.ws, "c")
	// Each case starts without the marker, so each fails on its own.
	run := func(name string, fn func(t *testing.T)) {
		_ = os.Remove(marker)
		t.Run(name, fn)
	}
	run("CDPATH prefix", func(t *testing.T) {
		denied(t, "CDPATH=c cd sub; bash x.sh", w.exec(t, "--", "CDPATH="+cdpath+" cd sub; bash x.sh"))
	})
	run("CDPATH exported to a child shell", func(t *testing.T) {
		denied(t, "export CDPATH", w.exec(t, "--", "export CDPATH="+cdpath+"; bash -c 'cd sub; bash x.sh'"))
	})
	run("CDPATH in the call's env", func(t *testing.T) {
		deniedOrRan(t, "--env CDPATH", w.exec(t, "--env", "CDPATH="+cdpath, "--", "cd sub; bash x.sh"), "judged-sub\n")
	})
	run("CDPATH in the gateway's own environment", func(t *testing.T) {
		ran(t, "gateway CDPATH", w.execWithHostEnv(t, []string{"CDPATH=" + cdpath}, "--", "cd sub; bash x.sh"), "judged-sub\n")
	})
	run("PWD in the call's env", func(t *testing.T) {
		r := w.exec(t, "--cwd", "phys/inner", "--env", "PWD="+filepath.Join(w.ws, "logi", "link"), "--", "cd ..; bash x.sh")
		deniedOrRan(t, "--env PWD", r, "judged-phys\n")
	})
	run("set -P", func(t *testing.T) {
		denied(t, "set -P; cd l/..; bash x.sh", w.exec(t, "--", "set -P; cd l/..; bash x.sh"))
		denied(t, "cd -P l/..; bash x.sh", w.exec(t, "--", "cd -P l/..; bash x.sh"))
		// Without -P the parent is the logical one.
		ran(t, "cd l/..; bash x.sh", w.exec(t, "--", "cd l/..; bash x.sh"), "judged-top\n")
	})
	run("a script path through a symlink and ..", func(t *testing.T) {
		denied(t, "bash l/../x.sh", w.exec(t, "--", "bash l/../x.sh"))
		denied(t, "cd l; bash ../x.sh", w.exec(t, "--", "cd l; bash ../x.sh"))
	})
	for _, cmd := range []string{"bash /dev/stdin", "bash /dev/fd/0", "bash /proc/self/fd/0", "bash /proc/thread-self/fd/0", "source /dev/stdin", "bash -c 'sh /dev/stdin'"} {
		run(cmd, func(t *testing.T) {
			denied(t, cmd, w.exec(t, "--stdin-file", filepath.Join(w.ws, "stdin.sh"), "--", cmd))
		})
	}
	// Controls: the rule does fire on touch in a pinned script, and the run
	// user can write the marker, so an absent marker means something.
	_ = os.Remove(marker)
	denied(t, "control: bash c/sub/x.sh", w.exec(t, "--", "bash c/sub/x.sh"))
	if r := w.exec(t, "--", "echo x > "+marker+" && cat "+marker); r.code != 0 || r.stdout != "x\n" {
		t.Fatalf("control: the run user cannot write the marker: %+v", r)
	}
	must(t, os.Remove(marker))
}
