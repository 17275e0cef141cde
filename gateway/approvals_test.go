package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern/hold"
	"github.com/mitrity/mitrity/govern/peer"
)

// TestApprovalsShow: a held upstream call's list line holds the first
// 2 KiB of its arguments; approvals show prints every byte of them, so
// that what the person approves is what they read (padding first, the
// part that matters after it included). A held command is shown whole.
func TestApprovalsShow(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "admin")
	q := hold.New()
	s, err := hold.Listen(filepath.Join(dir, "gw.sock"), q, func(peer.Peer) error { return nil })
	assert.NilError(t, err)
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	args := `{"content":"` + strings.Repeat("x", 5000) + `","path":"/etc/shadow"}`
	go q.Wait(ctx, hold.Pending{Agent: "ci", Command: "fs__write_file " + args[:2048] + "... (2987 bytes more: mitrity-gateway approvals show ID)",
		Arguments: args, Rule: "hold-writes", Reason: "policy_rule"}, time.Minute)
	assert.NilError(t, q.WaitPending(ctx, 1))
	go q.Wait(ctx, hold.Pending{Agent: "ci", Command: "make deploy", Cwd: "/w", Reason: "policy_rule"}, time.Minute)
	assert.NilError(t, q.WaitPending(ctx, 2))
	ps := q.List()

	list, _, err := run(t, "approvals", "list", "--admin-dir", dir)
	assert.NilError(t, err)
	assert.Check(t, !strings.Contains(list, "/etc/shadow"), "the list cuts the arguments")
	assert.Check(t, is.Contains(list, "approvals show ID"))

	out, _, err := run(t, "approvals", "show", "--admin-dir", dir, ps[0].ID)
	assert.NilError(t, err)
	assert.Check(t, is.Contains(out, "tool: fs__write_file\n"))
	assert.Check(t, is.Contains(out, "arguments (5035 bytes):\n"+args+"\n"), "%.300s", out)
	assert.Check(t, is.Contains(out, "rule: hold-writes\n"))

	out, _, err = run(t, "approvals", "show", "--admin-dir", dir, ps[1].ID)
	assert.NilError(t, err)
	assert.Check(t, is.Contains(out, "command:\nmake deploy\n"))
	assert.Check(t, is.Contains(out, "cwd: /w\n"))

	_, _, err = run(t, "approvals", "show", "--admin-dir", dir, "0123456789abcdef")
	assert.ErrorContains(t, err, "no pending hold")
	assert.Equal(t, len(q.List()), 2, "show answers nothing")
}
