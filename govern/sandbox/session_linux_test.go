package sandbox

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/peer"
)

// sessionWorld is a home with deny-set entries, a file outside every path
// the session shows, a host Unix socket, and the session that shows part
// of it.
type sessionWorld struct {
	base, ws, home, outside string
	spec                    *Spec
}

func newSessionWorld(t *testing.T, id identity, script string) *sessionWorld {
	t.Helper()
	base := outsideTmp(t)
	w := &sessionWorld{base: base, ws: filepath.Join(base, "ws"), home: filepath.Join(base, "home"), outside: filepath.Join(base, "outside.txt")}
	assert.NilError(t, os.Mkdir(w.ws, 0o777))
	assert.NilError(t, os.Chmod(w.ws, 0o777))
	write(t, w.outside, "SECRET-outside\n")
	write(t, filepath.Join(w.home, ".ssh", "id_rsa"), "SECRET-ssh\n")
	write(t, filepath.Join(w.home, ".aws", "credentials"), "SECRET-aws\n")
	write(t, filepath.Join(w.home, ".claude", "creds"), "CLAUDE-OWN-STATE\n")
	write(t, filepath.Join(base, "tool"), "TOOL-BYTES\n")
	chownTree(t, w.home, id.uid, id.gid)
	sock := filepath.Join(base, "s.sock")
	ln, err := net.Listen("unix", sock)
	assert.NilError(t, err)
	t.Cleanup(func() { ln.Close() })
	assert.NilError(t, os.Chmod(sock, 0o777))
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			fmt.Fprintln(c, "HELLO-FROM-HOST")
			c.Close()
		}
	}()
	s := shellSpec(w.ws, script)
	s.TimeoutMS = 0
	s.DenyHomes = []string{w.home}
	s.Env = append(s.Env, "HOME="+w.home)
	bin := selfExe(t)
	if id.runAs != nil || id.child {
		bin = testUsers.bin
	}
	s.Session = &Session{
		ReadOnly: []string{"/usr", "/bin", "/lib", "/lib64", "/sbin", "/etc/passwd", "/etc/group", "/etc/ld.so.cache",
			filepath.Join(w.home, ".aws")},
		Private:    []string{w.home},
		Sealed:     []string{"/etc"},
		StateDirs:  []string{filepath.Join(w.home, ".claude")},
		StateFiles: []StateFile{{Path: filepath.Join(w.home, ".claude.json"), Init: []byte("{}")}},
		Files:      []DataFile{{Path: "/etc/fw/managed.json", Data: []byte(`{"managed":true}`)}},
		Binds: []FileBind{{Source: filepath.Join(base, "tool"), Path: "/run/mitrity/bin/tool"},
			{Source: bin, Path: "/run/mitrity/bin/dial"}, {Source: sock, Path: "/run/mitrity/test.sock"}},
	}
	w.spec = s
	return w
}

func chownTree(t *testing.T, root string, uid, gid int) {
	t.Helper()
	if os.Geteuid() != 0 {
		return
	}
	assert.NilError(t, filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	}))
}

// A session's sandbox shows what it names and nothing else of the host
// (the control: the same read as a governed command, whose base is the
// host read-only, succeeds); the deny set stays masked where it is
// visible, but for the program's own state; state persists on the host,
// the home and /etc do not; data files and binds are in place, read-only;
// AF_UNIX reaches a bound host socket; there is no timeout.
func TestSessionPosture(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	script := strings.Join([]string{
		`cat "$OUTSIDE" 2>/dev/null || echo outside=denied`,
		`test -e /etc/shadow && echo shadow=visible || echo shadow=absent`,
		`echo "etc=$(ls /etc | tr '\n' ' ')"`,
		`cat "$HOME/.aws/credentials" 2>/dev/null || echo aws=masked`,
		`cat "$HOME/.ssh/id_rsa" 2>/dev/null || echo ssh=absent`,
		`cat "$HOME/.claude/creds"`,
		`echo new > "$HOME/.claude/written" && echo state=written`,
		`echo junk > "$HOME/junk" && echo home=writable`,
		`cat /etc/fw/managed.json; echo`,
		`(echo x > /etc/fw/managed.json) 2>/dev/null && echo managed=WRITABLE || echo managed=readonly`,
		`touch /etc/new 2>/dev/null && echo etc=WRITABLE || echo etc=sealed`,
		`cat /run/mitrity/bin/tool`,
		`/run/mitrity/bin/dial ` + helperSessionDial + ` /run/mitrity/test.sock`,
		`cat "$HOME/.claude.json"; echo`,
		`sleep 0.3; echo done`,
	}, "\n")
	eachIdentity(t, func(t *testing.T, id identity) {
		w := newSessionWorld(t, id, script)
		w.spec.Env = append(w.spec.Env, "OUTSIDE="+w.outside)
		r := id.run(t, w.spec)
		assert.Check(t, is.Equal(r.Status, govern.StatusCompleted), "%s\n%s", r.Message, r.stderr)
		assert.Check(t, is.Equal(r.SandboxMode, govern.SandboxBubblewrap))
		want := strings.Join([]string{
			"outside=denied", "shadow=absent", "etc=fw group ld.so.cache passwd ", "aws=masked", "ssh=absent",
			"CLAUDE-OWN-STATE", "state=written", "home=writable", `{"managed":true}`, "managed=readonly", "etc=sealed",
			"TOOL-BYTES", "dial=HELLO-FROM-HOST", "{}", "done", "",
		}, "\n")
		assert.Check(t, is.Equal(r.stdout, want), "stderr: %s", r.stderr)
		assert.Check(t, !strings.Contains(r.stdout+r.stderr, "SECRET"))
		// The host afterwards: state kept, the private home and /etc gone.
		assert.Check(t, is.Equal(readHost(t, filepath.Join(w.home, ".claude", "written")), "new\n"))
		assert.Check(t, is.Equal(readHost(t, filepath.Join(w.home, ".claude.json")), "{}"))
		_, err := os.Stat(filepath.Join(w.home, "junk"))
		assert.Check(t, os.IsNotExist(err), "a write to the private home reached the host")
		_, err = os.Stat("/etc/new")
		assert.Check(t, os.IsNotExist(err))
		_, err = os.Stat("/etc/fw")
		assert.Check(t, os.IsNotExist(err), "a session's data file made a path on the host")

		// The control: a governed command (the host read-only) reads the
		// file the session hid.
		c := shellSpec(w.ws, `cat "$OUTSIDE"`)
		c.Env = append(c.Env, "OUTSIDE="+w.outside)
		cr := id.run(t, c)
		assert.Check(t, is.Equal(cr.Status, govern.StatusCompleted), cr.Message)
		assert.Check(t, is.Equal(cr.stdout, "SECRET-outside\n"), "the control read nothing: the test shows nothing")
	})
}

