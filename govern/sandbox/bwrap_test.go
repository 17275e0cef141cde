package sandbox

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestParseVersion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want Version
		err  bool
	}{
		{"bubblewrap 0.8.0\n", Version{0, 8, 0}, false},
		{"0.11.1", Version{0, 11, 1}, false},
		{"bubblewrap 0.6", Version{0, 6, 0}, false},
		{"bubblewrap 0.10.0-rc1", Version{0, 10, 0}, false},
		{"bubblewrap", Version{}, true},
		{"x.y.z", Version{}, true},
	} {
		got, err := ParseVersion(tc.in)
		if tc.err {
			assert.Check(t, err != nil, tc.in)
			continue
		}
		assert.NilError(t, err, tc.in)
		assert.Check(t, is.Equal(got, tc.want), tc.in)
	}
	assert.Check(t, Version{0, 8, 0}.AtLeast(MinVersion))
	assert.Check(t, !Version{0, 4, 9}.AtLeast(MinVersion))
	assert.Check(t, Version{1, 0, 0}.AtLeast(Version{0, 9, 9}))
	assert.Check(t, is.Equal(FeaturesOf(Version{0, 8, 0}), Features{TmpfsSize: true, DisableUserns: true, BindFD: true}))
	assert.Check(t, is.Equal(FeaturesOf(Version{0, 6, 1}), Features{}))
}

// base is the smallest layout: one root, bubblewrap 0.8.
func base() Layout {
	return Layout{
		Features:       FeaturesOf(Version{0, 8, 0}),
		DropCaps:       true,
		WorkspaceRoots: []string{"/w"},
		InitFD:         7,
		InitPath:       "/usr/bin/mitrity-sandboxinit",
		TmpfsBytes:     1 << 20,
		RunBytes:       4096,
		InfoFD:         6,
		SeccompFD:      -1,
		BlockFD:        -1,
		Cwd:            "/w/src",
	}
}

var prologue = []string{
	"--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
	"--disable-userns", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
	"--ro-bind", "/", "/", "--dev", "/dev",
	"--size", "1048576", "--perms", "1777", "--tmpfs", "/dev/shm", "--remount-ro", "/dev", "--proc", "/proc",
	"--ro-bind", "/proc/sys", "/proc/sys", "--ro-bind-try", "/proc/sysrq-trigger", "/proc/sysrq-trigger",
	"--size", "1048576", "--perms", "1777", "--tmpfs", "/tmp",
	"--size", "4096", "--perms", "0755", "--tmpfs", "/run",
	"--perms", "0755", "--dir", "/run/mitrity", "--ro-bind-fd", "7", "/run/mitrity/init",
}

