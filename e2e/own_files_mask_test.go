package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The gateway's own files where operators put them, and replaced the way
// editors and configuration managers replace them, through the built
// gateway at full strength (bubblewrap), as root with run_as and as the
// unprivileged user. /tmp is the sandbox's own, so these layouts live under
// /var/tmp, where the sandbox sees the host.

// ownFilesWorld is a world whose config and policy sit in a directory of
// their own outside /tmp, beside the workspace: audit names the audit log
// as the config does (relative to the config), and w.audit where it lands.
func ownFilesWorld(t *testing.T, asUser bool, policy, audit string) (w *world, base string) {
	t.Helper()
	w = newWorldBackend(t, asUser, policy, "bubblewrap")
	uid, gid := ensureUser(t)
	base, err := os.MkdirTemp("/var/tmp", "mitrity-e2e-own-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	must(t, os.Chmod(base, 0o755))
	runAs := "  run_as: " + testUser + "\n"
	if asUser {
		runAs = ""
		must(t, os.Chown(base, int(uid), int(gid)))
	}
	w.ws, w.cfg, w.policy, w.audit = filepath.Join(base, "ws"), filepath.Join(base, "g.yaml"), filepath.Join(base, "policy.yaml"), filepath.Join(base, audit)
	must(t, os.Mkdir(w.ws, 0o777))
	must(t, os.Chmod(w.ws, 0o777))
	if dir := filepath.Dir(w.audit); dir != base {
		must(t, os.Mkdir(dir, 0o700))
		if asUser {
			must(t, os.Chown(dir, int(uid), int(gid)))
		}
	}
	cfg := "exec:\n  enabled: true\n  shell: /bin/bash\n  default_cwd: " + w.ws + "\n" + runAs +
		"  sandbox:\n    backend: bubblewrap\npolicy: policy.yaml\naudit:\n  path: " + audit + "\n"
	must(t, os.WriteFile(w.cfg, []byte(cfg), 0o644))
	must(t, os.WriteFile(w.policy, []byte(policy), 0o644))
	return w, base
}

func ownPolicy(marker string) string {
	return "# " + marker + "\ndefault_agent: {profile: dev}\nprofiles:\n  dev: {sandbox_required: true, exec_timeout_seconds: 30, rules: []}\n"
}

// TestOwnFilesBesideWorkspace: the config, the policy and a relative
// audit.path in one directory, the workspace inside it, as issue 13 found
// it (validate says ok; every call failed spawn_error before). Calls run;
// the directory shows the workspace and nothing else; none of the files
// can be read; the audit log holds the call.
func TestOwnFilesBesideWorkspace(t *testing.T) {
	forGatewayIdentities(t, func(t *testing.T, asUser bool) {
		m := marker(t)
		w, base := ownFilesWorld(t, asUser, ownPolicy(m), "audit.jsonl")
		if r := w.gw(t, context.Background(), "", "validate", "--config", w.cfg); r.code != 0 {
			t.Fatalf("validate: %+v", r)
		}
		r := w.exec(t, "--", `echo hi; ls -A ..; cat ../g.yaml ../policy.yaml ../audit.jsonl 2>/dev/null; echo "rc=$?"; pwd`)
		if r.code != 0 || r.stdout != "hi\nws\nrc=1\n"+w.ws+"\n" {
			t.Fatalf("exit %d\nstdout: %q\nstderr: %s", r.code, r.stdout, r.stderr)
		}
		if strings.Contains(r.stdout+r.stderr, m) {
			t.Fatalf("the policy was read:\n%s%s", r.stdout, r.stderr)
		}
		calls := w.calls(t)
		if len(calls) != 1 || field(calls[0], "data", "execution", "status") != "completed" {
			t.Fatalf("audit: %v", calls)
		}
		if _, err := os.Stat(filepath.Join(base, "ws", "..", "audit.jsonl")); err != nil {
			t.Fatal(err)
		}
	})
}

// TestOwnFilesReplacedWhileServing: `serve --http` with 16 calls at once,
// each reading the policy a few times, while the host replaces the policy
// by rename in a tight loop (a new file renamed over it, as editors and
// configuration managers save). No call fails to start (before: 3–13%
// spawn_error), and no call's output holds the policy or its host path.
func TestOwnFilesReplacedWhileServing(t *testing.T) {
	forGatewayIdentities(t, func(t *testing.T, asUser bool) {
		m := marker(t)
		w, base := ownFilesWorld(t, asUser, ownPolicy(m+"-0"), "state/audit.jsonl")
		g := startHTTPGW(t, w, gwOptions{maxConcurrent: 16})
		// The new file is written elsewhere on the same file system: a
		// temporary file beside the policy would be an ordinary file of
		// that directory, visible (docs/sandbox.md).
		stage, err := os.MkdirTemp("/var/tmp", "mitrity-e2e-stage-")
		must(t, err)
		t.Cleanup(func() { os.RemoveAll(stage) })
		stop := make(chan struct{})
		var renames atomic.Int64
		var looped sync.WaitGroup
		looped.Add(1)
		go func() {
			defer looped.Done()
			tmp := filepath.Join(stage, "policy.yaml")
			for i := 1; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if os.WriteFile(tmp, []byte(ownPolicy(fmt.Sprintf("%s-%d", m, i))), 0o644) == nil && os.Rename(tmp, w.policy) == nil {
					renames.Add(1)
				}
			}
		}()
		const clients, each = 16, 3
		type outcome struct {
			text    string
			stdout  string
			isError bool
			status  any
			err     error
		}
		out := make(chan outcome, clients*each)
		var calls sync.WaitGroup
		for range clients {
			calls.Add(1)
			go func() {
				defer calls.Done()
				cs := g.client(t)
				for range each {
					ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
					r, err := callShell(t, ctx, cs, map[string]any{"command": `for i in 1 2 3 4 5; do cat ../policy.yaml 2>/dev/null; sleep 0.05; done; ls -A ..; echo done`})
					cancel()
					out <- outcome{r.text, r.stdout, r.isError, r.structured["status"], err}
				}
			}()
		}
		calls.Wait()
		close(stop)
		looped.Wait()
		close(out)
		n := 0
		for o := range out {
			n++
			switch {
			case o.err != nil:
				t.Errorf("call: %v", o.err)
			case o.isError || strings.Contains(o.text, "spawn_error"):
				t.Errorf("a call did not run: %s", o.text)
			case strings.Contains(o.text, m) || strings.Contains(o.text, base):
				t.Errorf("a call's output holds the policy or its path:\n%s", o.text)
			case o.stdout != "ws\ndone\n":
				t.Errorf("output %q (status %v)", o.text, o.status)
			}
		}
		if n != clients*each || renames.Load() < clients {
			t.Fatalf("%d calls, %d renames", n, renames.Load())
		}
		for _, ev := range w.events(t) {
			if field(ev, "data", "execution", "reason") == "spawn_error" {
				t.Errorf("audited spawn_error: %v", ev)
			}
		}
		t.Logf("%d calls while the policy was replaced %d times", n, renames.Load())
	})
}

