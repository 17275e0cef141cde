package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExecGuardThroughGateway: code the analyzer cannot see (allowed
// under a profile that relaxes opaque_with_credentials) puts the injected
// value on a child's command line — a Python subprocess, a script fetched
// at run time, a compiled program — while every host /proc/*/cmdline is
// watched. The sandbox refuses each start (EPERM), the value is on no
// host command line, and the audit card names each refusal by program,
// position and credential.
func TestExecGuardThroughGateway(t *testing.T) {
	forGatewayIdentities(t, func(t *testing.T, asUser bool) {
		w := newWorldBackend(t, asUser, credArgvPolicy, "auto")
		must(t, os.WriteFile(w.cfg, []byte(credArgvConfig(w, asUser)), 0o644))
		if asUser {
			uid, gid := ensureUser(t)
			must(t, os.Chown(w.cfg, int(uid), int(gid)))
		}
		// A "downloaded" script: written by the command itself at run time.
		fetched := `printf '#!/bin/sh\nexec /bin/sh -c "sleep 2" "$GITHUB_TOKEN"\n' > fetched.sh; sh fetched.sh; echo "fetched=$?"`
		// A compiled program built at run time inside the sandbox.
		compiled := `printf '#include <stdlib.h>\n#include <unistd.h>\n#include <stdio.h>\nint main(void){char *a[]={"/bin/sh","-c","sleep 2",getenv("GITHUB_TOKEN"),0};execv(a[0],a);perror("execv");return 3;}\n' > l.c && cc -o l l.c && ./l; echo "compiled=$?"`
		python := `python3 -c 'import os, subprocess
try:
    subprocess.run(["/bin/sh", "-c", "sleep 2", os.environ["GITHUB_TOKEN"]]); print("py-ran")
except PermissionError: print("py-refused")'`
		watch := watchCmdlines(secretToken)
		r := w.exec(t, "--agent", "relaxed", "--json", "--", python+"\n"+fetched+"\n"+compiled)
		hits, scans := watch.finish()
		if len(hits) > 0 {
			t.Errorf("the token was on a host command line: %q", hits)
		} else if scans < 10 {
			t.Errorf("only %d scans of /proc: the watch proves nothing", scans)
		}
		ev := eventOf(t, w, r)
		if field(ev, "data", "execution", "sandbox_mode") != "bubblewrap" {
			t.Fatalf("not a sandboxed run: %v", field(ev, "data", "execution"))
		}
		for _, want := range []string{"py-refused", "fetched=126", "execv: Operation not permitted", "compiled=3", "credential_in_argv: the sandbox refused"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("want %q in what the agent got:\n%s", want, r.stdout)
			}
		}
		refused, _ := field(ev, "data", "execution", "argv_refused").([]any)
		progs := map[string]bool{}
		for _, a := range refused {
			m := a.(map[string]any)
			progs[filepath.Base(m["program"].(string))] = true
			if m["credential"] != "github_token" || m["argument"] != float64(3) {
				t.Errorf("refusal %v: want argument 3 of github_token", m)
			}
		}
		if len(refused) != 3 || !progs["sh"] {
			t.Errorf("argv_refused = %v, want the three starts", refused)
		}
		if strings.Contains(r.stdout+r.stderr, secretToken) {
			t.Errorf("the token reached the agent")
		}
	})
}
