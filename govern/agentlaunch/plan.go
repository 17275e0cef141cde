package agentlaunch

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rs/zerolog"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/config"
	"github.com/mitrity/mitrity/govern/egress"
	"github.com/mitrity/mitrity/govern/policy"
	"github.com/mitrity/mitrity/govern/sandbox"
)

// Paths inside the agent's sandbox (under its private /run): the hook
// binary the framework's managed settings name, and the session's
// admission socket, which the hook and its relay reach.
const (
	InsideHook   = sandbox.InsideRun + "/bin/mitrity-hook"
	InsideSocket = sandbox.InsideRun + "/admission.sock"
)

// SystemPaths are the system's read-only runtime, as the host has it (a
// merged-/usr host's /bin, /lib... are symlinks, made the same inside).
var SystemPaths = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// SystemEtc are the entries of /etc a program needs to run: users and
// groups, name service and resolver settings, the dynamic loader's cache,
// CA certificates, time zone, Debian's alternatives (the link farm many
// /usr/bin programs go through), the OS release, terminal and shell
// defaults, git's system config. Nothing else of /etc is there (no
// shadow, sudoers, ssh host keys, TLS private keys, the gateway's config).
var SystemEtc = []string{
	"passwd", "group", "nsswitch.conf", "host.conf", "hosts", "resolv.conf", "gai.conf", "services", "protocols",
	"ld.so.cache", "ld.so.conf", "ld.so.conf.d",
	"ssl/certs", "ssl/openssl.cnf", "ca-certificates", "ca-certificates.conf", "pki/tls/certs", "pki/ca-trust", "crypto-policies",
	"localtime", "timezone", "alternatives", "os-release", "lsb-release", "debian_version",
	"mime.types", "magic", "inputrc", "terminfo", "bash.bashrc", "profile", "gitconfig",
}

// Renderer renders fw's managed settings (or OpenCode's plugin) for a
// session whose hook is hook and whose admission socket is socket, both
// paths inside the sandbox, for agent.
type Renderer func(fw Framework, hook, socket, agent string) ([]byte, error)

// Options are what Prepare plans a session from.
type Options struct {
	Config *config.Config
	Policy *policy.Policy
	// Agent is the agent id; "" is the framework's default.
	Agent string
	// Framework names it; "" tells it from the program.
	Framework string
	// Argv is the framework's command line: its program, then its
	// arguments, passed on untouched.
	Argv []string
	// Environ is the launcher's environment, which Prepare strips.
	Environ []string
	// Cwd is the project: inside a workspace root of the agent's profile.
	Cwd string
	// Home is the agent's home (agent_launch.home, else the user's).
	Home string
	// RunAs is the user a root launcher runs the agent as.
	RunAs *sandbox.Identity
	// Hook is mitrity-hook on the host; Socket the session's admission
	// socket on the host (made by the caller before the agent starts).
	Hook, Socket string
	Render       Renderer
	// Own are the gateway's own files: masked (DenyPaths) and kept
	// read-only (ReadOnlyPaths) as in every run.
	DenyPaths, ReadOnlyPaths []string
	Bwrap                    sandbox.Bwrap
	TTY                      bool
	Logger                   zerolog.Logger
}

// Plan is one agent session, decided: what runs, seen how, reaching what.
type Plan struct {
	Framework Framework
	Agent     string
	Program   Program
	Env       FilteredEnv
	// Allowlist is the agent process's own egress allowlist.
	Allowlist []string
	Egress    egress.Config
	Routing   policy.Routing
	// Spec is the sandbox's, but for its ProxySocket (the session's proxy
	// is started when the session is).
	Spec *sandbox.Spec
}

// Errors Prepare refuses a session with.
var (
	ErrRouting   = errors.New("the agent's profile must route shell calls to the governed shell")
	ErrFramework = errors.New("unknown agent framework")
)

