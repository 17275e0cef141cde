package e2e

import (
	"os"
	"strings"
	"testing"
)

// TestCredentialOutOfSight: a credential reaches a command line, or the
// host, through what bash does with a value rather than through an
// argument word: a file named with it (a later glob or ls puts the name on
// a command line; in the workspace the name stays on the host after the
// run), and code in an arithmetic subscript, an indirection or a nameref.
// Each is refused by the analysis before anything runs; the workspace
// holds no file named with the token afterwards.
func TestCredentialOutOfSight(t *testing.T) {
	forGatewayIdentities(t, func(t *testing.T, asUser bool) {
		w := newWorldBackend(t, asUser, credArgvPolicy, "auto")
		must(t, os.WriteFile(w.cfg, []byte(credArgvConfig(w, asUser)), 0o644))
		watch := watchCmdlines(secretToken)
		attacks := []struct{ name, cmd string }{
			{"a file named with the token, then a glob", `: > "k-$GITHUB_TOKEN"; tail -f /dev/null k-*`},
			{"a file named with the token left in the workspace", `echo x > "$GITHUB_TOKEN"`},
			{"let of a quoted subscript", `x='a[$(tail -f /dev/null "$GITHUB_TOKEN")]'; let "$x"`},
			{"indirection through a subscript", `x='a[$(tail -f /dev/null "$GITHUB_TOKEN")]'; echo "${!x}"`},
			{"nameref to a subscript", `declare -n r='a[$(tail -f /dev/null "$GITHUB_TOKEN")]'; echo "$r"`},
		}
		for _, a := range attacks {
			r := w.exec(t, "--agent", "ci", "--timeout", "3", "--", a.cmd)
			ev := lastEvent(t, w)
			if r.code != 126 || !strings.Contains(r.stderr, "credential_in_argv") {
				t.Errorf("%s: not refused with credential_in_argv: %+v", a.name, r)
			}
			if field(ev, "data", "decision", "stage") != "command_analysis" || field(ev, "data", "execution") != nil {
				t.Errorf("%s: not refused by the analysis before it ran: %v", a.name, field(ev, "data"))
			}
		}
		hits, scans := watch.finish()
		if len(hits) > 0 {
			t.Errorf("the token was on a host command line (%d scans): %q", scans, hits)
		}
		ents, err := os.ReadDir(w.ws)
		must(t, err)
		for _, e := range ents {
			if strings.Contains(e.Name(), secretToken) {
				t.Errorf("the workspace holds a file named with the token: %s", strings.ReplaceAll(e.Name(), secretToken, "<token>"))
			}
		}
	})
}
