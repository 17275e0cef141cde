package agentlaunch

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Framework is what the launcher knows of one agent framework: how to
// tell it from its program, where it keeps its state under the home, the
// model API it talks to, and where its managed settings go.
type Framework struct {
	// Name is claude, codex, gemini or opencode: the hook's subcommand.
	Name string
	// Agent is the agent id the hook uses for it by default.
	Agent string
	// Programs are the basenames its program goes by.
	Programs []string
	// StateDirs and StateFiles are its configuration and state, relative
	// to the home: writable in its sandbox, and the only part of the home
	// it sees. A missing file is made holding its Init.
	StateDirs  []string
	StateFiles []StateFile
	// ModelHosts are its model API's destinations, when agent_launch.egress
	// names none.
	ModelHosts []string
	// Managed is where its managed settings go inside the sandbox, which
	// the launcher renders for the session (see Render); "" for OpenCode,
	// whose plugin goes in ConfigDir instead.
	Managed string
	// ConfigDir, with ConfigDirEnv, is an extra configuration directory
	// the launcher provides inside the sandbox (OpenCode's
	// OPENCODE_CONFIG_DIR, where its plugin is loaded from).
	ConfigDir, ConfigDirEnv string
	// RootOwnedSettings: the framework reads its managed settings only
	// when they and every directory above them belong to uid 0 (Gemini
	// CLI skips them otherwise, and its hook with them), so it runs as uid
	// 0 of its sandbox's user namespace (sandbox.Session.RootInside).
	RootOwnedSettings bool
}

// StateFile is a state file relative to the home.
type StateFile struct {
	Path string
	Init []byte
}

// Frameworks are the four the hook serves.
var Frameworks = []Framework{
	{
		Name: "claude", Agent: "claude-code", Programs: []string{"claude", "claude.exe"},
		StateDirs: []string{".claude"},
		// Claude Code writes it in place when it cannot rename over it (a
		// bind mount); "{}" is a fresh one, which it fills in.
		StateFiles: []StateFile{{Path: ".claude.json", Init: []byte("{}\n")}},
		ModelHosts: []string{"api.anthropic.com:443"},
		Managed:    "/etc/claude-code/managed-settings.json",
	},
	{
		Name: "codex", Agent: "codex", Programs: []string{"codex", "codex.js"},
		StateDirs:  []string{".codex"},
		ModelHosts: []string{"api.openai.com:443", "chatgpt.com:443"},
		Managed:    "/etc/codex/requirements.toml",
	},
	{
		Name: "gemini", Agent: "gemini-cli", Programs: []string{"gemini", "gemini.js"},
		StateDirs:         []string{".gemini"},
		RootOwnedSettings: true,
		ModelHosts:        []string{"generativelanguage.googleapis.com:443"},
		Managed:           "/etc/gemini-cli/settings.json",
	},
	{
		Name: "opencode", Agent: "opencode", Programs: []string{"opencode", "opencode.exe"},
		StateDirs: []string{".config/opencode", ".local/share/opencode", ".local/state/opencode", ".cache/opencode"},
		// OpenCode talks to whichever provider it is configured for: name
		// it in agent_launch.egress.
		ConfigDir: "/run/mitrity/opencode", ConfigDirEnv: "OPENCODE_CONFIG_DIR",
	},
}

// FrameworkNamed returns the framework called name.
func FrameworkNamed(name string) (Framework, bool) {
	for _, f := range Frameworks {
		if f.Name == name {
			return f, true
		}
	}
	return Framework{}, false
}

// FrameworkOf tells the framework from a program's path (as given, or
// resolved): by its basename.
func FrameworkOf(paths ...string) (Framework, bool) {
	for _, p := range paths {
		base := filepath.Base(p)
		for _, f := range Frameworks {
			if slices.Contains(f.Programs, base) {
				return f, true
			}
		}
	}
	return Framework{}, false
}

// Program is the framework's program as found on the host.
type Program struct {
	// Path is absolute and resolved: what the sandbox execs.
	Path string
	// Install are the host paths the program needs to run, read-only: its
	// package (the outermost node_modules it is in, else the file alone),
	// and its interpreter's when it is a script.
	Install []string
}

// FindProgram looks name up as a shell would (a name with a slash is a
// path; any other is searched on path, the agent's $PATH) and resolves it
// and what it needs to run.
func FindProgram(name, path string) (Program, error) {
	p, err := lookPath(name, path)
	if err != nil {
		return Program{}, err
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return Program{}, fmt.Errorf("%s: %w", name, err)
	}
	prog := Program{Path: real, Install: []string{installOf(real)}}
	interp, err := interpreter(real, path)
	if err != nil {
		return Program{}, err
	}
	if interp != "" {
		if i := installOf(interp); !slices.Contains(prog.Install, i) {
			prog.Install = append(prog.Install, i)
		}
	}
	return prog, nil
}

func lookPath(name, path string) (string, error) {
	if strings.Contains(name, "/") {
		abs, err := filepath.Abs(name)
		if err != nil {
			return "", err
		}
		if err := executable(abs); err != nil {
			return "", fmt.Errorf("%s: %w", name, err)
		}
		return abs, nil
	}
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue // a relative PATH entry means something else in the sandbox
		}
		p := filepath.Join(dir, name)
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %w in the agent's PATH", name, exec.ErrNotFound)
}

func executable(p string) error {
	fi, err := os.Stat(p)
	switch {
	case err != nil:
		return err
	case !fi.Mode().IsRegular():
		return errors.New("not a regular file")
	case fi.Mode().Perm()&0o111 == 0:
		return errors.New("not executable")
	}
	return nil
}

// installOf is what of the host a program at real needs: the outermost
// node_modules directory above it (an npm install: the framework's
// package and the packages it loads, its native binary among them), else
// the file itself (a native installer's single binary).
func installOf(real string) string {
	out := real
	for d := filepath.Dir(real); d != "/" && d != "."; d = filepath.Dir(d) {
		if filepath.Base(d) == "node_modules" {
			out = d
		}
	}
	return out
}

// interpreter is the resolved program a script at real names on its #!
// line (through /usr/bin/env NAME, searched on path), or "" for a binary.
func interpreter(real, path string) (string, error) {
	f, err := os.Open(real)
	if err != nil {
		return "", err
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	rest, ok := strings.CutPrefix(line, "#!")
	if !ok {
		return "", nil
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return "", fmt.Errorf("%s: an empty #! line", real)
	}
	prog := fields[0]
	if filepath.Base(prog) == "env" {
		args := slices.DeleteFunc(fields[1:], func(a string) bool { return strings.HasPrefix(a, "-") })
		if len(args) == 0 {
			return "", fmt.Errorf("%s: #!%s names no program", real, strings.TrimSpace(rest))
		}
		if prog, err = lookPath(args[0], path); err != nil {
			return "", fmt.Errorf("%s runs %s: %w", real, args[0], err)
		}
	}
	r, err := filepath.EvalSymlinks(prog)
	if err != nil {
		return "", fmt.Errorf("%s runs %s: %w", real, prog, err)
	}
	return r, nil
}
