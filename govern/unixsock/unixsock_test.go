package unixsock_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern/peer"
	"github.com/mitrity/mitrity/govern/unixsock"
)

// nobody is the uid (and gid) the root-only tests hand things to and run
// a client as.
const nobody = 65534

// When MITRITY_UNIXSOCK_PROBE names a socket, the test binary is a client
// (run as another user): it prints the HTTP status and body it got, or
// "error: " and the dial error.
func TestMain(m *testing.M) {
	if sock := os.Getenv("MITRITY_UNIXSOCK_PROBE"); sock != "" {
		resp, err := unixsock.Client(sock, 5*time.Second).Get("http://probe/")
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(0)
		}
		body, _ := io.ReadAll(resp.Body)
		fmt.Printf("%d %s", resp.StatusCode, body)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// requireRoot skips a test that needs root, unless GOVERN_REQUIRE_SANDBOX=1
// (make test, CI), where not being root fails it.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("GOVERN_REQUIRE_SANDBOX") == "1" {
		t.Fatal("GOVERN_REQUIRE_SANDBOX=1 and not running as root")
	}
	t.Skip("needs root")
}

// base is a fresh directory with a short path (a socket path has at most
// 107 bytes), traversable by every user.
func base(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "usk")
	assert.NilError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	assert.NilError(t, os.Chmod(dir, 0o755))
	return dir
}

// whoami answers with the peer's uid as the handler sees it.
var whoami = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	uid, ok := unixsock.PeerUID(r.Context())
	fmt.Fprintf(w, "uid=%d ok=%v", uid, ok)
})

func get(t *testing.T, sock string) (int, string) {
	t.Helper()
	resp, err := unixsock.Client(sock, 5*time.Second).Get("http://any-host-at-all/x")
	assert.NilError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	assert.NilError(t, err)
	return resp.StatusCode, string(b)
}

func listen(t *testing.T, sock string, h http.Handler, o unixsock.Options) *unixsock.Server {
	t.Helper()
	s, err := unixsock.Listen(sock, h, o)
	assert.NilError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// meta is what Listen must get right about a path.
type meta struct {
	Mode     fs.FileMode
	UID, GID int
}

func stat(t *testing.T, path string) meta {
	t.Helper()
	fi, err := os.Lstat(path)
	assert.NilError(t, err)
	st := fi.Sys().(*syscall.Stat_t)
	return meta{Mode: fi.Mode(), UID: int(st.Uid), GID: int(st.Gid)}
}

// TestListenCreates: a missing directory (and its missing parents) is
// created 0700, the socket 0600, both the server's.
func TestListenCreates(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(base(t), "a", "b")
	sock := filepath.Join(dir, "s.sock")
	s := listen(t, sock, whoami, unixsock.Options{})
	assert.Equal(t, s.Path(), sock)
	euid, egid := os.Geteuid(), os.Getegid()
	assert.DeepEqual(t, stat(t, dir), meta{Mode: fs.ModeDir | 0o700, UID: euid, GID: egid})
	assert.DeepEqual(t, stat(t, sock), meta{Mode: fs.ModeSocket | 0o600, UID: euid, GID: egid})
	status, body := get(t, sock)
	assert.Equal(t, status, 200)
	assert.Equal(t, body, fmt.Sprintf("uid=%d ok=true", euid))
}

// TestExistingDir: an existing directory is used as it is when it is the
// owner's and writable by no one else, and refused (and left untouched)
// otherwise.
func TestExistingDir(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		mode  fs.FileMode
		uid   int // -1: the server's own
		owner *unixsock.Owner
		root  bool
		want  string // "": accepted
	}{
		{name: "0700", mode: 0o700, uid: -1},
		{name: "0755", mode: 0o755, uid: -1},
		{name: "0711", mode: 0o711, uid: -1},
		{name: "group-writable", mode: 0o770, uid: -1, want: "writable by group or others (mode 770)"},
		{name: "other-writable", mode: 0o702, uid: -1, want: "writable by group or others (mode 702)"},
		{name: "world-writable", mode: 0o777, uid: -1, want: "writable by group or others (mode 777)"},
		{name: "sticky world-writable", mode: 0o777 | fs.ModeSticky, uid: -1, want: "writable by group or others"},
		{name: "another uid's", mode: 0o700, uid: nobody, root: true, want: "not owned by uid 0"},
		{name: "another uid's, 0755", mode: 0o755, uid: nobody, root: true, want: "not owned by uid 0"},
		// An existing directory is never handed over: with Owner set,
		// /run/x.sock must not give /run away.
		{name: "root's, Owner set", mode: 0o755, uid: 0, owner: &unixsock.Owner{UID: nobody, GID: nobody}, root: true, want: fmt.Sprintf("not owned by uid %d", nobody)},
		{name: "root's 0700, Owner set", mode: 0o700, uid: 0, owner: &unixsock.Owner{UID: nobody, GID: nobody}, root: true, want: fmt.Sprintf("not owned by uid %d", nobody)},
		{name: "sticky /tmp-like, Owner set", mode: 0o777 | fs.ModeSticky, uid: 0, owner: &unixsock.Owner{UID: nobody, GID: nobody}, root: true, want: "not owned by uid"},
		{name: "the owner's, Owner set", mode: 0o700, uid: nobody, owner: &unixsock.Owner{UID: nobody, GID: nobody}, root: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.root {
				requireRoot(t)
			}
			t.Parallel()
			dir := filepath.Join(base(t), "d")
			assert.NilError(t, os.Mkdir(dir, 0o700))
			assert.NilError(t, os.Chmod(dir, tc.mode))
			if tc.uid >= 0 {
				assert.NilError(t, os.Lchown(dir, tc.uid, tc.uid))
			}
			before := stat(t, dir)
			sock := filepath.Join(dir, "s.sock")
			s, err := unixsock.Listen(sock, whoami, unixsock.Options{Owner: tc.owner})
			if tc.want == "" {
				assert.NilError(t, err)
				defer s.Close()
				status, _ := get(t, sock)
				assert.Equal(t, status, 200)
			} else {
				assert.ErrorContains(t, err, tc.want)
				assert.ErrorContains(t, err, dir)
				_, err := os.Lstat(sock)
				assert.Assert(t, errors.Is(err, fs.ErrNotExist), "a socket was created in a refused directory")
			}
			assert.DeepEqual(t, stat(t, dir), before)
		})
	}
}