func join(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestBuildArgs(t *testing.T) {
	t.Parallel()
	tail := []string{"--info-fd", "6", "--chdir", "/w/src", "--", "/run/mitrity/init"}
	for _, tc := range []struct {
		name   string
		layout func(*Layout)
		want   []string
	}{
		{"minimal", func(*Layout) {}, join(prologue, []string{"--remount-ro", "/run", "--bind", "/w", "/w"}, tail)},
		{
			"everything",
			func(l *Layout) {
				l.WorkspaceRoots = []string{"/w", "/data"}
				l.SeccompFD = 12
				l.CredFiles = []FDMount{{Path: "gh", FD: 9}, {Path: "kube", FD: 10}}
				l.Protected = []string{"/w/.git/hooks", "/w/.bashrc"}
				l.Pins = []FDMount{{Path: "/w/deploy.sh", FD: 8, Perm: 0o555}}
				l.Masks = []Mask{{Path: "/root/.ssh", Dir: true}, {Path: "/home/u/.netrc"}}
				l.BlockFD = 11
			},
			join(prologue, []string{
				"--perms", "0700", "--dir", "/run/mitrity/credentials",
				"--perms", "0400", "--file", "9", "/run/mitrity/credentials/gh",
				"--perms", "0400", "--file", "10", "/run/mitrity/credentials/kube",
				"--remount-ro", "/run",
				"--bind", "/w", "/w", "--bind", "/data", "/data",
				"--ro-bind", "/w/.git/hooks", "/w/.git/hooks", "--ro-bind", "/w/.bashrc", "/w/.bashrc",
				"--perms", "0555", "--ro-bind-data", "8", "/w/deploy.sh",
				"--size", "4096", "--perms", "0000", "--tmpfs", "/root/.ssh", "--remount-ro", "/root/.ssh",
				"--ro-bind", "/dev/null", "/home/u/.netrc",
				"--seccomp", "12", "--block-fd", "11",
			}, tail),
		},
		{
			"settings file: covers first, read-only roots, writable parts, covers read-only last",
			func(l *Layout) {
				l.WorkspaceRoots = []string{"/home/u/a"}
				l.ReadOnlyRoots = []string{"/home/u/b"}
				l.WriteBinds = []string{"/home/u/b/out"}
				l.Covers = []CoverOp{{Path: "/home"}, {Path: "/home/shared", Reveal: true}}
				l.Protected = []string{"/home/u/a/.env"}
				l.Masks = []Mask{{Path: "/home/u/a/secrets", Dir: true}}
			},
			join(prologue, []string{
				"--remount-ro", "/run",
				"--size", "4096", "--perms", "0111", "--tmpfs", "/home", "--ro-bind-try", "/home/shared", "/home/shared",
				"--bind", "/home/u/a", "/home/u/a", "--ro-bind", "/home/u/b", "/home/u/b", "--bind", "/home/u/b/out", "/home/u/b/out",
				"--ro-bind", "/home/u/a/.env", "/home/u/a/.env",
				"--size", "4096", "--perms", "0000", "--tmpfs", "/home/u/a/secrets", "--remount-ro", "/home/u/a/secrets",
				"--remount-ro", "/home",
			}, tail),
		},
		{
			"masked files hidden through their directory: a cover with its mode, the other entries put back, a symlink re-made; a masked directory holding a root shows the path to it",
			func(l *Layout) {
				l.WorkspaceRoots = []string{"/srv/gw/ws"}
				l.Cwd = "/srv/gw/ws"
				l.Covers = []CoverOp{
					{Path: "/home/u", Perms: 0o750, Size: 8192},
					{Path: "/srv/gw", Perms: 0o555},
					{Path: "/home/u/.bashrc", Reveal: true},
					{Path: "/home/u/.profile", Link: ".config/profile"},
				}
				l.Masks = []Mask{{Path: "/home/u/.local/share/keyrings", Dir: true}}
			},
			join(prologue, []string{
				"--remount-ro", "/run",
				"--size", "8192", "--perms", "0750", "--tmpfs", "/home/u",
				"--size", "4096", "--perms", "0555", "--tmpfs", "/srv/gw",
				"--ro-bind-try", "/home/u/.bashrc", "/home/u/.bashrc",
				"--symlink", ".config/profile", "/home/u/.profile",
				"--bind", "/srv/gw/ws", "/srv/gw/ws",
				"--size", "4096", "--perms", "0000", "--tmpfs", "/home/u/.local/share/keyrings", "--remount-ro", "/home/u/.local/share/keyrings",
				"--remount-ro", "/home/u", "--remount-ro", "/srv/gw",
				"--info-fd", "6", "--chdir", "/srv/gw/ws", "--", "/run/mitrity/init",
			}),
		},
		{
			"bubblewrap 0.6: no sizes, no --disable-userns, init by path (the helper's subcommand), uid kept",
			func(l *Layout) {
				l.Features = FeaturesOf(Version{0, 6, 1})
				l.InitPath, l.InitArgs = "/usr/bin/mitrity-sandboxrun", []string{"init"}
				l.DropCaps = false
				l.Masks = []Mask{{Path: "/root/.aws", Dir: true}}
			},
			join([]string{
				"--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
				"--die-with-parent", "--new-session",
				"--ro-bind", "/", "/", "--dev", "/dev",
				"--tmpfs", "/dev/shm", "--remount-ro", "/dev", "--proc", "/proc",
				"--ro-bind", "/proc/sys", "/proc/sys", "--ro-bind-try", "/proc/sysrq-trigger", "/proc/sysrq-trigger",
				"--tmpfs", "/tmp", "--tmpfs", "/run",
				"--perms", "0755", "--dir", "/run/mitrity", "--ro-bind", "/usr/bin/mitrity-sandboxrun", "/run/mitrity/init",
				"--remount-ro", "/run", "--bind", "/w", "/w",
				"--tmpfs", "/root/.aws", "--remount-ro", "/root/.aws",
			}, tail, []string{"init"}),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := base()
			tc.layout(&l)
			if d := cmp.Diff(tc.want, BuildArgs(l)); d != "" {
				t.Errorf("BuildArgs (-want +got):\n%s", d)
			}
		})
	}
}

// Order is the security property: masks come after every bind, so a deny
// path inside a workspace root (or a pin) stays masked.
func TestBuildArgsMasksLast(t *testing.T) {
	t.Parallel()
	l := base()
	l.WorkspaceRoots = []string{"/home/u"}
	l.Pins = []FDMount{{Path: "/home/u/.ssh/x.sh", FD: 8}}
	l.Masks = []Mask{{Path: "/home/u/.ssh", Dir: true}}
	args := strings.Join(BuildArgs(l), " ")
	bind := strings.Index(args, "--bind /home/u /home/u")
	pin := strings.Index(args, "--ro-bind-data 8")
	mask := strings.Index(args, "--tmpfs /home/u/.ssh")
	assert.Check(t, bind >= 0 && pin > bind && mask > pin, args)
}
