package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// A host condition the probe is run under, for real: the machine as it is,
// an outer seccomp filter that forbids installing one (a container runtime
// whose profile denies nested filters), or a user namespace whose
// user.max_user_namespaces is 0, so that bubblewrap cannot make its own
// (the host's sysctl is never touched: the limit is the namespace's).
type probeHost struct {
	name string
	// argv wraps the probe's command line (bin and its arguments) for
	// the identity whose wrap (setpriv) is given.
	argv func(self string, wrap, probe []string) []string
	want level
}

var probeHosts = []probeHost{
	{"as is", func(_ string, wrap, probe []string) []string {
		return append(slices.Clone(wrap), probe...)
	}, levelFull},
	{"seccomp denied", func(self string, wrap, probe []string) []string {
		// The filter goes on first, as root; setpriv and the probe
		// inherit it across exec and the uid change.
		return append(append([]string{self, denySeccompExec}, wrap...), probe...)
	}, levelDegraded},
	{"no user namespaces", func(_ string, wrap, probe []string) []string {
		script := `echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"`
		return append(append(slices.Clone(wrap), "unshare", "--user", "--map-root-user", "sh", "-c", script, "sh"), probe...)
	}, levelUnavailable},
}

// runProbe runs the built mitrity-sandboxrun with args under host as id
// and returns its stdout, stderr and exit code.
func runProbe(t *testing.T, id identity, host probeHost, args ...string) (string, string, int) {
	t.Helper()
	self, err := os.Executable()
	assert.NilError(t, err)
	argv := host.argv(self, id.wrap, append([]string{sandboxrunBin(t)}, args...))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 10 * time.Second
	err = cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("%v: %v", argv, err)
	}
	return stdout.String(), stderr.String(), code
}

// TestProbeExitCodes runs the real probe as root and as the unprivileged
// user, on this host and under the two conditions that weaken it, and
// checks its level, its exit code with and without --require, its JSON
// against what each check found, and that the host's own user-namespace
// limit is what it was.
func TestProbeExitCodes(t *testing.T) {
	requireSandbox(t)
	limit, err := os.ReadFile("/proc/sys/user/max_user_namespaces")
	assert.NilError(t, err)
	t.Cleanup(func() {
		after, err := os.ReadFile("/proc/sys/user/max_user_namespaces")
		assert.NilError(t, err)
		assert.Check(t, is.Equal(string(after), string(limit)), "the host's user.max_user_namespaces changed")
	})
	// Root and the user through setpriv (the seccomp wrapper, the test
	// binary, runs as root and drops to the user after it); a developer
	// who is not root runs it as themselves.
	ids := identities(t)
	for _, id := range ids[:min(2, len(ids))] {
		for _, host := range probeHosts {
			t.Run(id.name+"/"+host.name, func(t *testing.T) {
				t.Parallel()
				stdout, stderr, code := runProbe(t, id, host, "--probe", "--json")
				var r probeReport
				assert.NilError(t, json.Unmarshal([]byte(stdout), &r), "stdout: %s\nstderr: %s", stdout, stderr)
				assert.Check(t, is.Equal(r.Level, host.want), stdout)
				assert.Check(t, is.Equal(code, exitOf[host.want]))
				assert.Check(t, is.Equal(r.ExitCode, code))
				assert.Check(t, is.Equal(r.Version, probeVersion))
				assert.Check(t, is.Equal(r.Met, host.want == levelFull))
				assert.Check(t, is.Equal(r.Required, level("")))
				assert.Check(t, is.Equal(r.SandboxMode, modeOf[host.want]))
				assert.Check(t, is.Equal(r.Bubblewrap.Path, "/usr/bin/bwrap"))
				checks := map[string]probeCheck{}
				for _, c := range r.Checks {
					checks[c.Name] = c
					assert.Check(t, c.OK == (c.Reason == ""), "%+v", c)
					assert.Check(t, c.OK || c.Remedy != "", "%+v", c)
				}
				assert.Check(t, is.Len(checks, 4))
				assert.Check(t, checks["bubblewrap"].OK)
				assert.Check(t, is.Equal(r.Limits == "cgroup", checks["cgroups"].OK))
				switch host.want {
				case levelFull:
					assert.Check(t, checks["user_namespaces"].OK && checks["seccomp"].OK)
					if id.uid == 0 {
						assert.Check(t, is.Equal(r.EUID, 0))
					} else {
						assert.Check(t, is.Equal(r.EUID, id.uid))
						// No delegated cgroup for a user here: limits by rlimit.
						assert.Check(t, is.Equal(r.Limits, "rlimit"))
					}
				case levelDegraded:
					assert.Check(t, checks["user_namespaces"].OK)
					assert.Check(t, !checks["seccomp"].OK)
					assert.Check(t, is.Contains(checks["seccomp"].Remedy, "exec.sandbox.seccomp: preferred"))
				case levelUnavailable:
					assert.Check(t, !checks["user_namespaces"].OK)
					assert.Check(t, is.Contains(checks["user_namespaces"].Reason, "max_*_namespaces"))
					assert.Check(t, is.Contains(checks["user_namespaces"].Remedy, "user.max_user_namespaces"))
				}

				// --require: 0 when the level is met, else the level's
				// code; the text form says which.
				for _, req := range []level{levelFull, levelDegraded} {
					stdout, _, code := runProbe(t, id, host, "--probe", "--require", string(req))
					met := rank[host.want] >= rank[req]
					want := exitOf[host.want]
					if met {
						want = exitFull
					}
					assert.Check(t, is.Equal(code, want), "--require %s at %s", req, host.want)
					verdict := "--require " + string(req) + ": met"
					if !met {
						verdict = "--require " + string(req) + ": NOT met"
					}
					assert.Check(t, is.Contains(stdout, verdict))
					assert.Check(t, is.Contains(stdout, "level "+string(host.want)+":"))
				}
			})
		}
	}
}