// TestDirNotADirectory: a symlink (even to a good directory) or a file in
// the directory's place is refused.
func TestDirNotADirectory(t *testing.T) {
	t.Parallel()
	b := base(t)
	good := filepath.Join(b, "good")
	assert.NilError(t, os.Mkdir(good, 0o700))
	link := filepath.Join(b, "link")
	assert.NilError(t, os.Symlink(good, link))
	_, err := unixsock.Listen(filepath.Join(link, "s.sock"), whoami, unixsock.Options{})
	assert.ErrorContains(t, err, "not a directory")
	_, err = os.Lstat(filepath.Join(good, "s.sock"))
	assert.Assert(t, errors.Is(err, fs.ErrNotExist))

	file := filepath.Join(b, "file")
	assert.NilError(t, os.WriteFile(file, nil, 0o600))
	_, err = unixsock.Listen(filepath.Join(file, "s.sock"), whoami, unixsock.Options{})
	assert.ErrorContains(t, err, "socket directory")
}

// TestStaleSocket: a socket file nobody serves any more is replaced.
func TestStaleSocket(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(base(t), "d")
	assert.NilError(t, os.Mkdir(dir, 0o700))
	sock := filepath.Join(dir, "s.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	assert.NilError(t, err)
	ln.SetUnlinkOnClose(false)
	assert.NilError(t, ln.Close())
	_, err = os.Lstat(sock)
	assert.NilError(t, err, "the stale socket file should be there")

	listen(t, sock, whoami, unixsock.Options{})
	status, _ := get(t, sock)
	assert.Equal(t, status, 200)
	assert.Equal(t, stat(t, sock).Mode, fs.ModeSocket|0o600)
}

// TestLiveSocketInUse: a socket another server answers on is left alone.
func TestLiveSocketInUse(t *testing.T) {
	t.Parallel()
	sock := filepath.Join(base(t), "d", "s.sock")
	first := listen(t, sock, whoami, unixsock.Options{})
	_, err := unixsock.Listen(sock, whoami, unixsock.Options{})
	assert.ErrorIs(t, err, unixsock.ErrInUse)
	assert.ErrorContains(t, err, sock)
	status, _ := get(t, sock)
	assert.Equal(t, status, 200, "the first server still serves")
	assert.NilError(t, first.Close())
	// Once it is gone, the path is free again.
	listen(t, sock, whoami, unixsock.Options{})
}

// TestOwner: a root server hands a directory it creates and the socket to
// Owner, who can then connect; root still can too.
func TestOwner(t *testing.T) {
	requireRoot(t)
	t.Parallel()
	b := base(t)
	dir := filepath.Join(b, "mitrity-nobody")
	sock := filepath.Join(dir, "s.sock")
	listen(t, sock, whoami, unixsock.Options{Owner: &unixsock.Owner{UID: nobody, GID: nobody}})
	assert.DeepEqual(t, stat(t, dir), meta{Mode: fs.ModeDir | 0o700, UID: nobody, GID: nobody})
	assert.DeepEqual(t, stat(t, sock), meta{Mode: fs.ModeSocket | 0o600, UID: nobody, GID: nobody})
	status, body := get(t, sock)
	assert.Equal(t, status, 200)
	assert.Equal(t, body, "uid=0 ok=true")
	assert.Equal(t, probe(t, b, sock), fmt.Sprintf("200 uid=%d ok=true", nobody))
}

// probe runs a copy of the test binary as uid nobody against sock and
// returns what it printed.
func probe(t *testing.T, b, sock string) string {
	t.Helper()
	// The test binary's own directory is private: run a copy.
	self, err := os.Executable()
	assert.NilError(t, err)
	client := filepath.Join(b, "client")
	if _, err := os.Stat(client); err != nil {
		// cp writes it, not this process (ETXTBSY otherwise, see hold).
		out, err := exec.Command("cp", self, client).CombinedOutput()
		assert.NilError(t, err, string(out))
		assert.NilError(t, os.Chmod(client, 0o755))
	}
	cmd := exec.Command(client)
	cmd.Env = []string{"MITRITY_UNIXSOCK_PROBE=" + sock}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	assert.NilError(t, err, string(out))
	return string(out)
}

// TestPeerCheck: another user who gets past the file modes (loosened by
// hand here) is still refused by the SO_PEERCRED check, unless
// Options.UIDs names it.
func TestPeerCheck(t *testing.T) {
	requireRoot(t)
	t.Parallel()
	tests := []struct {
		name string
		uids []int
		want string
	}{
		{name: "not listed", uids: nil, want: "403 forbidden: this socket serves other users\n"},
		{name: "others listed", uids: []int{1000, 1001}, want: "403 forbidden: this socket serves other users\n"},
		{name: "listed", uids: []int{1000, nobody}, want: fmt.Sprintf("200 uid=%d ok=true", nobody)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := base(t)
			dir := filepath.Join(b, "d")
			sock := filepath.Join(dir, "s.sock")
			listen(t, sock, whoami, unixsock.Options{UIDs: tc.uids})
			// The modes keep another user out before any check.
			assert.Check(t, is.Contains(probe(t, b, sock), "permission denied"))
			assert.NilError(t, os.Chmod(dir, 0o755))
			assert.NilError(t, os.Chmod(sock, 0o666))
			assert.Equal(t, probe(t, b, sock), tc.want)
			// Root and the server's own user always get through.
			status, body := get(t, sock)
			assert.Equal(t, status, 200)
			assert.Equal(t, body, "uid=0 ok=true")
		})
	}
}

