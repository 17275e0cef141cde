package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern"
)

// outsideTmp returns a fresh directory outside /tmp, which the sandbox
// replaces with its own: a settings file's deny over a workspace root's
// parent, or a mask, needs one the sandbox sees. Every identity reaches it.
func outsideTmp(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("/var/tmp", "mitrity-narrow-")
	assert.NilError(t, err)
	t.Cleanup(func() { os.RemoveAll(d) })
	assert.NilError(t, os.Chmod(d, 0o755))
	d, err = filepath.EvalSymlinks(d)
	assert.NilError(t, err)
	return d
}

func write(t *testing.T, path, data string) {
	t.Helper()
	assert.NilError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	assert.NilError(t, os.WriteFile(path, []byte(data), 0o644))
}

func readHost(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	assert.NilError(t, err)
	return string(b)
}

// A settings file's denyRead hides files inside the workspace root and a
// whole region around it, which the root itself stays reachable inside;
// allowRead reveals a path in that region; denyWrite keeps a file
// read-only inside the writable root. The host is checked afterwards.
func TestRunNarrowingReadsAndWrites(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	base := outsideTmp(t)
	ws := filepath.Join(base, "ws")
	write(t, filepath.Join(ws, "secrets", "key"), "SECRET-IN-ROOT\n")
	write(t, filepath.Join(ws, ".env"), "TOKEN=host\n")
	write(t, filepath.Join(ws, "src", "main.go"), "package main\n")
	write(t, filepath.Join(base, "other", "secret.txt"), "SECRET-BESIDE\n")
	write(t, filepath.Join(base, "shared", "readme"), "shared\n")
	s := shellSpec(ws, strings.Join([]string{
		`cat secrets/key 2>/dev/null && echo LEAK-secrets-key`,
		`ls secrets 2>/dev/null && echo LEAK-secrets-listed`,
		`cat ` + base + `/other/secret.txt 2>/dev/null && echo LEAK-beside`,
		`ls ` + base + ` 2>/dev/null && echo LEAK-listed`,
		`cat ` + base + `/shared/readme`,
		`cat src/main.go`,
		`echo NEW > .env 2>/dev/null && echo WROTE-env`,
		`echo made > made.txt && echo wrote-made`,
		`touch ` + base + `/planted 2>/dev/null && echo WROTE-base`,
		`touch ` + base + `/shared/planted 2>/dev/null && echo WROTE-shared`,
		`cat .env`,
	}, "\n"))
	s.Narrowing = &Narrowing{
		DenyRead:  []string{base, "secrets"},
		AllowRead: []string{base + "/shared"},
		DenyWrite: []string{".env"},
	}
	r := runIn(t, context.Background(), s)
	assert.Check(t, is.Equal(r.Status, govern.StatusCompleted), r.Message)
	assert.Check(t, is.Equal(r.stdout, "shared\npackage main\nwrote-made\nTOKEN=host\n"), "stderr: %s", r.stderr)
	assert.Check(t, is.Equal(r.SandboxMode, govern.SandboxBubblewrap))
	// The host: nothing changed but the one file the command may write.
	assert.Check(t, is.Equal(readHost(t, filepath.Join(ws, ".env")), "TOKEN=host\n"))
	assert.Check(t, is.Equal(readHost(t, filepath.Join(ws, "made.txt")), "made\n"))
	for _, p := range []string{base + "/planted", base + "/shared/planted"} {
		_, err := os.Lstat(p)
		assert.Check(t, os.IsNotExist(err), p)
	}
}

// allowWrite intersects the workspace roots: only the listed part stays
// writable, and a path it names outside every root stays read-only (the
// settings file cannot widen the sandbox).
func TestRunNarrowingAllowWrite(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	base := outsideTmp(t)
	ws := filepath.Join(base, "ws")
	assert.NilError(t, os.MkdirAll(filepath.Join(ws, "out"), 0o755))
	outside := filepath.Join(base, "outside")
	assert.NilError(t, os.MkdirAll(outside, 0o755))
	s := shellSpec(ws, strings.Join([]string{
		`echo x > top.txt 2>/dev/null && echo WROTE-top`,
		`echo x > out/ok.txt && echo wrote-out`,
		`echo x > ` + outside + `/planted 2>/dev/null && echo WROTE-outside`,
		`echo x > /etc/mitrity-planted 2>/dev/null && echo WROTE-etc`,
	}, "\n"))
	s.Narrowing = &Narrowing{LimitWrite: true, AllowWrite: []string{"out", outside, "/etc"}}
	r := runIn(t, context.Background(), s)
	assert.Check(t, is.Equal(r.Status, govern.StatusCompleted), r.Message)
	assert.Check(t, is.Equal(r.stdout, "wrote-out\n"), "stderr: %s", r.stderr)
	assert.Check(t, is.Contains(r.Message, "settings allowWrite "+outside+" is outside every workspace root: ignored"))
	for _, p := range []string{filepath.Join(ws, "top.txt"), filepath.Join(outside, "planted"), "/etc/mitrity-planted"} {
		_, err := os.Lstat(p)
		assert.Check(t, os.IsNotExist(err), p)
	}
	assert.Check(t, is.Equal(readHost(t, filepath.Join(ws, "out", "ok.txt")), "x\n"))
}

