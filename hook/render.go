package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/hook/framework"
	"github.com/mitrity/mitrity/hook/settings"
)

func renderSettingsCommand() *cli.Command {
	return &cli.Command{
		Name: "render-settings",
		Usage: "print the managed configuration that installs the hook (claude: " + settings.ClaudeManagedPath + "; codex: " +
			settings.CodexRequirementsPath + "; gemini: " + settings.GeminiSystemPath + "), or --check an existing file",
		Description: "claude: the settings register `mitrity-hook claude` as the PreToolUse hook for Bash, keep Claude Code's own\n" +
			"sandbox on (allowUnsandboxedCommands: false, failIfUnavailable: true), ask before `git push` and each\n" +
			"state-mutating `gh` subcommand, allow the read-only ones, and deny the credential files. Under --routing the\n" +
			"relay is given its one way to the admission socket. On Linux that sandbox needs bubblewrap and socat.\n" +
			"codex: requirements.toml with `mitrity-hook codex` as the managed PreToolUse hook and managed hooks only (a hook\n" +
			"in ~/.codex/hooks.json is skipped by `codex exec` until trusted in Codex's UI); --part rules: the exec-policy\n" +
			"rule that lets only the relay out of Codex's sandbox under --routing.\n" +
			"gemini: system settings with the hooks system on and `mitrity-hook gemini` as the BeforeTool hook of\n" +
			"run_shell_command; --check a user's or project's settings with --merged (they can switch it off by name).\n" +
			"--check FILE reports every drift from those rules and exits 1 when there is any. See docs/frameworks.md.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "framework", Value: "claude", Usage: "the framework: claude, codex or gemini (OpenCode: render-opencode-plugin)"},
			&cli.StringFlag{Name: "os", Value: runtime.GOOS, Usage: "linux or darwin"},
			&cli.StringFlag{Name: "hook-path", Usage: "absolute path of mitrity-hook on the agent's host (default: this binary's)"},
			&cli.StringFlag{Name: "socket", Usage: "the admission socket, pinned in the configuration (default: left to the hook's own default)"},
			&cli.BoolFlag{Name: "routing", Usage: "the profile routes shell calls to the governed shell (builtin_exec_routing: governed_shell)"},
			&cli.IntFlag{Name: "hook-timeout", Usage: "seconds the framework waits for the hook; must outlast a held call (the profile's hold.timeout_seconds)"},
			&cli.StringFlag{Name: "check", Usage: "audit this file instead of printing the configuration"},
			&cli.BoolFlag{Name: "merged", Usage: "gemini --check: the file is a user's or project's settings, merged into the system file"},
			&cli.StringFlag{Name: "part", Value: "requirements", Usage: "codex: requirements (" + settings.CodexRequirementsPath + ") or rules (" + settings.CodexRulesPath + ", the relay's way out of Codex's sandbox under --routing)"},
		},
		Action: runRenderSettings,
	}
}

// A renderer prints one framework's configuration; its checker audits a file.
type renderer struct {
	render func(settings.Options) ([]byte, error)
	check  func(data []byte, o settings.Options, merged bool) []settings.Finding
}

var renderers = map[string]renderer{
	"claude":      {settings.RenderClaude, func(d []byte, o settings.Options, _ bool) []settings.Finding { return settings.CheckClaude(d, o) }},
	"codex":       {settings.RenderCodex, func(d []byte, o settings.Options, _ bool) []settings.Finding { return settings.CheckCodex(d, o) }},
	"codex-rules": {settings.RenderCodexRules, func(d []byte, o settings.Options, _ bool) []settings.Finding { return settings.CheckCodexRules(d, o) }},
	"gemini": {settings.RenderGemini, func(d []byte, o settings.Options, merged bool) []settings.Finding {
		return settings.CheckGemini(d, o, !merged)
	}},
}

func runRenderSettings(c *cli.Context) error {
	fw := c.String("framework")
	switch part := c.String("part"); {
	case part == "rules" && fw == "codex":
		fw = "codex-rules"
	case part != "requirements":
		return cli.Exit(fmt.Sprintf("render-settings: --part %q: want requirements, or rules for --framework codex", part), 2)
	}
	r, ok := renderers[fw]
	if !ok {
		return cli.Exit(fmt.Sprintf("render-settings: --framework %q: want claude, codex or gemini (OpenCode: render-opencode-plugin); see docs/frameworks.md", fw), 2)
	}
	if c.NArg() > 0 {
		return cli.Exit(fmt.Sprintf("render-settings: unexpected arguments %q", c.Args().Slice()), 2)
	}
	path := c.String("hook-path")
	if path == "" {
		p, err := hookPath()
		if err != nil {
			return cli.Exit("render-settings: "+err.Error()+" (give --hook-path)", 2)
		}
		path = p
	}
	if r, err := filepath.EvalSymlinks(path); err == nil {
		// The relay names the hook by its resolved path (os.Executable), and
		// Claude Code matches excludedCommands as text.
		path = r
	}
	sock := c.String("socket")
	if sock == "" && c.Bool("routing") && c.String("os") == "darwin" && fw == "claude" {
		// macOS names the one socket the relay may reach.
		sock = govern.AdmissionSocket(os.Geteuid(), os.Getenv)
	}
	o := settings.Options{OS: c.String("os"), HookPath: path, Socket: sock, Routing: c.Bool("routing"),
		HookTimeoutSeconds: c.Int("hook-timeout")}
	if fw == "claude" {
		o.LookPath = exec.LookPath
	}
	if file := c.String("check"); file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return cli.Exit("render-settings --check: "+err.Error(), 2)
		}
		findings := r.check(data, o, c.Bool("merged"))
		for _, f := range findings {
			fmt.Fprintln(c.App.Writer, f.String())
		}
		if len(findings) > 0 {
			return cli.Exit(fmt.Sprintf("render-settings --check: %s: %d finding(s)", file, len(findings)), 1)
		}
		fmt.Fprintf(c.App.Writer, "%s: compliant\n", file)
		return nil
	}
	out, err := r.render(o)
	if err != nil {
		return cli.Exit("render-settings: "+err.Error(), 2)
	}
	c.App.Writer.Write(out)
	if !strings.HasSuffix(string(out), "\n") {
		fmt.Fprintln(c.App.Writer)
	}
	if fw == "claude" && o.OS == "linux" {
		// The settings may be meant for other hosts: said, not refused.
		for _, f := range settings.ClaudeSandboxTools(exec.LookPath) {
			fmt.Fprintln(c.App.ErrWriter, "render-settings: warning: "+f.String())
		}
	}
	return nil
}

func renderOpenCodePluginCommand() *cli.Command {
	return &cli.Command{
		Name:  "render-opencode-plugin",
		Usage: "print the OpenCode plugin (save it as .opencode/plugins/mitrity.js) whose tool.execute.before asks this hook",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "hook-path", Usage: "absolute path of mitrity-hook on the agent's host (default: this binary's)"},
		},
		Action: func(c *cli.Context) error {
			path := c.String("hook-path")
			if path == "" {
				p, err := hookPath()
				if err != nil {
					return cli.Exit("render-opencode-plugin: "+err.Error()+" (give --hook-path)", 2)
				}
				path = p
			}
			if err := framework.CheckHookPath(path); err != nil {
				return cli.Exit("render-opencode-plugin: "+err.Error(), 2)
			}
			c.App.Writer.Write(framework.OpenCodePlugin(path))
			return nil
		},
	}
}
