package e2e

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestCredentialOutOfSight: a credential reaches a command line, or the
// host, through what bash does with a value rather than through an
// argument word: a file named with it (a later glob or ls puts the name on
// a command line; in the workspace the name stays on the host after the
// run), and code in an arithmetic subscript, an indirection or a nameref.
// A process name (/proc/self/comm) is another command line. Each is
// refused by the analysis before anything runs; the workspace
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
		// A process's name is read by every local user too (/proc/PID/comm,
		// ps): 15 bytes of the value at a time.
		comm := watchProc("comm", secretToken[:15])
		r := w.exec(t, "--agent", "ci", "--timeout", "5", "--", `printf %s "${GITHUB_TOKEN:0:15}" > /proc/self/comm; sleep 1; :`)
		time.Sleep(200 * time.Millisecond) // a refusal is quick: watch a while after it
		if hits, scans := comm.finish(); len(hits) > 0 {
			t.Errorf("the token was a host process's name (%d scans): %d hits", scans, len(hits))
		} else if scans < 10 {
			t.Errorf("only %d scans of /proc: the watch proves nothing", scans)
		}
		if ev := lastEvent(t, w); r.code != 126 || field(ev, "data", "decision", "stage") != "command_analysis" {
			t.Errorf("writing the token into /proc/self/comm was not refused by the analysis: %+v %v", r, field(ev, "data", "decision"))
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
