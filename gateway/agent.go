package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"

	"github.com/mitrity/mitrity/admission"
	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/agentlaunch"
	"github.com/mitrity/mitrity/govern/audit"
	"github.com/mitrity/mitrity/govern/cliapp"
	"github.com/mitrity/mitrity/govern/config"
	"github.com/mitrity/mitrity/govern/egress"
	"github.com/mitrity/mitrity/govern/hold"
	"github.com/mitrity/mitrity/govern/ownfiles"
	"github.com/mitrity/mitrity/govern/sandbox"
	"github.com/mitrity/mitrity/govern/servecmd"
	"github.com/mitrity/mitrity/govern/service"
	"github.com/mitrity/mitrity/govern/unixsock"
)

func agentCommand() *cli.Command {
	return &cli.Command{
		Name:      "agent",
		Usage:     "launch an agent framework (claude, codex, gemini, opencode) inside the layered sandbox: a clean environment, default-deny reads, the egress proxy as its only network, and its shell calls through the hook to the governed shell",
		ArgsUsage: "-- FRAMEWORK [ARGS...]",
		Description: "The framework's program and arguments follow --, untouched. The agent gets only the basic variables, those\n" +
			"agent_launch.env declares and those $AGENT_ISO_ALLOW names ($CLAUDE_ISO_ALLOW when it is not set); it sees the system\n" +
			"runtime, its install, its state directories and the workspace roots, and nothing else of the host; it reaches only\n" +
			"its allowlist (agent_launch.egress or its model API, and the policy's destinations) through the egress proxy. Its\n" +
			"profile must route shell calls to the governed shell. Exit status: the agent's own; 126 when it could not start.\n" +
			"See docs/agent.md.",
		Flags: []cli.Flag{
			configFlag,
			&cli.StringFlag{Name: "agent", Usage: "agent id the session runs as (default: the framework's: claude-code, codex, gemini-cli, opencode)"},
			&cli.StringFlag{Name: "framework", Usage: "claude, codex, gemini or opencode (default: told from the program's name)"},
			&cli.StringFlag{Name: "admin-dir", Usage: "directory of admin sockets (approvals reach a held call here)", Value: hold.DefaultDir()},
		},
		Action: runAgent,
	}
}

