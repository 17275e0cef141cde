package main

import (
	"fmt"
	"os"
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
		Name:  "render-settings",
		Usage: "print the managed settings that install the hook (Claude Code: /etc/claude-code/managed-settings.json), or --check an existing file",
		Description: "The settings register `mitrity-hook claude` as the PreToolUse hook for Bash, keep Claude Code's own sandbox on\n" +
			"(allowUnsandboxedCommands: false, failIfUnavailable: true), ask before `git push` and each state-mutating `gh`\n" +
			"subcommand, allow the read-only ones, and deny the credential files. Under --routing the relay is given its one\n" +
			"way to the admission socket. --check FILE reports every drift from those rules and exits 1 when there is any.\n" +
			"See docs/frameworks.md.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "framework", Value: "claude", Usage: "the framework: claude"},
			&cli.StringFlag{Name: "os", Value: runtime.GOOS, Usage: "linux or darwin"},
			&cli.StringFlag{Name: "hook-path", Usage: "absolute path of mitrity-hook on the agent's host (default: this binary's)"},
			&cli.StringFlag{Name: "socket", Usage: "the admission socket, pinned in the settings' env (default: left to the hook's own default)"},
			&cli.BoolFlag{Name: "routing", Usage: "the profile routes Bash to the governed shell (builtin_exec_routing: governed_shell)"},
			&cli.IntFlag{Name: "hook-timeout", Usage: "seconds Claude Code waits for the hook; must outlast a held call (the profile's hold.timeout_seconds)"},
			&cli.StringFlag{Name: "check", Usage: "audit this settings file instead of printing settings"},
		},
		Action: runRenderSettings,
	}
}

func runRenderSettings(c *cli.Context) error {
	if fw := c.String("framework"); fw != "claude" {
		return cli.Exit(fmt.Sprintf("render-settings: --framework %q: only claude has managed settings; see docs/frameworks.md for codex, gemini and opencode", fw), 2)
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
	if sock == "" && c.Bool("routing") && c.String("os") == "darwin" {
		// macOS names the one socket the relay may reach.
		sock = govern.AdmissionSocket(os.Geteuid(), os.Getenv)
	}
	o := settings.Options{OS: c.String("os"), HookPath: path, Socket: sock, Routing: c.Bool("routing"),
		HookTimeoutSeconds: c.Int("hook-timeout")}
	if file := c.String("check"); file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return cli.Exit("render-settings --check: "+err.Error(), 2)
		}
		findings := settings.CheckClaude(data, o)
		for _, f := range findings {
			fmt.Fprintln(c.App.Writer, f.String())
		}
		if len(findings) > 0 {
			return cli.Exit(fmt.Sprintf("render-settings --check: %s: %d finding(s)", file, len(findings)), 1)
		}
		fmt.Fprintf(c.App.Writer, "%s: compliant\n", file)
		return nil
	}
	out, err := settings.RenderClaude(o)
	if err != nil {
		return cli.Exit("render-settings: "+err.Error(), 2)
	}
	c.App.Writer.Write(out)
	if !strings.HasSuffix(string(out), "\n") {
		fmt.Fprintln(c.App.Writer)
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
