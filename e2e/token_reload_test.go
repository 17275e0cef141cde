package e2e

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestTokenReloadOnHUP: SIGHUP re-reads the token file. A token added
// works, a token removed is refused from its next request on (401), on the
// session it opened too; a token file that does not load leaves the
// running tokens. Before, the file was read at start only, and a revoked
// token kept working until a restart.
func TestTokenReloadOnHUP(t *testing.T) {
	w := newWorld(t, false, e2ePolicy)
	g := startHTTPGW(t, w, gwOptions{logLevel: "info"})
	tokFile := filepath.Join(w.dir, "tokens")
	second := "tok-second-0123456789abcdef"
	c := &http.Client{Timeout: 10 * time.Second}
	post := func(token, session, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest("POST", g.url, strings.NewReader(body))
		must(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := c.Do(req)
		must(t, err)
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Mcp-Session-Id")
	}
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	hup := func(want string) {
		t.Helper()
		must(t, g.cmd.Process.Signal(syscall.SIGHUP))
		for deadline := time.Now().Add(10 * time.Second); !strings.Contains(g.stderr.String(), want); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q in the log:\n%s", want, g.stderr.String())
			}
		}
	}
	if code, _ := post(second, "", initialize); code != http.StatusUnauthorized {
		t.Fatalf("an unlisted token: %d", code)
	}
	code, session := post(boundsToken, "", initialize)
	if code != http.StatusOK || session == "" {
		t.Fatalf("initialize: %d %q", code, session)
	}
	// Added.
	must(t, os.WriteFile(tokFile, []byte(boundsToken+" ci\n"+second+" ci\n"), 0o600))
	hup("reloaded the token file")
	if code, _ := post(second, "", initialize); code != http.StatusOK {
		t.Fatalf("a token added by the reload: %d", code)
	}
	// Removed: refused, on its open session too.
	must(t, os.WriteFile(tokFile, []byte(second+" ci\n"), 0o600))
	before := strings.Count(g.stderr.String(), "reloaded the token file")
	must(t, g.cmd.Process.Signal(syscall.SIGHUP))
	for deadline := time.Now().Add(10 * time.Second); strings.Count(g.stderr.String(), "reloaded the token file") == before; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no second reload in the log:\n%s", g.stderr.String())
		}
	}
	if code, _ := post(boundsToken, session, ping); code != http.StatusUnauthorized {
		t.Errorf("a token removed by the reload, on its session: %d", code)
	}
	if code, _ := post(boundsToken, "", initialize); code != http.StatusUnauthorized {
		t.Errorf("a token removed by the reload: %d", code)
	}
	// A file that does not load: the running tokens stay.
	must(t, os.WriteFile(tokFile, []byte("short ci\n"), 0o600))
	hup("token file reload refused")
	if code, _ := post(second, "", initialize); code != http.StatusOK {
		t.Errorf("after a refused reload: %d", code)
	}
}

// TestAgentFlagChecked: an --agent that is not an agent id refuses to
// start (before: `serve --stdio --agent ""` started and refused every call
// without an event).
func TestAgentFlagChecked(t *testing.T) {
	w := newWorld(t, false, e2ePolicy)
	for _, agent := range []string{"", "a b", "a/b"} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		r := w.gw(t, ctx, "", "--log-level", "error", "serve", "--stdio", "--agent", agent, "--config", w.cfg, "--admin-dir", w.admin)
		cancel()
		if r.code != 2 || !strings.Contains(r.stderr, "an agent id is") {
			t.Errorf("serve --stdio --agent %q: %+v", agent, r)
		}
		if r := w.exec(t, "--agent", agent, "--", "true"); r.code == 0 || !strings.Contains(r.stderr, "an agent id is") {
			t.Errorf("exec --agent %q: %+v", agent, r)
		}
	}
}