func runAgent(c *cli.Context) error {
	if c.NArg() == 0 {
		return cli.Exit("agent: no framework given; usage: mitrity-gateway agent [flags] -- claude [ARGS...]", 126)
	}
	logger := cliapp.Logger(c)
	if !c.IsSet("log-level") && logger.GetLevel() < zerolog.WarnLevel {
		// The agent's terminal is its own: the gateway says only what
		// needs saying there unless asked for more.
		logger = logger.Level(zerolog.WarnLevel)
	}
	cfg, err := loadConfig(c)
	if err != nil {
		return cli.Exit(err.Error(), 126)
	}
	svc, err := service.Open(cfg, logger, flagFiles(c)...)
	if err != nil {
		return cli.Exit(fmt.Sprintf("agent: %v", err), 126)
	}
	svc.SetVersion(version)
	defer svc.Close()
	l, err := newAgentLaunch(c, cfg, svc, logger)
	if err != nil {
		return cli.Exit("agent: "+err.Error(), 126)
	}
	defer l.cleanup()

	defer servecmd.ServeHolds(c, svc, "agent", logger)()
	// SIGINT and SIGQUIT are the agent's: a terminal sends them to the
	// whole foreground group, the sandbox included, and whatever ends the
	// agent, this process stays to write the session's end. Caught, not
	// ignored: an ignored signal would stay ignored in the agent.
	swallow := make(chan os.Signal, 1)
	signal.Notify(swallow, syscall.SIGINT, syscall.SIGQUIT)
	defer signal.Stop(swallow)
	go func() {
		for range swallow {
		}
	}()
	ctx, stop := signal.NotifyContext(c.Context, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	out, err := agentlaunch.Run(ctx, l.plan, l.deps)
	if err != nil {
		fmt.Fprintf(c.App.ErrWriter, "mitrity-gateway agent: %v\n", err)
	}
	if out.Result.Status != govern.StatusCompleted && out.Result.Message != "" {
		fmt.Fprintf(c.App.ErrWriter, "mitrity-gateway agent: the session %s: %s\n", out.Result.Status, out.Result.Message)
	}
	if out.ExitCode != 0 {
		return cli.Exit("", out.ExitCode)
	}
	return nil
}

// agentLaunch is one session being set up: its plan, what it runs with,
// and what to remove after it.
type agentLaunch struct {
	plan    *agentlaunch.Plan
	deps    agentlaunch.Deps
	sockDir string
	closers []func()
}

func (l *agentLaunch) cleanup() {
	for i := len(l.closers) - 1; i >= 0; i-- {
		l.closers[i]()
	}
	if l.sockDir != "" {
		os.RemoveAll(l.sockDir)
	}
}

// newAgentLaunch resolves who the agent runs as and where its home is,
// finds the sandbox's programs and the hook, and plans the session.
func newAgentLaunch(c *cli.Context, cfg *config.Config, svc *service.Service, logger zerolog.Logger) (*agentLaunch, error) {
	pol, err := service.LoadPolicy(cfg)
	if err != nil {
		return nil, err
	}
	cwd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	var runAs *sandbox.Identity
	var runAsName string
	home := cfg.AgentLaunch.Home
	if os.Geteuid() == 0 {
		// A root launcher never runs the agent as root: exec.run_as.
		u, err := user.Lookup(cfg.Exec.RunAs)
		if err != nil {
			return nil, fmt.Errorf("exec.run_as %q: %w", cfg.Exec.RunAs, err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if uid == 0 {
			return nil, fmt.Errorf("exec.run_as %q is root: the agent never runs as root", cfg.Exec.RunAs)
		}
		runAs, runAsName = &sandbox.Identity{UID: uint32(uid), GID: uint32(gid)}, u.Username
		if home == "" {
			home = filepath.Clean(u.HomeDir)
		}
	} else if home == "" {
		if h := os.Getenv("HOME"); filepath.IsAbs(h) {
			home = filepath.Clean(h)
		} else if home, err = agentlaunch.HomeOf(os.Geteuid()); err != nil {
			return nil, err
		}
	}
	helper := besideOrPath("mitrity-sandboxrun")
	if helper == "" {
		return nil, errors.New("mitrity-sandboxrun was not found next to the gateway or in PATH: the agent's sandbox cannot be built")
	}
	hook := besideOrPath("mitrity-hook")
	if hook == "" {
		return nil, errors.New("mitrity-hook was not found next to the gateway or in PATH: the agent's shell calls could not reach the gateway")
	}
	ctx, cancel := context.WithTimeout(c.Context, 20*time.Second)
	defer cancel()
	rep := sandbox.ProbeCached(ctx, govern.RuntimeDir(os.Geteuid(), os.Getenv), service.ProbeCacheTTL, sandbox.WithHelper(helper))
	for _, ch := range rep.Checks {
		if !ch.OK && ch.Name != sandbox.CheckCgroups && !(ch.Name == sandbox.CheckSeccomp && cfg.Exec.Sandbox.Seccomp != config.SeccompRequired) {
			return nil, fmt.Errorf("the agent's sandbox is unavailable (sandbox_unavailable): %s: %s", ch.Name, ch.Reason)
		}
	}
	// The session's own admission socket, in a directory of its own.
	rt, err := govern.MakeRuntimeDir(os.Geteuid(), os.Getenv)
	if err != nil {
		return nil, err
	}
	var b [6]byte
	rand.Read(b[:])
	l := &agentLaunch{sockDir: filepath.Join(rt, "agent-"+hex.EncodeToString(b[:]))}
	sock := filepath.Join(l.sockDir, "admission.sock")

	own := ownfiles.Of(cfg)
	own.Add(flagFiles(c)...)
	for _, p := range []string{selfPath(), helper, filepath.Join(filepath.Dir(helper), sandbox.InitName), hook, egress.FindBinary(), rep.BwrapPath} {
		own.Add(ownfiles.File{Path: p, Role: ownfiles.Executes})
	}
	plan, err := agentlaunch.Prepare(agentlaunch.Options{
		Config: cfg, Policy: pol, Agent: c.String("agent"), Framework: c.String("framework"),
		Argv: c.Args().Slice(), Environ: os.Environ(), Cwd: cwd, Home: home, RunAs: runAs,
		Hook: hook, Socket: sock, Render: agentlaunch.HookRenderer(hook),
		DenyPaths: own.Paths(ownfiles.Configures, ownfiles.Keeps), ReadOnlyPaths: own.Paths(ownfiles.Executes, ownfiles.Locates),
		Bwrap: sandbox.Bwrap{Path: rep.BwrapPath, Version: rep.BwrapVersion}, TTY: isTerminal(os.Stdin) || isTerminal(os.Stdout),
		Logger: logger,
	})
	if err != nil {
		return nil, err
	}
	l.plan = plan
	w, err := audit.OpenWriter(cfg.Audit.Path)
	if err != nil {
		return nil, err
	}
	l.closers = append(l.closers, func() { w.Close() })
	// The session's proxy logs its targets into this log, and its report
	// names the refused ones in the end event: the agent holds the values
	// its environment was given and can spell a destination with one, so
	// they are scrubbed, and so is every value the gateway knows, as in
	// the service's runs.
	scrub, err := plan.Env.Scrubber(svc.ScrubText)
	if err != nil {
		return nil, err
	}
	l.deps = agentlaunch.Deps{
		Helper: helper, ProxyPath: egress.FindBinary(), ProxyLog: egress.LogTo(logger, scrub), ProxyLevel: egress.LogLevel(logger), Scrub: scrub,
		Audit: w, Source: audit.DefaultSource(), LaunchedBy: os.Getuid(), Logger: logger,
		Stdio: sandbox.Stdio{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr},
		Serve: func(session string) (func(), error) {
			return serveSession(sock, runAsName, plan.Agent, session, svc, logger)
		},
	}
	return l, nil
}

// sessionBackend admits every call on a session's socket for the session's
// agent, whatever the hook says (the managed settings pin it too), and
// records it inside the session: its audit session is "<session>/<the
// framework's session id>".
type sessionBackend struct {
	admissionBackend
	agent, session string
}

func (b sessionBackend) Admit(ctx context.Context, uid int, req admission.AdmitRequest) (admission.AdmitResponse, error) {
	req.Agent = b.agent
	if req.SessionID == "" {
		req.SessionID = b.session
	} else {
		req.SessionID = b.session + "/" + req.SessionID
	}
	return b.admissionBackend.Admit(ctx, uid, req)
}

func (b sessionBackend) Redeem(ctx context.Context, uid int, req admission.RedeemRequest, out func(admission.Frame) error) (admission.Result, error) {
	req.Agent = b.agent
	return b.admissionBackend.Redeem(ctx, uid, req, out)
}

// serveSession serves the admission contract on sock for one session: 0600
// in a 0700 directory of its own, handed to runAs when the launcher is
// root (the agent runs as that user), and refusing the processes of every
// governed command's sandbox, as the gateway's own socket does.
func serveSession(sock, runAs, agent, session string, svc *service.Service, logger zerolog.Logger) (func(), error) {
	var opts unixsock.Options
	if runAs != "" {
		u, err := user.Lookup(runAs)
		if err != nil {
			return nil, err
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		opts.UIDs, opts.Owner = []int{uid}, &unixsock.Owner{UID: uid, GID: gid}
	}
	opts.Accept = sandbox.NotInSandbox
	inflight := &sync.WaitGroup{}
	b := sessionBackend{admissionBackend: admissionBackend{svc: svc, inflight: inflight}, agent: agent, session: session}
	srv, err := unixsock.Listen(sock, admission.Handler(b, unixsock.PeerUID, version), opts)
	if err != nil {
		return nil, err
	}
	logger.Debug().Str("socket", sock).Str("session", session).Msg("serving the agent session's admission socket")
	as := &admissionServer{srv: srv, inflight: inflight}
	return func() { as.shutdown(5 * time.Second) }, nil
}

// besideOrPath finds a program of ours beside this binary, else on PATH.
func besideOrPath(name string) string {
	if self := selfPath(); self != "" {
		p := filepath.Join(filepath.Dir(self), name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	if p, err := exec.LookPath(name); err == nil && filepath.IsAbs(p) {
		return p
	}
	return ""
}

func selfPath() string {
	p, err := os.Executable()
	if err != nil {
		return ""
	}
	return p
}

func isTerminal(f *os.File) bool { return isatty.IsTerminal(f.Fd()) }