// Prepare decides the session: the framework and its program, the
// environment, the allowlist, and the sandbox's spec. It starts nothing.
func Prepare(o Options) (*Plan, error) {
	if len(o.Argv) == 0 {
		return nil, errors.New("no framework program given")
	}
	env := FilterEnv(o.Environ, o.Config.AgentLaunch.Env, o.Logger)
	path := lookup(env.Env, "PATH")
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	prog, err := FindProgram(o.Argv[0], path)
	if err != nil {
		return nil, err
	}
	fw, ok := FrameworkNamed(o.Framework)
	if o.Framework == "" {
		fw, ok = FrameworkOf(o.Argv[0], prog.Path)
	}
	if !ok {
		return nil, fmt.Errorf("%w: %q (want claude, codex, gemini or opencode; name it with --framework)", ErrFramework, firstNonEmpty(o.Framework, filepath.Base(o.Argv[0])))
	}
	agent := firstNonEmpty(o.Agent, fw.Agent)
	grants, profile := o.Policy.ForAgent(agent)
	// Under any other routing the framework would run the model's
	// commands itself, here, where its own sandbox cannot start (nested
	// user namespaces are refused) and the admission socket is in reach.
	if profile.BuiltinExecRouting != policy.RoutingGovernedShell {
		return nil, fmt.Errorf("%w: agent %s has profile %s with builtin_exec_routing: %s (set governed_shell: every shell call of the agent then runs in the governed shell's own sandbox)",
			ErrRouting, agent, profile.Name, firstNonEmpty(string(profile.BuiltinExecRouting), string(policy.RoutingFramework)))
	}
	if !o.Config.Exec.Enabled {
		return nil, errors.New("exec.enabled is false: the agent's routed shell calls would have nowhere to run")
	}
	if !filepath.IsAbs(o.Home) || filepath.Clean(o.Home) != o.Home || o.Home == "/" {
		return nil, fmt.Errorf("the agent's home %q is not a clean absolute path", o.Home)
	}
	roots := profile.WorkspaceRoots.Resolve(o.Config.Exec.DefaultCwd)
	cwd, err := filepath.EvalSymlinks(o.Cwd)
	if err != nil {
		return nil, fmt.Errorf("the project %s: %w", o.Cwd, err)
	}
	if !slices.ContainsFunc(roots, func(r string) bool {
		rr, err := filepath.EvalSymlinks(r)
		return err == nil && within(rr, cwd)
	}) {
		return nil, fmt.Errorf("the project %s is outside every workspace root of agent %s (%s): its shell calls could not run there (cwd_outside_workspace)",
			o.Cwd, agent, strings.Join(roots, ", "))
	}

	allow, err := allowlist(o.Config.AgentLaunch, fw, grants.Destinations)
	if err != nil {
		return nil, err
	}
	ss, err := session(o, fw, prog)
	if err != nil {
		return nil, err
	}
	spec := &sandbox.Spec{
		Argv: append([]string{prog.Path}, o.Argv[1:]...), Env: agentEnv(env, o, fw, agent, path),
		Cwd: cwd, WorkspaceRoots: roots,
		DenyPaths: append(slices.Clone(o.DenyPaths), profile.ExtraDenyPaths...), ReadOnlyPaths: o.ReadOnlyPaths,
		// The agent's home is a home: its credential stores are masked
		// wherever they are visible (agent_launch.home need not be in
		// /etc/passwd).
		DenyHomes: []string{o.Home},
		Seccomp:   sandbox.SeccompMode(o.Config.Exec.Sandbox.Seccomp),
		// The session's own bounds: its /tmp and the largest file it may
		// write. No memory or process bound: those are a command's, and an
		// agent with its tools and servers is many of them for hours.
		Limits: sandbox.Limits{TmpfsBytes: o.Config.Exec.Limits.TmpfsBytes, FileSizeBytes: o.Config.Exec.Limits.FileSizeBytes},
		RunAs:  o.RunAs, Bwrap: o.Bwrap, Session: ss,
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	return &Plan{Framework: fw, Agent: agent, Program: prog, Env: env, Allowlist: allow, Routing: profile.BuiltinExecRouting,
		Egress: egressConfig(o.Config, allow), Spec: spec}, nil
}

// allowlist is the agent's own: agent_launch.egress (else the
// framework's model API), and the policy's destinations for the agent,
// each once, canonical.
func allowlist(al config.AgentLaunch, fw Framework, granted []string) ([]string, error) {
	base := fw.ModelHosts
	if al.EgressSet {
		base = al.Egress
	}
	var out []string
	for _, raw := range append(slices.Clone(base), granted...) {
		e, err := egress.ParseEntry(raw)
		if err != nil {
			return nil, fmt.Errorf("the agent's egress allowlist: %w", err)
		}
		if s := e.String(); !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

// egressConfig is the host's exec.egress with the agent's allowlist.
func egressConfig(cfg *config.Config, allow []string) egress.Config {
	eg := egress.Config{Allow: allow, DeniedCIDRs: cfg.Exec.Egress.DeniedCIDRs, AllowedPrivateCIDRs: cfg.Exec.Egress.AllowedPrivateCIDRs,
		AllowedPorts: make([]uint16, 0, len(cfg.Exec.Egress.AllowedPorts))}
	for _, p := range cfg.Exec.Egress.AllowedPorts {
		eg.AllowedPorts = append(eg.AllowedPorts, uint16(p))
	}
	return eg
}

// session is the sandbox's session posture for fw's program prog.
func session(o Options, fw Framework, prog Program) (*sandbox.Session, error) {
	ss := &sandbox.Session{Private: []string{o.Home, "/var/tmp"}, Sealed: []string{"/etc"}, TTY: o.TTY, RootInside: fw.RootOwnedSettings}
	ss.ReadOnly = append(ss.ReadOnly, SystemPaths...)
	for _, e := range SystemEtc {
		ss.ReadOnly = append(ss.ReadOnly, "/etc/"+e)
	}
	visible := func(p string) bool {
		return slices.ContainsFunc(ss.ReadOnly, func(r string) bool { return within(r, p) && !strings.HasPrefix(r, "/etc/") })
	}
	for _, p := range append(slices.Clone(prog.Install), o.Config.AgentLaunch.ReadPaths...) {
		if !visible(p) {
			ss.ReadOnly = append(ss.ReadOnly, p)
		}
	}
	for _, d := range fw.StateDirs {
		ss.StateDirs = append(ss.StateDirs, filepath.Join(o.Home, d))
	}
	ss.StateDirs = append(ss.StateDirs, o.Config.AgentLaunch.WritePaths...)
	for _, f := range fw.StateFiles {
		ss.StateFiles = append(ss.StateFiles, sandbox.StateFile{Path: filepath.Join(o.Home, f.Path), Init: f.Init})
	}
	if o.Render == nil {
		return nil, errors.New("no renderer for the framework's managed settings")
	}
	data, err := o.Render(fw, InsideHook, InsideSocket, firstNonEmpty(o.Agent, fw.Agent))
	if err != nil {
		return nil, fmt.Errorf("the %s settings for the session: %w", fw.Name, err)
	}
	switch {
	case fw.Managed != "":
		ss.Files = append(ss.Files, sandbox.DataFile{Path: fw.Managed, Data: data})
	case fw.ConfigDir != "":
		// The directory is the framework's to write (OpenCode keeps a
		// package.json and its plugins' modules there): private, with the
		// plugin read-only in it.
		ss.Private = append(ss.Private, fw.ConfigDir)
		ss.Files = append(ss.Files, sandbox.DataFile{Path: fw.ConfigDir + "/plugins/mitrity.js", Data: data})
	}
	if o.Hook == "" || o.Socket == "" {
		return nil, errors.New("the session needs mitrity-hook and its admission socket")
	}
	ss.Binds = []sandbox.FileBind{{Source: o.Hook, Path: InsideHook}, {Source: o.Socket, Path: InsideSocket}}
	return ss, nil
}

// agentEnv is the agent's environment: what the filter passed, with the
// home, the path, and what the launcher sets itself.
func agentEnv(f FilteredEnv, o Options, fw Framework, agent, path string) []string {
	set := map[string]string{
		"HOME": o.Home, "PATH": path,
		govern.AdmissionSocketVar: InsideSocket,
		"MITRITY_AGENT":           agent,
	}
	if fw.ConfigDirEnv != "" {
		set[fw.ConfigDirEnv] = fw.ConfigDir
	}
	var out []string
	for _, kv := range f.Env {
		name, _, _ := strings.Cut(kv, "=")
		if _, ok := set[name]; !ok {
			out = append(out, kv)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(set)) {
		out = append(out, k+"="+set[k])
	}
	return out
}

func lookup(env []string, name string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// within reports whether p is root or below it, lexically.
func within(root, p string) bool {
	return p == root || strings.HasPrefix(p, strings.TrimSuffix(root, "/")+"/")
}

// HomeOf is the home of the user with uid in /etc/passwd.
func HomeOf(uid int) (string, error) {
	b, err := os.ReadFile("/etc/passwd")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(line, ":")
		if len(f) >= 6 && f[2] == fmt.Sprint(uid) && filepath.IsAbs(f[5]) {
			return filepath.Clean(f[5]), nil
		}
	}
	return "", fmt.Errorf("uid %d has no home in /etc/passwd", uid)
}