// A --require the probe does not know is a usage error (2), before any
// probing; so are the codes of the levels never 1 or 2.
func TestProbeRequireUsage(t *testing.T) {
	for _, args := range [][]string{{"--probe", "--require", "strong"}, {"probe", "--require", "unavailable"}, {"probe", "--require", "Full"}} {
		_, stderr, err := run(t, args...)
		assert.Check(t, is.ErrorContains(err, "want full or degraded"), "%v", args)
		var ec interface{ ExitCode() int }
		assert.Assert(t, errors.As(err, &ec), "%v: %v", args, err)
		assert.Check(t, is.Equal(ec.ExitCode(), exitUsage))
		assert.Check(t, is.Equal(stderr, ""))
	}
	for lv, code := range exitOf {
		assert.Check(t, code != 1 && code != 2, "%s exits %d", lv, code)
	}
}

// The --json document's fields are the ones docs/sandbox.md lists, no more
// and no fewer.
func TestProbeJSONDocumented(t *testing.T) {
	b, err := json.Marshal(probeReport{Checks: []probeCheck{{}}})
	assert.NilError(t, err)
	var m map[string]any
	assert.NilError(t, json.Unmarshal(b, &m))
	doc, err := os.ReadFile("../docs/sandbox.md")
	if os.IsNotExist(err) {
		t.Skip("docs/ is not beside this module")
	}
	assert.NilError(t, err)
	_, section, ok := strings.Cut(string(doc), "### `--json`")
	assert.Assert(t, ok, "docs/sandbox.md has no --json section")
	section, _, _ = strings.Cut(section, "\n#")
	var want []string
	for k, v := range m {
		want = append(want, k)
		if sub, ok := v.(map[string]any); ok {
			for kk := range sub {
				want = append(want, k+"."+kk)
			}
		}
		if arr, ok := v.([]any); ok {
			for kk := range arr[0].(map[string]any) {
				want = append(want, k+"[]."+kk)
			}
		}
	}
	slices.Sort(want)
	var got []string
	for _, line := range strings.Split(section, "\n") {
		if f, ok := strings.CutPrefix(line, "| `"); ok {
			name, _, _ := strings.Cut(f, "`")
			got = append(got, name)
		}
	}
	slices.Sort(got)
	assert.DeepEqual(t, got, want)
	assert.Check(t, is.Contains(section, "`version` is "+strconv.Itoa(probeVersion)))
}