// allowRead cannot reveal what the sandbox itself masks: the credential
// files of a home, the spec's deny paths.
func TestRunNarrowingCannotWiden(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	base := outsideTmp(t)
	ws := filepath.Join(base, "ws")
	assert.NilError(t, os.MkdirAll(ws, 0o755))
	home := filepath.Join(base, "home", "victim")
	write(t, filepath.Join(home, ".ssh", "id_ed25519"), "PRIVATE-KEY\n")
	write(t, filepath.Join(base, "gateway.yaml"), "GATEWAY-CONFIG\n")
	write(t, filepath.Join(home, "notes"), "notes\n")
	s := shellSpec(ws, strings.Join([]string{
		`cat ` + home + `/.ssh/id_ed25519 2>/dev/null && echo LEAK-ssh`,
		`cat ` + base + `/gateway.yaml 2>/dev/null && echo LEAK-config`,
		`cat ` + home + `/notes`,
	}, "\n"))
	s.DenyHomes = []string{home}
	s.DenyPaths = []string{filepath.Join(base, "gateway.yaml")}
	s.Narrowing = &Narrowing{
		DenyRead:  []string{filepath.Join(base, "home")},
		AllowRead: []string{home, filepath.Join(home, ".ssh"), filepath.Join(base, "gateway.yaml")},
	}
	r := runIn(t, context.Background(), s)
	assert.Check(t, is.Equal(r.Status, govern.StatusCompleted), r.Message)
	assert.Check(t, is.Equal(r.stdout, "notes\n"), "stderr: %s", r.stderr)
}

// A working directory the settings file denies runs nothing, and says why;
// a pinned script inside a denied region is not bound there.
func TestRunNarrowingRefusals(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	base := outsideTmp(t)
	ws := filepath.Join(base, "ws")
	assert.NilError(t, os.MkdirAll(filepath.Join(ws, "secrets"), 0o755))
	s := shellSpec(ws, `touch ran`)
	s.Cwd = filepath.Join(ws, "secrets")
	s.Narrowing = &Narrowing{DenyRead: []string{"secrets"}}
	r := runIn(t, context.Background(), s)
	assert.Check(t, is.Equal(r.Status, govern.StatusFailedToStart))
	assert.Check(t, is.Contains(r.Message, "settings_file denies reading it"))
	_, err := os.Lstat(filepath.Join(ws, "secrets", "ran"))
	assert.Check(t, os.IsNotExist(err))

	script := filepath.Join(base, "tools", "deploy.sh")
	judged := []byte("echo JUDGED\n")
	write(t, script, string(judged))
	assert.NilError(t, os.Chmod(script, 0o755))
	sum := sha256.Sum256(judged)
	s = shellSpec(ws, `bash `+script+` 2>/dev/null || echo HIDDEN`)
	s.Pins = []govern.Pin{{Path: script, RealPath: script, SHA256: hex.EncodeToString(sum[:]), Bytes: judged}}
	s.Narrowing = &Narrowing{DenyRead: []string{base}}
	r = runIn(t, context.Background(), s)
	assert.Check(t, is.Equal(r.Status, govern.StatusCompleted), r.Message)
	assert.Check(t, is.Equal(r.stdout, "HIDDEN\n"))
	assert.Check(t, is.Contains(r.Message, "inside a path the settings file denies reading: not bound"))

	s = shellSpec(ws, `true`)
	s.Narrowing = &Narrowing{DenyRead: []string{"~/.cache"}}
	s.RunAs = nil
	r = runIn(t, context.Background(), s)
	assert.Check(t, is.Equal(r.Status, govern.StatusCompleted), r.Message)
}
