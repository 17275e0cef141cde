package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// credArgvPolicy: ci holds github_token under the strict default; relaxed
// holds it under a profile that allows code the analyzer cannot see.
const credArgvPolicy = `default_agent:
  profile: strict
agents:
  ci:
    profile: strict
    credentials: [github_token]
  relaxed:
    profile: relaxed
    credentials: [github_token]
profiles:
  strict:
    sandbox_required: true
    exec_timeout_seconds: 30
    script_inspection_roots: ["${workspace}"]
  relaxed:
    sandbox_required: true
    exec_timeout_seconds: 30
    script_inspection_roots: ["${workspace}"]
    opaque_with_credentials: allow
`

// credArgvConfig maps github_token three ways into every run of an agent
// that holds it: $GITHUB_TOKEN, $MITRITY_CRED_DIR/gh.tok, and whatever
// variable a call's env names with ${credential:github_token} (X).
func credArgvConfig(w *world, asUser bool) string {
	runAs := ""
	if !asUser && os.Geteuid() == 0 {
		runAs = "  run_as: " + testUser + "\n"
	}
	return "exec:\n  enabled: true\n  shell: /bin/bash\n  default_cwd: " + w.ws + "\n" + runAs +
		"  sandbox:\n    backend: auto\n" +
		"  env:\n    agent_settable: [X, DEPLOY_ENV]\n" +
		"  credentials:\n    env:\n      GITHUB_TOKEN: \"${credential:github_token}\"\n" +
		"    files:\n      gh.tok: \"${credential:github_token}\"\n" +
		"credentials:\n  github_token:\n    env: E2E_GITHUB_TOKEN\n" +
		"policy: policy.yaml\naudit:\n  path: " + w.audit + "\n"
}

// cmdlineWatch reads every host /proc/*/cmdline every 10 ms until stopped
// and keeps the command lines that held any of needles.
type cmdlineWatch struct {
	stop chan struct{}
	done chan struct{}
	mu   sync.Mutex
	hits []string
	n    int    // scans made
	file string // what is read of each process: cmdline, comm
}

func watchCmdlines(needles ...string) *cmdlineWatch { return watchProc("cmdline", needles...) }

// watchProc reads every host /proc/*/FILE every 10 ms until stopped and
// keeps those that held any of needles.
func watchProc(file string, needles ...string) *cmdlineWatch {
	c := &cmdlineWatch{stop: make(chan struct{}), done: make(chan struct{}), file: file}
	go func() {
		defer close(c.done)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			c.scan(needles)
			select {
			case <-c.stop:
				c.scan(needles)
				return
			case <-tick.C:
			}
		}
	}()
	return c
}

func (c *cmdlineWatch) scan(needles []string) {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), c.file))
		if err != nil {
			continue
		}
		for _, n := range needles {
			if strings.Contains(string(b), n) {
				c.mu.Lock()
				c.hits = append(c.hits, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
				c.mu.Unlock()
			}
		}
	}
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
}

func (c *cmdlineWatch) finish() (hits []string, scans int) {
	close(c.stop)
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, c.n
}