func TestPeerUIDOutsideAServer(t *testing.T) {
	t.Parallel()
	_, ok := unixsock.PeerUID(context.Background())
	assert.Assert(t, !ok)
}

// TestShutdownWaits: Shutdown stops accepting at once, lets a handler in
// flight finish, then removes the socket.
func TestShutdownWaits(t *testing.T) {
	t.Parallel()
	sock := filepath.Join(base(t), "d", "s.sock")
	entered, release := make(chan struct{}), make(chan struct{})
	s := listen(t, sock, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		fmt.Fprint(w, "finished")
	}), unixsock.Options{})

	type result struct {
		status int
		body   string
		err    error
	}
	got := make(chan result, 1)
	go func() {
		resp, err := unixsock.Client(sock, 10*time.Second).Get("http://x/")
		if err != nil {
			got <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		got <- result{status: resp.StatusCode, body: string(b), err: err}
	}()
	<-entered

	done := make(chan error, 1)
	go func() { done <- s.Shutdown(context.Background()) }()
	// New connections are refused while the handler runs.
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.Dial("unix", sock)
		if err != nil {
			break
		}
		c.Close()
		assert.Assert(t, time.Now().Before(deadline), "still accepting after Shutdown")
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned (%v) with a handler in flight", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	assert.NilError(t, <-done)
	r := <-got
	assert.NilError(t, r.err)
	assert.Equal(t, r.status, 200)
	assert.Equal(t, r.body, "finished")
	_, err := os.Lstat(sock)
	assert.Assert(t, errors.Is(err, fs.ErrNotExist), "Shutdown left the socket")
}

// TestShutdownDeadline: a handler that outlives ctx makes Shutdown return
// ctx's error; the socket is removed all the same and Close then drops
// the connection.
func TestShutdownDeadline(t *testing.T) {
	t.Parallel()
	sock := filepath.Join(base(t), "d", "s.sock")
	entered := make(chan struct{})
	s := listen(t, sock, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-r.Context().Done()
	}), unixsock.Options{})
	errc := make(chan error, 1)
	go func() {
		_, err := unixsock.Client(sock, 10*time.Second).Get("http://x/")
		errc <- err
	}()
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, s.Shutdown(ctx), context.DeadlineExceeded)
	_, err := os.Lstat(sock)
	assert.Assert(t, errors.Is(err, fs.ErrNotExist))
	assert.NilError(t, s.Close())
	assert.Assert(t, <-errc != nil, "the dropped request should fail")
}

