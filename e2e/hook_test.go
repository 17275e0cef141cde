package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// hookPolicy routes nothing (framework) for agent claude-code; agents
// routed-* route to the governed shell.
const hookPolicy = `default_agent:
  profile: framework
agents:
  routed-claude:
    profile: routed
  routed-gemini:
    profile: routed
  routed-codex:
    profile: routed
  routed-opencode:
    profile: routed
  asker:
    profile: asker
profiles:
  framework:
    sandbox_required: true
    builtin_exec_routing: framework
    script_inspection_roots: ["${workspace}"]
    rules:
      - name: deny-ssh-reads
        when: 'commands.exists(c, c.argv.exists(a, a.contains(".ssh")))'
        action: deny
        message: keys stay on the host
      - name: hold-push
        when: 'commands.exists(c, c.name == "git" && c.argv.size() > 1 && c.argv[1] == "push")'
        action: hold
        message: a person approves pushes
      - name: ask-deploy
        when: 'commands.exists(c, c.name == "make" && c.argv.exists(a, a == "deploy"))'
        action: ask
        message: deploys are confirmed
    hold:
      timeout_seconds: 20
  asker:
    sandbox_required: true
    builtin_exec_routing: governed_shell
    script_inspection_roots: ["${workspace}"]
    rules:
      - name: hold-push
        when: 'commands.exists(c, c.name == "git" && c.argv.size() > 1 && c.argv[1] == "push")'
        action: hold
        message: a person approves pushes
    hold:
      on_hook: ask
  routed:
    sandbox_required: true
    builtin_exec_routing: governed_shell
    exec_timeout_seconds: 3
    script_inspection_roots: ["${workspace}"]
    rules:
      - name: deny-ssh-reads
        when: 'commands.exists(c, c.argv.exists(a, a.contains(".ssh")))'
        action: deny
        message: keys stay on the host
`

// hookWorld is a gateway serving the admission socket at full strength
// (bubblewrap), and the hook binary that talks to it.
type hookWorld struct {
	*world
	sock, hook string
	metrics    string        // the admin listener's /metrics URL
	gateway    *exec.Cmd     // the running gateway
	gwLog      *lockedBuffer // its stderr (errors only)
}

// lockedBuffer is a bytes.Buffer a process writes while a test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newHookWorld(t testing.TB, ttlSeconds int) *hookWorld {
	t.Helper()
	w := newWorldBackend(t, false, hookPolicy, "auto")
	run := filepath.Join(w.dir, "run")
	hw := &hookWorld{world: w, sock: filepath.Join(run, "admission.sock"), hook: binPath(t, "mitrity-hook")}
	cfg, err := os.ReadFile(w.cfg)
	must(t, err)
	addr := freePort(t)
	hw.metrics = "http://" + addr + "/metrics"
	cfg = append(cfg, fmt.Sprintf("admission:\n  socket: %s\n  ticket_ttl_seconds: %d\nadmin:\n  listen: %s\n", hw.sock, ttlSeconds, addr)...)
	must(t, os.WriteFile(w.cfg, cfg, 0o644))
	hw.start(t)
	return hw
}