// TTY keeps the caller's session when the filter is in force: the
// program's session leader is then outside its pid namespace (0 in its
// /proc/self/stat), where a new session would make it its own.
func TestSessionKeepsTerminalSession(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	for _, tc := range []struct {
		name    string
		tty     bool
		seccomp SeccompMode
		want    string
	}{
		{"tty with the filter: the caller's session", true, SeccompRequired, "sid=0\n"},
		{"no tty: a new session", false, SeccompRequired, "sid=1\n"},
		{"tty without the filter: a new session", true, SeccompOff, "sid=1\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ws := workspace(t)
			s := shellSpec(ws, `read -r -a f < /proc/self/stat; echo "sid=${f[5]}"`)
			s.Seccomp = tc.seccomp
			s.Session = &Session{ReadOnly: []string{"/usr", "/bin", "/lib", "/lib64"}, TTY: tc.tty}
			r := runIn(t, t.Context(), s)
			assert.Check(t, is.Equal(r.Status, govern.StatusCompleted), r.Message)
			assert.Check(t, is.Equal(r.stdout, tc.want), r.stderr)
		})
	}
}

// The live register tells a session's sandbox from a command's: the
// admission socket's check (NotInSandbox) refuses a command's processes,
// whose uid is the gateway's, and serves the agent's, whose hook and relay
// are its clients.
func TestSessionInLiveRegister(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	for _, tc := range []struct {
		name    string
		session bool
	}{{"a governed command: refused", false}, {"an agent session: served", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ws := workspace(t)
			s := shellSpec(ws, `stat -L -c %i /proc/self/ns/pid > ns.tmp && mv ns.tmp ns; sleep 2`)
			if tc.session {
				s.Session = &Session{ReadOnly: []string{"/usr", "/bin", "/lib", "/lib64"}}
			}
			done := make(chan runOut, 1)
			go func() { done <- runIn(t, context.Background(), s) }()
			var ns uint64
			for deadline := time.Now().Add(10 * time.Second); ns == 0; time.Sleep(20 * time.Millisecond) {
				if b, err := os.ReadFile(filepath.Join(ws, "ns")); err == nil {
					ns, _ = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
				}
				assert.Assert(t, time.Now().Before(deadline), "the run never wrote its pid namespace")
			}
			inside := InLiveSandbox(os.Geteuid(), ns)
			err := NotInSandbox(peer.Peer{PidNS: ns})
			r := <-done
			assert.Check(t, is.Equal(r.Status, govern.StatusCompleted), r.Message)
			assert.Check(t, is.Equal(inside, !tc.session))
			assert.Check(t, is.Equal(err == nil, tc.session), "%v", err)
		})
	}
}

// RootInside: the program is uid 0 of its own namespace, what the sandbox
// made (its /etc) is root's there, and on the host it is still the
// sandbox's user, with no capability: it writes what that user may and
// nothing more.
func TestSessionRootInside(t *testing.T) {
	requireSandbox(t)
	t.Parallel()
	eachIdentity(t, func(t *testing.T, id identity) {
		w := newSessionWorld(t, id, `id -u; stat -c %u /etc /etc/fw/managed.json; touch "$HOME/.claude/made"; grep CapEff /proc/self/status`)
		w.spec.Session.RootInside = true
		r := id.run(t, w.spec)
		assert.Check(t, is.Equal(r.Status, govern.StatusCompleted), "%s\n%s", r.Message, r.stderr)
		assert.Check(t, is.Equal(r.stdout, "0\n0\n0\nCapEff:\t0000000000000000\n"), r.stderr)
		fi, err := os.Stat(filepath.Join(w.home, ".claude", "made"))
		assert.NilError(t, err)
		want := id.uid
		if id.name == "root" {
			want = 0
		}
		assert.Check(t, is.Equal(int(fi.Sys().(*syscall.Stat_t).Uid), want), "the file belongs to the sandbox's user on the host")
	})
}
