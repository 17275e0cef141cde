package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestHomeDirs(t *testing.T) {
	t.Parallel()
	homeRoot := t.TempDir()
	for _, d := range []string{"alice", "bob"} {
		assert.NilError(t, os.Mkdir(filepath.Join(homeRoot, d), 0o755))
	}
	assert.NilError(t, os.WriteFile(filepath.Join(homeRoot, "not-a-dir"), nil, 0o644))
	passwd := strings.NewReader(strings.Join([]string{
		"root:x:0:0:root:/root:/bin/bash",
		"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin",
		"systemd-network:x:998:998::/:/usr/sbin/nologin",
		"postgres:x:101:104::/var/lib/postgresql:/bin/bash",
		"broken line",
		"rel:x:1:1::relative/home:/bin/sh",
	}, "\n"))
	got := HomeDirs(passwd, homeRoot, []string{"/srv/gateway/"})
	want := []string{filepath.Join(homeRoot, "alice"), filepath.Join(homeRoot, "bob"), "/root", "/srv/gateway", "/var/lib/postgresql"}
	slices.Sort(want)
	assert.Check(t, is.DeepEqual(got, want))
}

func TestDenyCandidates(t *testing.T) {
	t.Parallel()
	got := DenyCandidates([]string{"/root", "/home/u"}, []string{"/etc/mitrity/token"})
	for _, p := range []string{
		"/root/.ssh", "/root/.aws", "/root/.config/gcloud", "/root/.kube", "/root/.netrc", "/root/.claude",
		"/root/.docker", "/root/.git-credentials", "/root/.config/git/credentials", "/root/.pgpass", "/root/.vault-token",
		"/root/.azure", "/root/.cargo/credentials.toml", "/root/.terraform.d/credentials.tfrc.json", "/root/.local/share/keyrings",
		"/root/.bash_history", "/root/.config/hub", "/root/.m2/settings.xml", "/root/.gem/credentials", "/root/.gnupg", "/root/.config/gh",
		"/root/.npmrc", "/root/.pypirc", "/home/u/.ssh", "/home/u/.claude.json",
		"/run/secrets", "/var/run/secrets", "/etc/mitrity/token",
	} {
		assert.Check(t, slices.Contains(got, p), p)
	}
	assert.Check(t, slices.IsSorted(got))
	assert.Check(t, is.Len(got, 2*len(CredentialNames)+len(SystemDenyPaths)+1))
}

// Every entry of the two tables says why it is there, and none is listed
// twice.
func TestNamedTables(t *testing.T) {
	t.Parallel()
	for _, table := range [][]Named{DenySet, Protected} {
		seen := map[string]bool{}
		for _, n := range table {
			assert.Check(t, n.Reason != "", n.Name)
			assert.Check(t, !seen[n.Name], "%s twice", n.Name)
			assert.Check(t, n.Name == filepath.Clean(n.Name) && !filepath.IsAbs(n.Name), n.Name)
			seen[n.Name] = true
		}
	}
}

func TestResolveMasks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir() // under /tmp: hidden in the sandbox unless in a root
	home := filepath.Join(dir, "home")
	assert.NilError(t, os.MkdirAll(filepath.Join(home, ".ssh"), 0o700))
	assert.NilError(t, os.WriteFile(filepath.Join(home, ".netrc"), []byte("machine x"), 0o600))
	assert.NilError(t, os.MkdirAll(filepath.Join(dir, "real-aws"), 0o700))
	assert.NilError(t, os.Symlink(filepath.Join(dir, "real-aws"), filepath.Join(home, ".aws")))
	assert.NilError(t, os.Symlink(filepath.Join(dir, "gone"), filepath.Join(home, ".kube")))
	cands := DenyCandidates([]string{home}, nil)

	// The home is inside a workspace root: everything that exists is masked,
	// a symlink by its target, a dangling one not at all.
	got := ResolveMasks(cands, []string{dir})
	want := []Mask{
		{Path: filepath.Join(home, ".netrc")},
		{Path: filepath.Join(home, ".ssh"), Dir: true},
		{Path: filepath.Join(dir, "real-aws"), Dir: true},
	}
	sortMasks(got)
	sortMasks(want)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("masks (-want +got):\n%s", d)
	}
	for _, c := range cands {
		if _, err := os.Lstat(c); err != nil {
			_, err := os.Lstat(c)
			assert.Check(t, os.IsNotExist(err), "resolving created %s", c)
		}
	}

	// Outside every root, a path under /tmp is invisible in the sandbox
	// (fresh tmpfs): no mask needed.
	assert.Check(t, is.Len(ResolveMasks(cands, []string{"/nonexistent-root"}), 0))
	assert.Check(t, hiddenInSandbox("/run/secrets", nil))
	assert.Check(t, !hiddenInSandbox("/root/.ssh", nil))
	assert.Check(t, !hiddenInSandbox("/tmp/ws/.ssh", []string{"/tmp/ws"}))
	assert.Check(t, hiddenInSandbox("/tmpfoo/x", nil) == false)
}

func sortMasks(m []Mask) {
	slices.SortFunc(m, func(a, b Mask) int { return strings.Compare(a.Path, b.Path) })
}

// A deny path inside another masked directory is hidden by that mask:
// mounting one of its own inside the read-only cover would fail the run.
func TestResolveMasksNested(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	outer := filepath.Join(base, "rt")
	inner := filepath.Join(outer, "admin")
	assert.NilError(t, os.MkdirAll(inner, 0o700))
	got := ResolveMasks([]string{inner, outer}, []string{base}) // a root holds them: not hidden anyway
	assert.Check(t, is.DeepEqual(got, []Mask{{Path: outer, Dir: true}}))
}