// start runs `serve --admission-only` until the test ends (SIGTERM, then
// it must exit on its own).
func (hw *hookWorld) start(t testing.TB) {
	t.Helper()
	cmd := exec.Command(hw.bin, "--log-level", "error", "serve", "--admission-only", "--config", hw.cfg, "--admin-dir", hw.admin)
	cmd.Dir = hw.ws
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + hw.dir}
	hw.gateway, hw.gwLog = cmd, &lockedBuffer{}
	cmd.Stderr = hw.gwLog
	must(t, cmd.Start())
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			t.Errorf("the gateway did not stop on SIGTERM")
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(hw.sock); err == nil {
			return
		}
		select {
		case <-done:
			t.Fatalf("the gateway exited: %s", hw.gwLog)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the admission socket never appeared: %s", hw.gwLog)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// runHook runs mitrity-hook with args, payload on stdin, as cred (nil:
// the test's own user).
func (hw *hookWorld) runHook(t testing.TB, cred *syscall.Credential, env []string, stdin string, args ...string) result {
	t.Helper()
	return runAs(t, runSpec{cred: cred, dir: hw.ws, env: hw.env(env), stdin: stdin}, append([]string{hw.hook}, args...)...)
}

// relay runs a rewritten command the way a framework does: bash -c.
func (hw *hookWorld) relay(t testing.TB, env []string, command string) result {
	t.Helper()
	return runAs(t, runSpec{dir: hw.ws, env: hw.env(env)}, "/bin/bash", "-c", command)
}

// env is what the hook and its relay run with: the admission socket, and
// extra after it.
func (hw *hookWorld) env(extra []string) []string {
	return append([]string{"PATH=/usr/bin:/bin", "HOME=" + hw.dir, "MITRITY_ADMISSION_SOCKET=" + hw.sock}, extra...)
}

// claudePayload is a PreToolUse payload for Bash exactly as Claude Code
// sends it.
func claudePayload(cwd, command string) string {
	b, _ := json.Marshal(map[string]any{
		"session_id":      "8c35adc1-5d1e-4b7f-9a2c-3f1e0b6d4a91",
		"transcript_path": "/home/dev/.claude/projects/-x/8c35adc1-5d1e-4b7f-9a2c-3f1e0b6d4a91.jsonl",
		"cwd":             cwd, "permission_mode": "default", "hook_event_name": "PreToolUse",
		"tool_name": "Bash",
		"tool_input": map[string]any{"command": command, "description": "Run it", "timeout": 120000,
			"run_in_background": false},
		"tool_use_id": "toolu_01P9sLk2Vb7Xq4Wn8Rt3Yz6M",
	})
	return string(b)
}

// claudeAnswer is Claude Code's view of a hook's stdout.
type claudeAnswer struct {
	HookSpecificOutput struct {
		HookEventName            string         `json:"hookEventName"`
		PermissionDecision       string         `json:"permissionDecision"`
		PermissionDecisionReason string         `json:"permissionDecisionReason"`
		UpdatedInput             map[string]any `json:"updatedInput"`
	} `json:"hookSpecificOutput"`
}

func parseClaude(t testing.TB, r result) claudeAnswer {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("hook exit %d: %s", r.code, r.stderr)
	}
	var a claudeAnswer
	if err := json.Unmarshal([]byte(r.stdout), &a); err != nil {
		t.Fatalf("hook stdout is not Claude's JSON: %v\n%s", err, r.stdout)
	}
	if a.HookSpecificOutput.HookEventName != "PreToolUse" {
		t.Fatalf("hookEventName: %s", r.stdout)
	}
	return a
}

// eventsFor returns the audit events whose decision message or command
// hash belongs to the hook calls since n events.
func (hw *hookWorld) eventsSince(t *testing.T, n int) []map[string]any {
	t.Helper()
	evs := hw.events(t)
	if len(evs) < n {
		t.Fatalf("the audit log shrank: %d < %d", len(evs), n)
	}
	return evs[n:]
}

func (hw *hookWorld) eventCount(t *testing.T) int {
	if _, err := os.Stat(hw.audit); err != nil {
		return 0
	}
	return len(hw.events(t))
}

