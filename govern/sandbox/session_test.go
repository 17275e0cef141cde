package sandbox

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// A session's command line: no host root, its mounts (parents first) where
// the host root was, sealed directories read-only after them, what sits in
// /tmp or /run once those exist and before /run is sealed; the rest as for
// a command. KeepSession drops --new-session.
func TestBuildArgsSession(t *testing.T) {
	t.Parallel()
	l := base()
	l.Session = &SessionLayout{
		Mounts: []SessionMount{
			{Path: "/usr", Source: "/usr"},
			{Path: "/bin", Link: "usr/bin"},
			{Path: "/etc", Tmpfs: 0o755},
			{Path: "/home/u", Tmpfs: 0o700},
			{Path: "/etc/passwd", Source: "/etc/passwd"},
			{Path: "/etc/claude-code/managed-settings.json", DataFD: 9, Perm: 0o444},
			{Path: "/home/u/.claude", Source: "/data/claude", Writable: true},
			{Path: "/tmp/ci/node_modules", Source: "/tmp/ci/node_modules"},
			{Path: "/run/mitrity/admission.sock", BindFD: 10},
		},
		Sealed:      []string{"/etc"},
		KeepSession: true,
	}
	want := join([]string{
		"--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--disable-userns", "--die-with-parent", "--cap-drop", "ALL",
		"--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin",
		"--perms", "0755", "--tmpfs", "/etc", "--perms", "0700", "--tmpfs", "/home/u",
		"--ro-bind", "/etc/passwd", "/etc/passwd",
		"--perms", "0444", "--ro-bind-data", "9", "/etc/claude-code/managed-settings.json",
		"--bind", "/data/claude", "/home/u/.claude",
		"--remount-ro", "/etc",
	}, prologue[14:], []string{
		"--ro-bind", "/tmp/ci/node_modules", "/tmp/ci/node_modules",
		"--ro-bind-fd", "10", "/run/mitrity/admission.sock",
		"--remount-ro", "/run", "--bind", "/w", "/w",
		"--info-fd", "6", "--chdir", "/w/src", "--", "/run/mitrity/init",
	})
	if d := cmp.Diff(want, BuildArgs(l)); d != "" {
		t.Errorf("BuildArgs (-want +got):\n%s", d)
	}
	l.Session.KeepSession = false
	assert.Check(t, is.Contains(BuildArgs(l), "--new-session"))
	l.Session.RootInside = true
	assert.Check(t, strings.Contains(strings.Join(BuildArgs(l), " "), "--disable-userns --uid 0 --gid 0 --die-with-parent"))
	l.Session = nil
	assert.Check(t, strings.Contains(strings.Join(BuildArgs(l), " "), "--ro-bind / / --dev /dev"), "a command's base is unchanged")
}

func TestSessionValidate(t *testing.T) {
	t.Parallel()
	ok := func() *Spec {
		return &Spec{Argv: []string{"/bin/true"}, Cwd: "/w", WorkspaceRoots: []string{"/w"},
			Session: &Session{ReadOnly: []string{"/usr"}, Private: []string{"/home/u"}, Sealed: []string{"/etc"}}}
	}
	assert.NilError(t, ok().Validate(), "a session needs no timeout")
	for _, tc := range []struct {
		name   string
		change func(*Spec)
		want   string
	}{
		{"a command still needs one", func(s *Spec) { s.Session = nil }, "timeout_ms: 0"},
		{"relative path", func(s *Spec) { s.Session.ReadOnly = []string{"usr"} }, "session.read_only[0]"},
		{"the whole host", func(s *Spec) { s.Session.StateDirs = []string{"/"} }, "session.state_dirs[0]: / is the whole host"},
		{"/proc is the sandbox's", func(s *Spec) { s.Session.Private = []string{"/proc/x"} }, "session.private[0]"},
		{"sealed under /tmp", func(s *Spec) { s.Session.Sealed = []string{"/tmp/e"} }, "session.sealed[0]"},
		{"writable data", func(s *Spec) { s.Session.Files = []DataFile{{Path: "/etc/x", Perm: 0o644}} }, "read-only"},
		{"init's path", func(s *Spec) { s.Session.Binds = []FileBind{{Source: "/x", Path: InsideInit}} }, "the sandbox's own"},
		{"no credentials", func(s *Spec) { s.CredFiles = map[string]string{"a": "b"} }, "no pins, credentials"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := ok()
			tc.change(s)
			assert.ErrorContains(t, s.Validate(), tc.want)
		})
	}
}

// helperSessionDial is the test binary's mode that connects to the Unix
// socket named by its argument and prints the first line it reads: the
// client a session's sandbox runs to show that AF_UNIX is open to it.
const helperSessionDial = "session-dial"

func sessionDialChild() {
	c, err := net.Dial("unix", os.Args[2])
	if err != nil {
		fmt.Println("dial=" + err.Error())
		os.Exit(0)
	}
	line, _ := bufio.NewReader(c).ReadString('\n')
	fmt.Print("dial=" + line)
	os.Exit(0)
}