// TestCloseRemovesSocket: Close drops the connections in flight and
// removes the socket file.
func TestCloseRemovesSocket(t *testing.T) {
	t.Parallel()
	sock := filepath.Join(base(t), "d", "s.sock")
	entered := make(chan struct{})
	s, err := unixsock.Listen(sock, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-r.Context().Done()
	}), unixsock.Options{})
	assert.NilError(t, err)
	errc := make(chan error, 1)
	go func() {
		_, err := unixsock.Client(sock, 10*time.Second).Get("http://x/")
		errc <- err
	}()
	<-entered
	assert.NilError(t, s.Close())
	assert.Assert(t, <-errc != nil)
	_, err = os.Lstat(sock)
	assert.Assert(t, errors.Is(err, fs.ErrNotExist), "Close left the socket")
	_, err = unixsock.Client(sock, time.Second).Get("http://x/")
	assert.ErrorContains(t, err, "no such file or directory")
}

// TestSocketNotFollowed: a symlink at the socket's path is replaced, never
// followed: the file it points to keeps its mode.
func TestSocketNotFollowed(t *testing.T) {
	t.Parallel()
	b := base(t)
	dir := filepath.Join(b, "d")
	assert.NilError(t, os.Mkdir(dir, 0o700))
	target := filepath.Join(b, "precious")
	assert.NilError(t, os.WriteFile(target, []byte("keep"), 0o644))
	sock := filepath.Join(dir, "s.sock")
	assert.NilError(t, os.Symlink(target, sock))
	listen(t, sock, whoami, unixsock.Options{})
	assert.Equal(t, stat(t, sock).Mode, fs.ModeSocket|0o600)
	assert.Equal(t, stat(t, target).Mode, fs.FileMode(0o644))
	data, err := os.ReadFile(target)
	assert.NilError(t, err)
	assert.Equal(t, string(data), "keep")
}

// TestUmaskIgnored: the socket is 0600 and the new directory 0700 whatever
// the process's umask (a umask of 0 would otherwise leave the socket
// 0777 between bind and chmod).
func TestUmaskIgnored(t *testing.T) {
	// Not parallel: the umask is the process's.
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := filepath.Join(base(t), "d")
	sock := filepath.Join(dir, "s.sock")
	listen(t, sock, whoami, unixsock.Options{})
	assert.Equal(t, stat(t, dir).Mode, fs.ModeDir|0o700)
	assert.Equal(t, stat(t, sock).Mode, fs.ModeSocket|0o600)
}

func TestClientIgnoresHost(t *testing.T) {
	t.Parallel()
	sock := filepath.Join(base(t), "d", "s.sock")
	listen(t, sock, whoami, unixsock.Options{})
	for _, u := range []string{"http://a/", "http://b.example:8080/x", "http://127.0.0.1/"} {
		resp, err := unixsock.Client(sock, 5*time.Second).Get(u)
		assert.NilError(t, err)
		resp.Body.Close()
		assert.Equal(t, resp.StatusCode, 200, u)
	}
}

// Accept decides on the peer after its uid passed: a process in
// namespaces of its own, of the same uid, is refused with Accept's text;
// one in the server's namespaces gets through.
func TestAcceptPeer(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("unshare (util-linux) not installed")
	}
	sock := filepath.Join(base(t), "d", "s.sock")
	listen(t, sock, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "served") }), unixsock.Options{
		Accept: func(p peer.Peer) error {
			if same, err := peer.SameNamespaces(p); err != nil || !same {
				return errors.New("forbidden: not from the host")
			}
			return nil
		},
	})
	code, body := get(t, sock)
	assert.Check(t, is.Equal(code, 200))
	assert.Check(t, is.Equal(body, "served"))
	script := `socket(my $s, AF_UNIX, SOCK_STREAM, 0) or die; connect($s, pack_sockaddr_un($ARGV[0])) or die "connect: $!";
syswrite($s, "GET / HTTP/1.0\r\nHost: x\r\n\r\n"); local $/; print <$s>;`
	out, err := exec.Command("unshare", "--user", "--map-current-user", "--pid", "--fork", "--", "perl", "-MSocket", "-e", script, sock).CombinedOutput()
	assert.NilError(t, err, string(out))
	assert.Check(t, is.Contains(string(out), "403 Forbidden"))
	assert.Check(t, is.Contains(string(out), "not from the host"))
	assert.Check(t, !strings.Contains(string(out), "served"))
}