func TestHookFrameworkRouting(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the routed world runs a root gateway with run_as")
	}
	t.Parallel()
	hw := newHookWorld(t, 300)

	t.Run("allow passes unchanged", func(t *testing.T) {
		n := hw.eventCount(t)
		a := parseClaude(t, hw.runHook(t, nil, nil, claudePayload(hw.ws, "ls -la"), "claude"))
		if a.HookSpecificOutput.PermissionDecision != "allow" || a.HookSpecificOutput.UpdatedInput != nil {
			t.Fatalf("%+v", a)
		}
		evs := hw.eventsSince(t, n)
		if len(evs) != 1 || field(evs[0], "data", "surface") != "agent_hook" || field(evs[0], "data", "decision", "outcome") != "allow" ||
			field(evs[0], "data", "execution") != nil || field(evs[0], "data", "agent") != "claude-code" {
			t.Fatalf("one decision event with no execution card (the framework runs it): %v", evs)
		}
	})
	t.Run("deny", func(t *testing.T) {
		a := parseClaude(t, hw.runHook(t, nil, nil, claudePayload(hw.ws, "cat ~/.ssh/id_ed25519"), "claude"))
		if a.HookSpecificOutput.PermissionDecision != "deny" || !strings.Contains(a.HookSpecificOutput.PermissionDecisionReason, "policy_rule") ||
			!strings.Contains(a.HookSpecificOutput.PermissionDecisionReason, "keys stay on the host") {
			t.Fatalf("%+v", a)
		}
	})
	t.Run("ask goes to the person", func(t *testing.T) {
		a := parseClaude(t, hw.runHook(t, nil, nil, claudePayload(hw.ws, "make deploy"), "claude"))
		if a.HookSpecificOutput.PermissionDecision != "ask" || !strings.Contains(a.HookSpecificOutput.PermissionDecisionReason, "deploys are confirmed") {
			t.Fatalf("%+v", a)
		}
	})
	for _, approve := range []bool{true, false} {
		name := map[bool]string{true: "hold approved in the queue", false: "hold denied in the queue"}[approve]
		t.Run(name, func(t *testing.T) {
			done := make(chan result, 1)
			go func() { done <- hw.runHook(t, nil, nil, claudePayload(hw.ws, "git push origin main"), "claude") }()
			id := waitHold(t, hw.world)
			verb := map[bool]string{true: "approve", false: "deny"}[approve]
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if r := hw.gw(t, ctx, "", "approvals", verb, "--admin-dir", hw.admin, id); r.code != 0 {
				t.Fatalf("approvals %s: %+v", verb, r)
			}
			a := parseClaude(t, <-done)
			want := map[bool]string{true: "allow", false: "deny"}[approve]
			if a.HookSpecificOutput.PermissionDecision != want {
				t.Fatalf("want %s: %+v", want, a)
			}
			if !approve && !strings.Contains(a.HookSpecificOutput.PermissionDecisionReason, "hold_denied") {
				t.Fatalf("%+v", a)
			}
		})
	}
	t.Run("a non-shell tool is left to the framework", func(t *testing.T) {
		payload := `{"session_id":"s","transcript_path":"/t.jsonl","cwd":"` + hw.ws + `","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Write","tool_input":{"file_path":"` + hw.ws + `/x","content":"y"},"tool_use_id":"toolu_1"}`
		r := hw.runHook(t, nil, nil, payload, "claude")
		if r.code != 0 || strings.Contains(r.stdout, "permissionDecision") {
			t.Fatalf("defer: %+v", r)
		}
	})
	t.Run("malformed payloads block", func(t *testing.T) {
		for _, p := range []string{"", "{", `{"hook_event_name":"PreToolUse"}`, claudePayload("relative/dir", "ls"),
			strings.Replace(claudePayload(hw.ws, "ls"), `"command":"ls"`, `"command":7`, 1)} {
			if r := hw.runHook(t, nil, nil, p, "claude"); r.code != 2 || r.stderr == "" {
				t.Errorf("payload %q: want exit 2 with a reason, got %+v", p, r)
			}
		}
	})
	t.Run("bad flags block", func(t *testing.T) {
		if r := hw.runHook(t, nil, nil, claudePayload(hw.ws, "ls"), "claude", "--no-such-flag"); r.code != 2 {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("another uid gets nothing", func(t *testing.T) {
		uid, gid := ensureUser(t)
		r := hw.runHook(t, &syscall.Credential{Uid: uid, Gid: gid}, nil, claudePayload(hw.ws, "ls"), "claude")
		if r.code != 2 || !strings.Contains(r.stderr, "not reachable") {
			t.Fatalf("another user must be blocked: %+v", r)
		}
	})
	t.Run("a call that runs the hook itself is denied", func(t *testing.T) {
		a := parseClaude(t, hw.runHook(t, nil, nil, claudePayload(hw.ws, hw.hook+" exec AAAAAAAAAAAAAAAAAAAAAAAAAA"), "claude"))
		if a.HookSpecificOutput.PermissionDecision != "deny" {
			t.Fatalf("%+v", a)
		}
	})
}

func TestHookGatewayDown(t *testing.T) {
	t.Parallel()
	hook := binPath(t, "mitrity-hook")
	dir := t.TempDir()
	for _, fw := range []string{"claude", "codex", "gemini", "opencode"} {
		cmd := exec.Command(hook, fw)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "MITRITY_ADMISSION_SOCKET=" + filepath.Join(dir, "none.sock")}
		cmd.Stdin = strings.NewReader(claudePayload(dir, "ls"))
		if fw == "gemini" {
			cmd.Stdin = strings.NewReader(`{"session_id":"s","transcript_path":"/t.json","cwd":"` + dir + `","hook_event_name":"BeforeTool","timestamp":"2026-10-02T09:14:03.512Z","tool_name":"run_shell_command","tool_input":{"command":"ls"}}`)
		}
		if fw == "opencode" {
			cmd.Stdin = strings.NewReader(`{"version":1,"tool":"bash","sessionID":"ses_1","callID":"c1","directory":"` + dir + `","args":{"command":"ls"}}`)
		}
		var errb bytes.Buffer
		cmd.Stderr = &errb
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(errb.String(), "not reachable") {
			t.Errorf("%s with the gateway down: want exit 2 and a reason, got %v: %s", fw, err, errb.String())
		}
	}
}

// admitRouted admits command for a routed agent and returns the rewritten
// relay command.
func (hw *hookWorld) admitRouted(t testing.TB, agent, command string) string {
	t.Helper()
	a := parseClaude(t, hw.runHook(t, nil, []string{"MITRITY_AGENT=" + agent}, claudePayload(hw.ws, command), "claude"))
	in := a.HookSpecificOutput.UpdatedInput
	if a.HookSpecificOutput.PermissionDecision != "allow" || in == nil {
		t.Fatalf("routed allow with a rewrite: %+v", a)
	}
	cmd, _ := in["command"].(string)
	if !strings.HasPrefix(cmd, hw.hook+" exec ") || in["description"] != "Run it" || in["timeout"] != float64(120000) || in["run_in_background"] != false {
		t.Fatalf("only command is rewritten, to the relay: %v", in)
	}
	return cmd
}

func TestHookRouted(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the routed world runs a root gateway with run_as")
	}
	t.Parallel()
	hw := newHookWorld(t, 300)
	uid, _ := ensureUser(t)
	agent := []string{"MITRITY_AGENT=routed-claude"}

	t.Run("exit code, streams and two linked events", func(t *testing.T) {
		n := hw.eventCount(t)
		relay := hw.admitRouted(t, "routed-claude", "id -u; echo out; echo err >&2; exit 3")
		mid := hw.eventsSince(t, n)
		if len(mid) != 1 || field(mid[0], "data", "execution") != nil {
			t.Fatalf("admit writes the decision event only: %v", mid)
		}
		r := hw.relay(t, agent, relay)
		if r.code != 3 || r.stdout != fmt.Sprintf("%d\nout\n", uid) || r.stderr != "err\n" {
			t.Fatalf("relay: %+v", r)
		}
		evs := hw.eventsSince(t, n)
		if len(evs) != 2 {
			t.Fatalf("two events: %v", evs)
		}
		if field(evs[1], "data", "linked_event_id") != evs[0]["id"] || field(evs[1], "data", "execution", "sandbox_mode") != "bubblewrap" ||
			field(evs[1], "data", "surface") != "agent_hook" || field(evs[1], "data", "execution", "exit_code") != float64(3) {
			t.Fatalf("the execution event links the decision and ran at full strength: %v", evs[1])
		}
		// Replayed: refused, nothing ran, no third event.
		r = hw.relay(t, agent, relay)
		if r.code != 126 || !strings.Contains(r.stderr, "refused") {
			t.Fatalf("replay: %+v", r)
		}
		if len(hw.eventsSince(t, n)) != 2 {
			t.Fatal("a replay must not run or add an execution")
		}
	})
	t.Run("a protected path the command creates is named to the agent", func(t *testing.T) {
		p := filepath.Join(hw.ws, ".mcp.json")
		t.Cleanup(func() { os.Remove(p) })
		r := hw.relay(t, agent, hw.admitRouted(t, "routed-claude", `echo '{"mcpServers":{}}' > .mcp.json; sleep 5`))
		// The run is killed the moment it creates it, and the file moved
		// aside: the relay exits 137 and says why.
		if r.code != 137 || !strings.Contains(r.stderr, "protected paths created") || !strings.Contains(r.stderr, p) || !strings.Contains(r.stderr, "killed: the command created") {
			t.Fatalf("relay: %+v", r)
		}
		if _, err := os.Stat(p); err == nil {
			t.Fatalf("%s was left for the host to read", p)
		}
		moved, _ := filepath.Glob(p + ".mitrity-quarantine-*")
		if len(moved) != 1 {
			t.Fatalf("want the file moved aside, got %v", moved)
		}
		t.Cleanup(func() { os.Remove(moved[0]) })
	})
	t.Run("output streams as it is produced", func(t *testing.T) {
		relay := hw.admitRouted(t, "routed-claude", "echo first; sleep 2; echo second")
		cmd := exec.Command("/bin/bash", "-c", relay)
		cmd.Env = append([]string{"PATH=/usr/bin:/bin", "MITRITY_ADMISSION_SOCKET=" + hw.sock}, agent...)
		stdout, err := cmd.StdoutPipe()
		must(t, err)
		must(t, cmd.Start())
		line, err := bufio.NewReader(stdout).ReadString('\n')
		must(t, err)
		running := cmd.ProcessState == nil && cmd.Process.Signal(syscall.Signal(0)) == nil
		rest, _ := io.ReadAll(stdout)
		must(t, cmd.Wait())
		if line != "first\n" || !running || string(rest) != "second\n" {
			t.Fatalf("the first line must arrive while the command still runs: %q (running %v), then %q", line, running, rest)
		}
	})
	t.Run("the model's timeout shortens the run", func(t *testing.T) {
		payload := strings.Replace(claudePayload(hw.ws, "sleep 30"), `"timeout":120000`, `"timeout":1000`, 1)
		a := parseClaude(t, hw.runHook(t, nil, agent, payload, "claude"))
		cmd, _ := a.HookSpecificOutput.UpdatedInput["command"].(string)
		n := hw.eventCount(t)
		if r := hw.relay(t, agent, cmd); r.code != 124 {
			t.Fatalf("%+v", r)
		}
		evs := hw.eventsSince(t, n)
		if len(evs) != 1 || field(evs[0], "data", "execution", "timeout_seconds") != float64(1) {
			t.Fatalf("timeout_seconds 1: %v", evs)
		}
	})
	t.Run("timeout is 124", func(t *testing.T) {
		r := hw.relay(t, agent, hw.admitRouted(t, "routed-claude", "echo started; sleep 30"))
		if r.code != 124 || r.stdout != "started\n" {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("killed is 137", func(t *testing.T) {
		r := hw.relay(t, agent, hw.admitRouted(t, "routed-claude", "kill -9 $$"))
		if r.code != 137 {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("the relay interrupted kills the command", func(t *testing.T) {
		m := marker(t)
		relay := hw.admitRouted(t, "routed-claude", "exec -a "+m+" sleep 60")
		cmd := exec.Command("/bin/bash", "-c", "exec "+relay)
		cmd.Env = append([]string{"PATH=/usr/bin:/bin", "MITRITY_ADMISSION_SOCKET=" + hw.sock}, agent...)
		must(t, cmd.Start())
		deadline := time.Now().Add(20 * time.Second)
		for len(processesWith(m)) == 0 {
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatal("the command never started")
			}
			time.Sleep(20 * time.Millisecond)
		}
		cmd.Process.Signal(syscall.SIGTERM)
		err := cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 137 {
			t.Fatalf("want 137: %v", err)
		}
		deadline = time.Now().Add(10 * time.Second)
		for len(processesWith(m)) > 0 {
			if time.Now().After(deadline) {
				t.Fatal("the command survived its relay")
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	t.Run("a malformed relay could not start: 126", func(t *testing.T) {
		for _, args := range []string{"exec", "exec -not-a-ticket", "exec a b", "exec mtk_unknown"} {
			if r := hw.relay(t, agent, hw.hook+" "+args); r.code != 126 {
				t.Errorf("%s: want 126, got %+v", args, r)
			}
		}
	})
	t.Run("a gateway that cannot be reached: nothing ran, and the relay says so", func(t *testing.T) {
		relay := hw.admitRouted(t, "routed-claude", "echo never")
		gone := filepath.Join(t.TempDir(), "admission.sock")
		r := hw.relay(t, append([]string{"MITRITY_ADMISSION_SOCKET=" + gone}, agent...), relay)
		if r.code != 126 || strings.Contains(r.stdout, "never") || !strings.Contains(r.stderr, "nothing ran") ||
			strings.Contains(r.stderr, "unknown") {
			t.Fatalf("%+v", r)
		}
		// The ticket was never presented: it is still good.
		if r := hw.relay(t, agent, relay); r.code != 0 || r.stdout != "never\n" {
			t.Fatalf("the unpresented ticket: %+v", r)
		}
	})
	t.Run("another agent's ticket is refused", func(t *testing.T) {
		relay := hw.admitRouted(t, "routed-claude", "echo never")
		r := hw.relay(t, []string{"MITRITY_AGENT=someone-else"}, relay)
		if r.code != 126 || strings.Contains(r.stdout, "never") {
			t.Fatalf("%+v", r)
		}
		// Spent: the rightful agent cannot use it afterwards either.
		if r := hw.relay(t, agent, relay); r.code != 126 {
			t.Fatalf("%+v", r)
		}
	})
	t.Run("a script swapped after admit runs as judged", func(t *testing.T) {
		script := filepath.Join(hw.ws, "build.sh")
		must(t, os.WriteFile(script, []byte("echo judged\n"), 0o755))
		relay := hw.admitRouted(t, "routed-claude", "bash ./build.sh")
		must(t, os.WriteFile(script, []byte("echo swapped\n"), 0o755))
		r := hw.relay(t, agent, relay)
		if r.code != 0 || r.stdout != "judged\n" {
			t.Fatalf("the judged bytes must run: %+v", r)
		}
	})
	t.Run("a routed denial is a denial", func(t *testing.T) {
		a := parseClaude(t, hw.runHook(t, nil, agent, claudePayload(hw.ws, "cat ~/.ssh/id_rsa"), "claude"))
		if a.HookSpecificOutput.PermissionDecision != "deny" || a.HookSpecificOutput.UpdatedInput != nil {
			t.Fatalf("%+v", a)
		}
	})
	t.Run("a held call under on_hook ask is asked, already rewritten", func(t *testing.T) {
		a := parseClaude(t, hw.runHook(t, nil, []string{"MITRITY_AGENT=asker"}, claudePayload(hw.ws, "git push origin main"), "claude"))
		cmd, _ := a.HookSpecificOutput.UpdatedInput["command"].(string)
		if a.HookSpecificOutput.PermissionDecision != "ask" || !strings.HasPrefix(cmd, hw.hook+" exec ") {
			t.Fatalf("%+v", a)
		}
	})
	t.Run("metrics count decisions and executions", func(t *testing.T) {
		m := hw.scrape(t)
		for _, want := range []string{`mitrity_decisions_total{decision="allow",reason="none"}`, `mitrity_decisions_total{decision="deny",reason="policy_rule"} 1`,
			`mitrity_executions_total{sandbox_mode="bubblewrap",status="completed"}`, `mitrity_executions_total{sandbox_mode="bubblewrap",status="timed_out"}`} {
			if !strings.Contains(m, want) {
				t.Errorf("metrics lack %s", want)
			}
		}
	})
	t.Run("gemini, codex and opencode payloads route too", func(t *testing.T) {
		gem := `{"session_id":"d2f1","transcript_path":"/t.json","cwd":"` + hw.ws + `","hook_event_name":"BeforeTool","timestamp":"2026-10-02T09:14:03.512Z","tool_name":"run_shell_command","tool_input":{"command":"echo gem; exit 4","description":"d","is_background":false}}`
		r := hw.runHook(t, nil, []string{"MITRITY_AGENT=routed-gemini"}, gem, "gemini")
		var g struct {
			Decision           string `json:"decision"`
			HookSpecificOutput struct {
				ToolInput map[string]any `json:"tool_input"`
			} `json:"hookSpecificOutput"`
		}
		must(t, json.Unmarshal([]byte(r.stdout), &g))
		cmd, _ := g.HookSpecificOutput.ToolInput["command"].(string)
		if g.Decision != "allow" || g.HookSpecificOutput.ToolInput["description"] != "d" || !strings.HasPrefix(cmd, hw.hook+" exec ") {
			t.Fatalf("gemini: %s", r.stdout)
		}
		if r := hw.relay(t, []string{"MITRITY_AGENT=routed-gemini"}, cmd); r.code != 4 || r.stdout != "gem\n" {
			t.Fatalf("gemini relay: %+v", r)
		}

		codex := `{"session_id":"019a","turn_id":"019b","transcript_path":"/t.jsonl","cwd":"` + hw.ws + `","hook_event_name":"PreToolUse","model":"gpt-5.2-codex","permission_mode":"default","tool_name":"Bash","tool_input":{"command":"echo codex"},"tool_use_id":"call_1"}`
		a := parseClaude(t, hw.runHook(t, nil, []string{"MITRITY_AGENT=routed-codex"}, codex, "codex"))
		cmd, _ = a.HookSpecificOutput.UpdatedInput["command"].(string)
		if r := hw.relay(t, nil, cmd); r.code != 0 || r.stdout != "codex\n" {
			t.Fatalf("codex relay: %+v %+v", a, r)
		}

		oc := `{"version":1,"tool":"bash","sessionID":"ses_1","callID":"c1","directory":"` + hw.ws + `","args":{"command":"echo oc","description":"d"}}`
		r = hw.runHook(t, nil, []string{"MITRITY_AGENT=routed-opencode"}, oc, "opencode")
		var o struct {
			Decision string         `json:"decision"`
			Args     map[string]any `json:"args"`
		}
		must(t, json.Unmarshal([]byte(r.stdout), &o))
		cmd, _ = o.Args["command"].(string)
		if o.Decision != "allow" || o.Args["description"] != "d" {
			t.Fatalf("opencode: %s", r.stdout)
		}
		if r := hw.relay(t, nil, cmd); r.code != 0 || r.stdout != "oc\n" {
			t.Fatalf("opencode relay: %+v", r)
		}
	})
}

// scrape reads the gateway's metrics.
func (hw *hookWorld) scrape(t *testing.T) string {
	t.Helper()
	resp, err := http.Get(hw.metrics)
	must(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s", hw.metrics, resp.Status)
	}
	return string(b)
}

// TestHookTicketExpires: a ticket nobody redeems expires; its call gets
// its second event, never ran, and the relay is refused afterwards.
func TestHookTicketExpires(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the routed world runs a root gateway with run_as")
	}
	t.Parallel()
	hw := newHookWorld(t, 1)
	n := hw.eventCount(t)
	relay := hw.admitRouted(t, "routed-claude", "echo too late")
	deadline := time.Now().Add(15 * time.Second)
	var evs []map[string]any
	for {
		evs = hw.eventsSince(t, n)
		if len(evs) == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(evs) != 2 || field(evs[1], "data", "linked_event_id") != evs[0]["id"] ||
		field(evs[1], "data", "execution", "status") != "never_ran" || field(evs[1], "data", "execution", "reason") != "ticket_expired" {
		t.Fatalf("an expired ticket's second event: %v", evs)
	}
	r := hw.relay(t, []string{"MITRITY_AGENT=routed-claude"}, relay)
	if r.code != 126 || strings.Contains(r.stdout, "too late") {
		t.Fatalf("%+v", r)
	}
	if len(hw.eventsSince(t, n)) != 2 {
		t.Fatal("an expired ticket must not run")
	}
}

// TestServeReload: SIGHUP swaps in a changed policy; a policy that does
// not compile is refused and the running one stays.
func TestServeReload(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the hook world runs a root gateway with run_as")
	}
	t.Parallel()
	hw := newHookWorld(t, 300)
	decide := func(command string) string {
		return parseClaude(t, hw.runHook(t, nil, nil, claudePayload(hw.ws, command), "claude")).HookSpecificOutput.PermissionDecision
	}
	if d := decide("touch notes.txt"); d != "allow" {
		t.Fatalf("before: %s", d)
	}
	denyTouch := strings.Replace(hookPolicy, "    rules:\n", "    rules:\n      - name: no-touch\n        when: 'commands.exists(c, c.name == \"touch\")'\n        action: deny\n        message: reloaded\n", 1)
	must(t, os.WriteFile(hw.policy, []byte(denyTouch), 0o644))
	must(t, hw.gateway.Process.Signal(syscall.SIGHUP))
	deadline := time.Now().Add(10 * time.Second)
	for decide("touch notes.txt") != "deny" {
		if time.Now().After(deadline) {
			t.Fatal("the changed policy was never loaded")
		}
		time.Sleep(100 * time.Millisecond)
	}
	// A broken policy is refused: the gateway keeps the last good one.
	must(t, os.WriteFile(hw.policy, []byte("profiles: {framework: {rules: [{name: x, when: 'no such(', action: deny}]}}\n"), 0o644))
	must(t, hw.gateway.Process.Signal(syscall.SIGHUP))
	// Wait for the gateway to have judged the broken file, so the check
	// below sees the outcome of that reload, not a reload still to come.
	deadline = time.Now().Add(10 * time.Second)
	for !strings.Contains(hw.gwLog.String(), "reload refused") {
		if time.Now().After(deadline) {
			t.Fatalf("the broken policy's reload was never refused: %s", hw.gwLog)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if d := decide("touch notes.txt"); d != "deny" {
		t.Fatalf("after a refused reload the last good policy stays: %s", d)
	}
	if hw.gateway.ProcessState != nil || hw.gateway.Process.Signal(syscall.Signal(0)) != nil {
		t.Fatal("the gateway exited on a bad reload")
	}
}

// TestHookGatewayDiesMidRun: the gateway SIGKILLed while a routed command
// runs: the command dies with it, and the relay says killed (137), not
// "could not start".
func TestHookGatewayDiesMidRun(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the routed world runs a root gateway with run_as")
	}
	t.Parallel()
	hw := newHookWorld(t, 300)
	m := marker(t)
	relay := hw.admitRouted(t, "routed-claude", "echo started; exec -a "+m+" sleep 60")
	cmd := exec.Command("/bin/bash", "-c", relay)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "MITRITY_ADMISSION_SOCKET=" + hw.sock, "MITRITY_AGENT=routed-claude"}
	must(t, cmd.Start())
	deadline := time.Now().Add(20 * time.Second)
	for len(processesWith(m)) == 0 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the command never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	must(t, hw.gateway.Process.Signal(syscall.SIGKILL))
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 137 {
		t.Fatalf("want 137 from the relay: %v", err)
	}
	deadline = time.Now().Add(10 * time.Second)
	for len(processesWith(m)) > 0 {
		if time.Now().After(deadline) {
			t.Fatal("the command survived its gateway")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
