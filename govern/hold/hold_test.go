package hold

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/peer"
)

// When MITRITY_HOLD_PROBE names a socket, the test binary is a client run
// as another user: it prints the HTTP status it got, or the dial error.
func TestMain(m *testing.M) {
	if sock := os.Getenv("MITRITY_HOLD_PROBE"); sock != "" {
		resp, err := httpClient(sock).Get("http://admin/v1/holds")
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(0)
		}
		fmt.Println(resp.StatusCode)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestApproveDenyExpire(t *testing.T) {
	t.Parallel()
	q := New()
	ctx := context.Background()
	results := make(chan Verdict, 3)
	go func() { results <- q.Wait(ctx, Pending{Agent: "a", Command: "git push"}, time.Minute) }()
	assert.NilError(t, q.WaitPending(ctx, 1))
	p := q.List()[0]
	assert.Equal(t, p.Command, "git push")
	assert.NilError(t, q.Answer(p.ID, govern.Allow, "uid:0"))
	v := <-results
	assert.Equal(t, v.Outcome, govern.Allow)
	assert.Equal(t, v.By, "uid:0")
	assert.Equal(t, len(q.List()), 0)
	assert.ErrorIs(t, q.Answer(p.ID, govern.Allow, "x"), ErrUnknown)

	go func() { results <- q.Wait(ctx, Pending{Agent: "a"}, time.Minute) }()
	assert.NilError(t, q.WaitPending(ctx, 1))
	assert.NilError(t, q.Answer(q.List()[0].ID, govern.Deny, "uid:0"))
	assert.Equal(t, (<-results).Outcome, govern.Deny)

	v = q.Wait(ctx, Pending{Agent: "a"}, 50*time.Millisecond)
	assert.Equal(t, v.Outcome, govern.Deny)
	assert.Assert(t, v.Expired)
	assert.Equal(t, len(q.List()), 0)

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	assert.Equal(t, q.Wait(cctx, Pending{}, time.Minute).Outcome, govern.Deny)
	assert.Assert(t, q.Answer("x", govern.Hold, "y") != nil)
}

func TestServerAndClient(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "admin")
	q := New()
	var checked atomic.Int32
	accept := func(peer.Peer) error { checked.Add(1); return nil }
	_, err := Listen(filepath.Join(dir, "gw.sock"), q, nil)
	assert.ErrorContains(t, err, "no peer check")
	s, err := Listen(filepath.Join(dir, "gw.sock"), q, accept)
	assert.NilError(t, err)
	defer s.Close()
	st, err := os.Stat(dir)
	assert.NilError(t, err)
	assert.Equal(t, st.Mode().Perm(), os.FileMode(0o700))
	st, err = os.Stat(filepath.Join(dir, "gw.sock"))
	assert.NilError(t, err)
	assert.Equal(t, st.Mode().Perm(), os.FileMode(0o600))
	// A second server on the same live socket is refused.
	_, err = Listen(filepath.Join(dir, "gw.sock"), q, accept)
	assert.ErrorContains(t, err, "another process")
	// A stale socket file of a dead process is ignored by the client.
	stale, err := net.Listen("unix", filepath.Join(dir, "stale.sock"))
	assert.NilError(t, err)
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	stale.Close()

	ctx := context.Background()
	c := Client{Dir: dir}
	done := make(chan Verdict, 1)
	go func() { done <- q.Wait(ctx, Pending{Agent: "ci", Command: "make deploy"}, time.Minute) }()
	assert.NilError(t, q.WaitPending(ctx, 1))
	ps, err := c.List(ctx)
	assert.NilError(t, err)
	assert.Equal(t, len(ps), 1)
	assert.Equal(t, ps[0].Command, "make deploy")
	assert.ErrorIs(t, c.Answer(ctx, "nope", true), ErrUnknown)
	assert.NilError(t, c.Answer(ctx, ps[0].ID, true))
	v := <-done
	assert.Equal(t, v.Outcome, govern.Allow)
	assert.Equal(t, v.By, fmt.Sprintf("uid:%d", os.Geteuid()))
	assert.Assert(t, checked.Load() > 0, "the peer check was not consulted")
}

// TestPeerCheckRefuses: a connection the peer check refuses gets no answer
// from the queue (the gateway's check refuses a process in a sandbox).
func TestPeerCheckRefuses(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "admin")
	q := New()
	s, err := Listen(filepath.Join(dir, "gw.sock"), q, func(peer.Peer) error { return errors.New("a sandboxed peer") })
	assert.NilError(t, err)
	defer s.Close()
	ctx := context.Background()
	go q.Wait(ctx, Pending{Agent: "ci", Command: "make deploy"}, time.Minute)
	assert.NilError(t, q.WaitPending(ctx, 1))
	_, err = Client{Dir: dir}.List(ctx)
	assert.Assert(t, err != nil, "a refused peer listed the holds")
	assert.Equal(t, len(q.List()), 1)
}

// TestOtherUserRefused runs a client as another uid: with the default
// modes it cannot reach the socket at all, and with the modes opened up it
// still gets 403 from the SO_PEERCRED check.
func TestOtherUserRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a client as another user")
	}
	t.Parallel()
	base := t.TempDir()
	assert.NilError(t, os.Chmod(base, 0o755))
	assert.NilError(t, os.Chmod(filepath.Dir(base), 0o755))
	dir := filepath.Join(base, "admin")
	sock := filepath.Join(dir, "gw.sock")
	s, err := Listen(sock, New(), func(peer.Peer) error { return nil })
	assert.NilError(t, err)
	defer s.Close()
	// The test binary's own directory is private: run a copy.
	self, err := os.Executable()
	assert.NilError(t, err)
	// cp writes the copy, never this process: a descriptor open for
	// writing here would reach a child forked meanwhile, and an exec of
	// the copy then fail with ETXTBSY.
	client := filepath.Join(base, "client")
	out, err := exec.Command("cp", self, client).CombinedOutput()
	assert.NilError(t, err, string(out))
	assert.NilError(t, os.Chmod(client, 0o755))
	probe := func() string {
		cmd := exec.Command(client)
		cmd.Env = []string{"MITRITY_HOLD_PROBE=" + sock}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		assert.NilError(t, err, string(out))
		return string(out)
	}
	assert.Assert(t, len(probe()) > 0 && probe()[:6] == "error:", "another user reached the socket")
	assert.NilError(t, os.Chmod(dir, 0o777))
	assert.NilError(t, os.Chmod(sock, 0o777))
	assert.Equal(t, probe(), fmt.Sprintf("%d\n", http.StatusForbidden))
}
