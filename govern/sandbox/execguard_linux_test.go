package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/secretscan"
)

const guardToken = "ghp_guardTokenValue0123456789abcdefXYZ"

// A run that carries a credential: every program start whose command line
// holds it (raw or encoded, in any argument, from bash or from code the
// analyzer never sees) is refused with EPERM; the rest run.
func TestExecGuard(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	s := shellSpec(workspace(t), `
/bin/echo "$T" && echo echo-ran; echo "rc-echo=$?"
env X=1 /bin/true "prefix-$T-suffix"; echo "rc-env=$?"
/bin/true "$(printf %s "$T" | base64 -w0)"; echo "rc-b64=$?"
python3 -c 'import os, subprocess
try:
    subprocess.run(["/bin/true", "x", os.environ["T"]]); print("py-ran")
except PermissionError as e:
    print("py-refused", e.errno)'
/bin/echo fine; echo "rc-fine=$?"
T2=$T /usr/bin/printenv T2 | wc -c`)
	s.Env = append(s.Env, "T="+guardToken)
	s.Credentials = []secretscan.Secret{{ID: "gh", Value: guardToken}}
	r := runIn(t, context.Background(), s)
	assert.Check(t, is.Equal(r.Status, govern.StatusCompleted), r.Message)
	for _, want := range []string{"rc-echo=126", "rc-env=126", "rc-b64=126", "py-refused 1", "fine\nrc-fine=0", "\n" + "39\n"} {
		assert.Check(t, is.Contains(r.stdout, want), r.stdout+r.stderr)
	}
	assert.Check(t, !strings.Contains(r.stdout, "echo-ran") && !strings.Contains(r.stdout, "py-ran"), r.stdout)
	assert.Check(t, !strings.Contains(r.stdout, guardToken), "the value reached the output through a command line")
	progs := map[string]int{}
	for _, a := range r.ArgvRefused {
		progs[a.Program]++
		assert.Check(t, is.Equal(a.Credential, "gh"))
	}
	assert.Check(t, is.DeepEqual(progs, map[string]int{"/bin/echo": 1, "/usr/bin/env": 1, "/bin/true": 2}), "%+v", r.ArgvRefused)
	for _, a := range r.ArgvRefused {
		if a.Program == "/usr/bin/env" {
			assert.Check(t, is.Equal(a.Argument, 3))
		}
	}
	assert.Check(t, is.Contains(r.Message, "refused 4 program start(s)"))
}

// A run without credentials installs no guard.
func TestExecGuardOnlyWithCredentials(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	s := shellSpec(workspace(t), `grep -c . /proc/self/status >/dev/null; awk '/^Seccomp_filters/ {print $2}' /proc/self/status`)
	r := runIn(t, context.Background(), s)
	assert.Check(t, is.Equal(r.Status, govern.StatusCompleted), r.Message)
	without := strings.TrimSpace(r.stdout)
	s.Credentials = []secretscan.Secret{{ID: "gh", Value: guardToken}}
	r = runIn(t, context.Background(), s)
	assert.Check(t, is.Equal(r.Status, govern.StatusCompleted), r.Message)
	with := strings.TrimSpace(r.stdout)
	assert.Check(t, without != "" && with != without, "filters without a credential %q, with %q", without, with)
}

// A run that carries a credential and writes it into the workspace (raw,
// or base64 in a subdirectory) is reported with those files; a file that
// held it before the run is not the run's doing.
func TestCredentialWritten(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	ws := workspace(t)
	assert.NilError(t, os.WriteFile(filepath.Join(ws, "before.txt"), []byte(guardToken), 0o644))
	time.Sleep(20 * time.Millisecond)
	s := shellSpec(ws, `printf 'token=%s\n' "$T" > leak.txt; mkdir -p sub; printf %s "$T" | base64 > sub/b64.txt; echo clean > other.txt`)
	s.Env = append(s.Env, "T="+guardToken)
	s.Credentials = []secretscan.Secret{{ID: "gh", Value: guardToken}}
	r := runIn(t, context.Background(), s)
	assert.Check(t, is.Equal(r.Status, govern.StatusCompleted), r.Message)
	assert.Check(t, is.DeepEqual(r.CredentialWritten, []WrittenCredential{
		{Path: filepath.Join(ws, "leak.txt"), Credential: "gh"},
		{Path: filepath.Join(ws, "sub", "b64.txt"), Credential: "gh"},
	}))
}
