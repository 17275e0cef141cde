package ownfiles

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern/yamlfile"
)

// A host staged in a temporary directory: the tree below base, as root so
// that owners can be set. Euid and RunAs are the Placement's, so both
// identities are checked whoever runs the test.
func TestPlacement(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to stage files of other owners")
	}
	t.Parallel()
	base := t.TempDir()
	assert.NilError(t, os.Chmod(base, 0o755))
	const user, runAs = 4242, 4343
	mk := func(rel string, mode os.FileMode, uid, gid int, dir bool) string {
		p := filepath.Join(base, rel)
		if dir {
			assert.NilError(t, os.MkdirAll(p, 0o755))
		} else {
			assert.NilError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			assert.NilError(t, os.WriteFile(p, []byte("x"), 0o600))
		}
		if mode&0o1000 != 0 {
			mode = mode&0o777 | os.ModeSticky // os.Chmod reads the sticky bit from ModeSticky
		}
		assert.NilError(t, os.Chmod(p, mode))
		assert.NilError(t, os.Chown(p, uid, gid))
		return p
	}
	ws := mk("ws", 0o777, runAs, runAs, true)
	inWS := mk("ws/policy.yaml", 0o644, 0, 0, false)
	etc := mk("etc/mitrity/policy.yaml", 0o644, 0, 0, false)
	userDir := mk("home/u", 0o755, user, user, true)
	userFile := mk("home/u/policy.yaml", 0o600, user, user, false)
	groupW := mk("grp/policy.yaml", 0o664, 0, runAs, false)
	groupDir := mk("grpdir", 0o775, 0, runAs, true)
	inGroupDir := mk("grpdir/policy.yaml", 0o644, 0, 0, false)
	worldW := mk("world/policy.yaml", 0o646, 0, 0, false)
	mk("sticky", 0o1777, 0, 0, true)
	inSticky := mk("sticky/policy.yaml", 0o644, 0, 0, false)
	stickyOther := mk("sticky/other.yaml", 0o644, runAs, runAs, false)
	link := filepath.Join(ws, "link.yaml")
	assert.NilError(t, os.Symlink(etc, link)) // a symlink the run can re-point
	linkOut := filepath.Join(base, "etc", "mitrity", "to-ws.yaml")
	assert.NilError(t, os.Symlink(inWS, linkOut))
	bin := mk("ws/bin/mitrity-sandboxrun", 0o755, 0, 0, false)
	_ = userDir
	selfBin := mk("home/u/ws/bin/mitrity-sandboxrun", 0o755, user, user, false)

	root := Placement{Euid: 0, RunAs: &Identity{UID: runAs, GID: runAs}, WritableRoots: []string{ws}}
	self := Placement{Euid: user, WritableRoots: []string{ws}}
	for _, tc := range []struct {
		name string
		p    Placement
		f    File
		want string // "" or a fragment of the error
	}{
		{"root: /etc", root, File{Path: etc, Role: Configures}, ""},
		{"root: in the workspace", root, File{Path: inWS, Role: Configures}, "inside the workspace root " + ws},
		{"root: a symlink in the workspace", root, File{Path: link, Role: Configures}, "inside the workspace root"},
		{"root: a symlink into the workspace", root, File{Path: linkOut, Role: Configures}, "inside the workspace root"},
		{"root: a user's file", root, File{Path: userFile, Role: Configures}, "owned by uid 4242"},
		{"root: group-writable by the run group", root, File{Path: groupW, Role: Configures}, "writable by group 4343, the group commands run as"},
		{"root: in a directory the run group writes", root, File{Path: inGroupDir, Role: Configures}, groupDir + " is writable by group 4343"},
		{"root: world-writable", root, File{Path: worldW, Role: Configures}, "writable by every user"},
		{"root: root's file in a sticky directory", root, File{Path: inSticky, Role: Configures}, ""},
		{"root: the run user's file in a sticky directory", root, File{Path: stickyOther, Role: Configures}, "owned by uid 4343"},
		// A root gateway never starts a program a non-root user can replace
		// (in mode none the run user is on the host).
		{"root: a helper in the run user's workspace", root, File{Path: bin, Role: Executes}, ws + " is owned by uid 4343"},
		{"root: the run user's program", root, File{Path: stickyOther, Role: Executes}, "owned by uid 4343"},
		{"root: a directory it keeps is not checked", root, File{Path: ws, Role: Keeps}, ""},
		{"root: missing", root, File{Path: filepath.Join(base, "absent"), Role: Configures}, ""},
		{"self: its own file", self, File{Path: userFile, Role: Configures}, ""},
		{"self: in the workspace", self, File{Path: inWS, Role: Configures}, "inside the workspace root"},
		{"self: another user's file", self, File{Path: stickyOther, Role: Configures}, "owned by uid 4343"},
		{"self: world-writable", self, File{Path: worldW, Role: Configures}, "writable by every user"},
		// Kept read-only in every run instead: a checkout's bin/.
		{"self: a helper in the workspace", Placement{Euid: user, WritableRoots: []string{filepath.Join(base, "home/u/ws")}}, File{Path: selfBin, Role: Executes}, ""},
		{"self: group-writable is the user's own business", self, File{Path: groupW, Role: Configures}, ""},
	} {
		tc.f.Where = yamlfile.Loc{File: "cfg.yaml", Path: "policy", Line: 3, Col: 9}
		err := tc.p.Check(Set{tc.f})
		if tc.want == "" {
			assert.Check(t, err, tc.name)
			continue
		}
		if assert.Check(t, err != nil, tc.name) {
			assert.Check(t, is.Contains(err.Error(), tc.want), tc.name)
			assert.Check(t, strings.HasPrefix(err.Error(), "cfg.yaml:3:9: policy: "), "%s: %v", tc.name, err)
		}
	}
}

func TestSetPaths(t *testing.T) {
	t.Parallel()
	var s Set
	s.Add(File{Path: "/b", Role: Keeps}, File{Path: "", Role: Keeps}, File{Path: "/a/", Role: Configures},
		File{Path: "/b", Role: Configures}, File{Path: "rel", Role: Configures}, File{Path: "/x", Role: Executes})
	assert.DeepEqual(t, s.Paths(Configures, Keeps), []string{"/a", "/b"})
	assert.DeepEqual(t, s.Paths(Executes), []string{"/x"})
}