// TestCredentialArgv attacks credential_in_argv from outside: a granted
// agent tries every way issue 12 found to put its token on a child's
// command line (an env credential, exec -a, files, descriptors, the
// credential directory, environment dumps, PS4, code the analyzer cannot
// see) while every host /proc/*/cmdline is read every 10 ms. Each attack
// must be refused by the analysis stage itself (the sandbox's exec guard is
// a second wall, not this one's proof), with a sentence naming the
// sanctioned forms, and the token must never be on a host command line.
// Each sanctioned form runs, in the sandbox.
func TestCredentialArgv(t *testing.T) {
	forGatewayIdentities(t, func(t *testing.T, asUser bool) {
		w := newWorldBackend(t, asUser, credArgvPolicy, "auto")
		must(t, os.WriteFile(w.cfg, []byte(credArgvConfig(w, asUser)), 0o644))
		// Code the analyzer cannot see until it runs, in the workspace.
		must(t, os.WriteFile(filepath.Join(w.ws, "cmd.txt"), []byte(`tail -f /dev/null "$GITHUB_TOKEN"`+"\n"), 0o644))
		must(t, os.WriteFile(filepath.Join(w.ws, "benign.txt"), []byte("echo relaxed-ran\n"), 0o644))
		must(t, os.WriteFile(filepath.Join(w.ws, "VERSION"), []byte("1.2.3\n"), 0o644))

		watch := watchCmdlines(secretToken, base64.StdEncoding.EncodeToString([]byte(secretToken)))
		defer func() {
			if hits, scans := watch.finish(); len(hits) > 0 {
				t.Errorf("the token was on a host command line (%d scans): %q", scans, hits)
			} else if scans < 10 {
				t.Errorf("only %d scans of /proc: the watch proves nothing", scans)
			}
		}()

		env := "X=${credential:github_token}"
		attacks := []struct {
			name string
			args []string // before "--"
			cmd  string
		}{
			{"env credential in an argument", []string{"--env", env}, `tail -f /dev/null "$X"`},
			{"env credential through a child shell", []string{"--env", env}, `bash -c 'tail -f /dev/null "$X"'`},
			{"exec -a", nil, `exec -a "$GITHUB_TOKEN" tail -f /dev/null`},
			{"written to a file, read back by a substitution", nil, `printf %s "$GITHUB_TOKEN" > /tmp/t; tail -f /dev/null $(cat /tmp/t)`},
			{"written to a file, read by xargs -a", nil, `printf %s "$GITHUB_TOKEN" > /tmp/t; xargs -a /tmp/t tail -f /dev/null`},
			{"written to a file, fed to xargs", nil, `printf %s "$GITHUB_TOKEN" > /tmp/t; xargs tail -f /dev/null < /tmp/t`},
			{"a script written then run", nil, `printf 'tail -f /dev/null "%s"\n' "$GITHUB_TOKEN" > s.sh; bash s.sh`},
			{"credential file copied then read back", nil, `cp "$MITRITY_CRED_DIR/gh.tok" /tmp/c; tail -f /dev/null "$(cat /tmp/c)"`},
			{"credential file through a descriptor", nil, `exec 3< "$MITRITY_CRED_DIR/gh.tok"; read -r T <&3; tail -f /dev/null "$T"`},
			{"credential file through read -u", nil, `exec 3< "$MITRITY_CRED_DIR/gh.tok"; read -r -u 3 T; tail -f /dev/null "$T"`},
			{"credential directory through a variable", nil, `D=$MITRITY_CRED_DIR; read -r T < $D/gh.tok; tail -f /dev/null "$T"`},
			{"credential file by literal path", nil, `T=$(cat /run/mitrity/credentials/gh.tok); tail -f /dev/null "$T"`},
			{"credential file by glob", nil, `T=$(cat /run/mitrity/cred*/*.tok); tail -f /dev/null "$T"`},
			{"credential file relative to a cd", nil, `cd /run/mitrity/credentials && T=$(cat gh.tok); tail -f /dev/null "$T"`},
			{"declare -p", nil, `T=$(declare -p GITHUB_TOKEN); tail -f /dev/null "${T#*=}"`},
			{"export -p", nil, `export -p | grep GITHUB_TOKEN | xargs tail -f /dev/null`},
			{"set", nil, `T=$(set | grep ^GITHUB_TOKEN=); tail -f /dev/null "${T#*=}"`},
			{"env captured", nil, `T=$(env | grep ^GITHUB_TOKEN=); tail -f /dev/null "${T#*=}"`},
			{"printenv captured", nil, `tail -f /dev/null "$(printenv GITHUB_TOKEN)"`},
			{"awk ENVIRON", nil, `T=$(awk 'BEGIN{print ENVIRON["GITHUB_TOKEN"]}'); tail -f /dev/null "$T"`},
			{"PS4 under xtrace", nil, `PS4='$(tail -f /dev/null "$GITHUB_TOKEN")'; set -x; true`},
			{"indirection", nil, `n=GITHUB_TOKEN; tail -f /dev/null "${!n}"`},
			{"nameref", nil, `declare -n R; R=GITHUB_TOKEN; tail -f /dev/null "$R"`},
			{"printf -v into an array", nil, `printf -v 'a[0]' %s "$GITHUB_TOKEN"; tail -f /dev/null "${a[@]}"`},
			{"a function prints it into a substitution", nil, `f() { echo "$GITHUB_TOKEN"; }; tail -f /dev/null "$(f)"`},
			{"eval of code read at run time", nil, `eval "$(cat cmd.txt)"`},
			{"bash -c of code read at run time", nil, `bash -c "$(cat cmd.txt)"`},
			{"source of a process substitution", nil, `source <(cat cmd.txt)`},
			{"code piped into a shell", nil, `cat cmd.txt | bash`},
		}
		for _, a := range attacks {
			args := append(append([]string{"--agent", "ci", "--timeout", "3"}, a.args...), "--", a.cmd)
			r := w.exec(t, args...)
			ev := lastEvent(t, w)
			if r.code != 126 || !strings.Contains(r.stderr, "credential_in_argv") || !strings.Contains(r.stderr, `assign it for one command (NAME="$VAR" cmd)`) {
				t.Errorf("%s: not refused with credential_in_argv and the sanctioned forms: %+v", a.name, r)
			}
			// The analysis stage decided, before anything ran.
			if field(ev, "data", "decision", "outcome") != "deny" || field(ev, "data", "decision", "reason") != "credential_in_argv" ||
				field(ev, "data", "decision", "stage") != "command_analysis" || field(ev, "data", "execution") != nil {
				t.Errorf("%s: the audit event is not the analysis stage's refusal: %v", a.name, field(ev, "data"))
			}
			if msg, _ := field(ev, "data", "decision", "message").(string); !strings.Contains(msg, "here-string") {
				t.Errorf("%s: the recorded message does not name the sanctioned forms: %q", a.name, msg)
			}
		}

		counterparts := []struct {
			name, agent string
			args        []string
			cmd, want   string
		}{
			{"one-command assignment", "ci", nil, `GH_TOKEN="$GITHUB_TOKEN" sh -c 'test -n "$GH_TOKEN" && echo assigned'`, "assigned\n"},
			{"left in the environment", "ci", []string{"--env", env}, `sh -c 'test "$X" = "$GITHUB_TOKEN" && echo env-ok'`, "env-ok\n"},
			{"piped into a program's stdin", "ci", nil, `printf %s "$GITHUB_TOKEN" | wc -c`, fmt.Sprintf("%d\n", len(secretToken))},
			{"here-string", "ci", nil, `wc -c <<< "$GITHUB_TOKEN"`, fmt.Sprintf("%d\n", len(secretToken)+1)},
			{"builtins", "ci", nil, `echo "${#GITHUB_TOKEN}"; [ -n "$GITHUB_TOKEN" ] && printf 'set\n'`, fmt.Sprintf("%d\nset\n", len(secretToken))},
			{"credential file by path", "ci", nil, `wc -c < "$MITRITY_CRED_DIR/gh.tok"; wc -c "$MITRITY_CRED_DIR/gh.tok" | cut -d' ' -f2`,
				fmt.Sprintf("%d\n/run/mitrity/credentials/gh.tok\n", len(secretToken))},
			{"credential file read then fed on stdin", "ci", nil, `read -r T < "$MITRITY_CRED_DIR/gh.tok"; printf %s "$T" | wc -c`, fmt.Sprintf("%d\n", len(secretToken))},
			{"written to a file and passed by path", "ci", nil, `printf %s "$GITHUB_TOKEN" > /tmp/t; wc -c /tmp/t`, fmt.Sprintf("%d /tmp/t\n", len(secretToken))},
			{"another file read after a credential was written", "ci", nil, `printf %s "$GITHUB_TOKEN" > /tmp/t; V=$(cat VERSION); echo "v$V"`, "v1.2.3\n"},
			{"exec -a with a plain name", "ci", nil, `exec -a worker sh -c 'echo exec-ok'`, "exec-ok\n"},
			{"static eval", "ci", nil, `eval 'echo static-eval'`, "static-eval\n"},
			{"dynamic code relaxed by the profile", "relaxed", nil, `eval "$(cat benign.txt)"`, "relaxed-ran\n"},
		}
		for _, c := range counterparts {
			args := append(append([]string{"--agent", c.agent}, c.args...), "--", c.cmd)
			r := w.exec(t, args...)
			ev := lastEvent(t, w)
			if r.code != 0 || r.stdout != c.want {
				t.Errorf("%s: the sanctioned form did not run: %+v (event %v)", c.name, r, field(ev, "data", "decision"))
				continue
			}
			if mode := field(ev, "data", "execution", "sandbox_mode"); mode != "bubblewrap" && mode != "bubblewrap_no_seccomp" {
				t.Errorf("%s: ran with sandbox_mode %v", c.name, mode)
			}
			if c.agent == "relaxed" && !hasRelaxedFlag(ev) {
				t.Errorf("%s: the audit event does not show that the profile relaxed the decision: %v", c.name, field(ev, "data", "command", "flags"))
			}
		}
		b, err := os.ReadFile(w.audit)
		must(t, err)
		if strings.Contains(string(b), secretToken) {
			t.Error("the token reached the audit file")
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		<-ctx.Done() // a last stretch of scans after the final run
	})
}

func lastEvent(t *testing.T, w *world) map[string]any {
	t.Helper()
	evs := w.events(t)
	if len(evs) == 0 {
		t.Fatal("no audit event")
	}
	return evs[len(evs)-1]
}

// hasRelaxedFlag reports whether an event's command flags carry
// opaque_with_credentials, naming the profile knob that allowed the run.
func hasRelaxedFlag(ev map[string]any) bool {
	flags, _ := field(ev, "data", "command", "flags").([]any)
	for _, f := range flags {
		m, _ := f.(map[string]any)
		d, _ := m["detail"].(string)
		if m["kind"] == "opaque_with_credentials" && strings.Contains(d, "opaque_with_credentials: allow") {
			return true
		}
	}
	return false
}