// TestOwnFilesUncoverableReplaced: the policy in a directory too big for
// the sandbox to cover (more than 32 entries: it masks the file itself and
// watches its name). The host renames a new policy over it while a run
// sleeps between two reads. The run is killed at the change, the agent
// gets none of its output (it may have read the new file in the moment
// before the kill), and the audit says which kind of file changed, by
// what it is, never by its path.
func TestOwnFilesUncoverableReplaced(t *testing.T) {
	forGatewayIdentities(t, func(t *testing.T, asUser bool) {
		m := marker(t)
		w, _ := ownFilesWorld(t, asUser, ownPolicy(m+"-old"), "audit.jsonl")
		// A directory of its own outside the workspace's (which is always
		// covered, down to the paths to the workspace), with the policy
		// among 40 other files.
		conf, err := os.MkdirTemp("/var/tmp", "mitrity-e2e-conf-")
		must(t, err)
		t.Cleanup(func() { os.RemoveAll(conf) })
		must(t, os.Chmod(conf, 0o755))
		for i := range 40 {
			must(t, os.WriteFile(filepath.Join(conf, fmt.Sprintf("filler-%02d", i)), nil, 0o644))
		}
		cfg, err := os.ReadFile(w.cfg)
		must(t, err)
		must(t, os.WriteFile(w.cfg, []byte(strings.Replace(string(cfg), "policy: policy.yaml", "policy: "+filepath.Join(conf, "policy.yaml"), 1)), 0o644))
		must(t, os.Rename(w.policy, filepath.Join(conf, "policy.yaml")))
		w.policy = filepath.Join(conf, "policy.yaml")
		stage, err := os.MkdirTemp("/var/tmp", "mitrity-e2e-stage-")
		must(t, err)
		t.Cleanup(func() { os.RemoveAll(stage) })
		go func() {
			time.Sleep(2000 * time.Millisecond)
			tmp := filepath.Join(stage, "policy.yaml")
			if os.WriteFile(tmp, []byte(ownPolicy(m+"-new")), 0o644) == nil {
				os.Rename(tmp, w.policy)
			}
		}()
		r := w.exec(t, "--", "cat "+w.policy+"; echo first; sleep 6; cat "+w.policy+"; echo second")
		all := r.stdout + r.stderr
		if strings.Contains(all, m) || strings.Contains(all, "second") {
			t.Fatalf("the run's output reached the agent:\n%s", all)
		}
		if !strings.Contains(r.stderr, "withheld") {
			t.Errorf("stderr does not say the output was withheld: %q", r.stderr)
		}
		calls := w.calls(t)
		if len(calls) != 1 {
			t.Fatalf("audit: %v", calls)
		}
		x := calls[0]
		if s := field(x, "data", "execution", "status"); s != "killed" {
			t.Errorf("status %v, want killed: %v", s, x)
		}
		got, _ := field(x, "data", "execution", "mask_replaced").([]any)
		if len(got) != 1 || got[0] != "one of the gateway's own files" {
			t.Errorf("mask_replaced %v", got)
		}
		raw, err := os.ReadFile(w.audit)
		must(t, err)
		if strings.Contains(string(raw), m) {
			t.Errorf("the audit log holds the policy's text")
		}
	})
}
