package service

import (
	"fmt"
	"maps"
	"os"
	"os/user"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/mitrity/mitrity/govern/audit"
	"github.com/mitrity/mitrity/govern/config"
	"github.com/mitrity/mitrity/govern/egress"
	"github.com/mitrity/mitrity/govern/executor"
	"github.com/mitrity/mitrity/govern/intel"
	"github.com/mitrity/mitrity/govern/notify"
	"github.com/mitrity/mitrity/govern/ownfiles"
	"github.com/mitrity/mitrity/govern/pipeline"
	"github.com/mitrity/mitrity/govern/plan"
	"github.com/mitrity/mitrity/govern/policy"
	"github.com/mitrity/mitrity/govern/sandbox/settings"
	"github.com/mitrity/mitrity/govern/upstream"
	"github.com/mitrity/mitrity/govern/yamlfile"
)

// LoadPolicy reads the config's policy file, or the embedded default.
func LoadPolicy(cfg *config.Config) (*policy.Policy, error) {
	if cfg.Policy == "" {
		return policy.Default(), nil
	}
	return policy.Load(cfg.Policy)
}

// Open builds a Service from a validated config: policy, pipeline (rules
// compiled), executor, audit writer and notifier. Close releases them.
// The gateway refuses to run commands it cannot audit, so an audit file
// that cannot be opened is an error here. extra are the gateway's own
// files that its flags name (a token file, the admin socket directory):
// like the config's, no run may see them, and those that configure the
// gateway must be out of every run's reach (CheckOwnFiles).
func Open(cfg *config.Config, logger zerolog.Logger, extra ...ownfiles.File) (*Service, error) {
	// The service first (no side effect): its generations' proxies log
	// with what it knows scrubbed.
	svc := New(Deps{Config: cfg, Logger: logger})
	g, err := build(cfg, logger, extra, &svc.known, executor.NewSlots(cfg.Exec.Limits.MaxConcurrent))
	if err != nil {
		return nil, err
	}
	w, err := audit.OpenWriter(cfg.Audit.Path)
	if err != nil {
		g.close()
		return nil, err
	}
	svc.audit = w
	w.OnReopen = func(cause audit.ReopenCause, err error) {
		if err != nil {
			logger.Error().Err(err).Str("cause", cause.String()).Str("path", cfg.Audit.Path).Msg("the audit log could not be opened again: every call is refused (audit_unavailable) until it can")
		} else if cause != audit.ReopenRequested {
			logger.Warn().Str("cause", cause.String()).Str("path", cfg.Audit.Path).Msg("the audit log's path no longer named the file being written (rotated, replaced or deleted): a new file was started there")
		} else {
			logger.Info().Str("path", cfg.Audit.Path).Msg("audit log reopened")
		}
		svc.metrics.AuditReopened(cause.String())
	}
	svc.extra = extra
	svc.known.readable(cfg)
	svc.gen.Store(g)
	svc.probed = time.Now() // build just probed
	return svc, nil
}

// resolveRunAs is the user a root gateway runs commands as; nil for a
// gateway that is not root (its commands run as itself).
func resolveRunAs(cfg *config.Config) (runAs *plan.User, home string, err error) {
	if os.Geteuid() != 0 {
		return nil, "", nil
	}
	// Config validation requires run_as for a root gateway whose shell is
	// enabled; without the shell it is needed all the same.
	if cfg.Exec.RunAs == "" {
		return nil, "", cfg.Loc("exec.run_as").Errorf("required when the gateway runs as root: what it runs for agents never runs as root")
	}
	u, err := user.Lookup(cfg.Exec.RunAs)
	if err != nil {
		return nil, "", fmt.Errorf("exec.run_as %q: %w", cfg.Exec.RunAs, err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	if uid == 0 {
		return nil, "", fmt.Errorf("exec.run_as %q is root: agent commands never run as root", cfg.Exec.RunAs)
	}
	return &plan.User{UID: uint32(uid), GID: uint32(gid), Name: u.Username}, u.HomeDir, nil
}

// build makes a generation from cfg; its
// slots bound its runs at once: every generation of one service shares
// them, so a reload does not grant a fresh set beside runs still holding
// the last one's.
func build(cfg *config.Config, logger zerolog.Logger, extra []ownfiles.File, k *known, slots *executor.Slots, opts ...pipeline.Option) (*generation, error) {
	g, err := assemble(cfg, logger, extra, k, opts...)
	if err != nil {
		return nil, err
	}
	g.slots = slots
	g.setBackend(selectBackend(cfg, g.place))
	return g, nil
}

// Preflight builds from cfg what a start builds, and refuses what a start
// refuses: the policy, the run_as user, the placement of the gateway's own
// files, the threat-intel feed, the compiled rules, the notifier and the
// sandbox settings file. It then releases them; it opens no audit log and
// probes no sandbox. `validate` runs it, so that what it passes a start
// does not refuse. extra are the files the start's flags would name.
func Preflight(cfg *config.Config, extra ...ownfiles.File) (*policy.Policy, error) {
	g, err := assemble(cfg, zerolog.Nop(), extra, nil)
	if err != nil {
		return nil, err
	}
	g.close()
	return g.pipe.Policy(), nil
}

// checkCAFiles reads every url upstream's tls.ca_file as its client will:
// one that cannot be used refuses the start (and the reload), naming the
// field, instead of leaving the upstream unable to connect.
func checkCAFiles(cfg *config.Config) error {
	errs := &yamlfile.Errors{}
	for _, name := range slices.Sorted(maps.Keys(cfg.Upstreams)) {
		u := cfg.Upstreams[name]
		if u.Stdio() || u.TLS.CAFile == "" {
			continue
		}
		if _, err := upstream.CAPool(u.TLS.CAFile); err != nil {
			errs.Add(cfg.Loc(yamlfile.Key("upstreams", name)+".tls.ca_file").Errorf("%v", err))
		}
	}
	if err := errs.Err(); err != nil {
		return fmt.Errorf("invalid configuration, refusing to start:\n%w", err)
	}
	return nil
}

// assemble is build without the sandbox backend; k (nil for Preflight,
// which runs nothing) is what the generation's proxies' logs are scrubbed of.
func assemble(cfg *config.Config, logger zerolog.Logger, extra []ownfiles.File, k *known, opts ...pipeline.Option) (*generation, error) {
	pol, err := LoadPolicy(cfg)
	if err != nil {
		return nil, err
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		home = cfg.Exec.DefaultCwd
	}
	runAs, runHome, err := resolveRunAs(cfg)
	if err != nil {
		return nil, err
	}
	if runAs != nil {
		home = runHome
	}
	// Nothing a run can write may configure the gateway: checked before
	// anything is started, so a refused file is never read for a call.
	own := ownFiles(cfg, extra)
	place := placement(cfg, pol, runAs)
	if err := place.Check(own); err != nil {
		return nil, fmt.Errorf("the gateway's own files are within reach of the commands it runs, refusing to start:\n%w", err)
	}
	if err := checkCAFiles(cfg); err != nil {
		return nil, err
	}
	g := &generation{cfg: cfg, home: home, runAs: runAs, own: own, place: place, proxyLog: logger, proxyKnown: k,
		scrub: own.Scrubber(ownfiles.WritableRoots(cfg, pol))}
	if cfg.ThreatIntel.Feed != "" {
		feed, err := intel.NewWatcher(cfg.ThreatIntel.Feed, time.Duration(cfg.ThreatIntel.ReloadSeconds)*time.Second, logger)
		if err != nil {
			return nil, fmt.Errorf("threat_intel.feed: %w", err)
		}
		g.closers = append(g.closers, feed.Close)
		opts = append(opts, pipeline.WithIntel(feed))
	}
	if g.pipe, err = pipeline.New(cfg, pol, home, opts...); err != nil {
		g.close()
		return nil, fmt.Errorf("policy %s: %w", pol.File, err)
	}
	var nopts []notify.Option
	if cfg.Notifications.Webhook.URL != "" {
		nopts = append(nopts, notify.WithWebhook(cfg.Notifications.Webhook.URL, time.Duration(cfg.Notifications.Webhook.TimeoutSeconds)*time.Second))
	}
	nlog := logger
	if !cfg.Notifications.Log {
		nlog = zerolog.Nop()
	}
	if g.notifier, err = notify.New(nlog, nopts...); err != nil {
		g.close()
		return nil, fmt.Errorf("notifications: %w", err)
	}
	if f := cfg.Exec.Sandbox.SettingsFile; f != "" && cfg.Exec.Enabled {
		// Validation saw the file exists; what it promises must also
		// parse, or nothing runs.
		if g.settings, err = settings.Load(f); err != nil {
			g.close()
			return nil, fmt.Errorf("exec.sandbox.settings_file: %w", err)
		}
	}
	return g, nil
}

// setBackend makes b the generation's sandbox, with the executor that
// runs in it.
func (g *generation) setBackend(b backend) {
	g.backend = b
	g.backend.sandbox.Narrowing = g.settings.Narrowing()
	// The gateway's own files are unreadable inside the sandbox, whatever
	// they resolve to; its programs, and the places a gateway looks for its
	// config, are read-only even inside a workspace root (a checkout's
	// bin/, a home's ~/.config/mitrity).
	own := append(slices.Clone(g.own), b.helpers...)
	g.backend.sandbox.DenyPaths = own.Paths(ownfiles.Configures, ownfiles.Keeps)
	g.backend.sandbox.ReadOnlyPaths = own.Paths(ownfiles.Executes, ownfiles.Locates)
	// The proxy enforces the host's egress settings in mode none too.
	xopts := []executor.Option{executor.WithEgressSettings(egressConfig(g.cfg)),
		// Each run's proxy logs its decisions into the gateway's log.
		executor.WithEgressProxyLog(egress.LogTo(g.proxyLog, g.proxyKnown.scrub), egress.LogLevel(g.proxyLog))}
	if g.backend.available {
		xopts = append(xopts, executor.WithSandbox(g.backend.sandbox))
	}
	if g.slots != nil {
		xopts = append(xopts, executor.WithSlots(g.slots))
	}
	g.exec = executor.New(g.cfg.Exec.Limits.MaxConcurrent, xopts...)
}

func (g *generation) close() {
	for _, c := range g.closers {
		_ = c()
	}
}

// Reload replaces the configuration, policy, sandbox choice and
// credentials with those of cfg, validated and built whole before anything
// changes; on error the running generation stays. Calls in flight finish
// under the generation they started with; held calls keep waiting in the
// same approval queue. What is bound at start (the audit log, the
// admission socket, the admin listener) cannot change this way: a cfg that
// changes it is refused, naming the field.
func (s *Service) Reload(cfg *config.Config, logger zerolog.Logger) error {
	s.reload.Lock()
	defer s.reload.Unlock()
	old := s.gen.Load()
	var fixed []string
	if cfg.Audit.Path != old.cfg.Audit.Path {
		fixed = append(fixed, "audit.path")
	}
	if !reflect.DeepEqual(cfg.Admission, old.cfg.Admission) {
		fixed = append(fixed, "admission")
	}
	if cfg.Admin != old.cfg.Admin {
		fixed = append(fixed, "admin")
	}
	if cfg.Exec.Enabled != old.cfg.Exec.Enabled {
		fixed = append(fixed, "exec.enabled") // the MCP tool list is announced at start
	}
	if !reflect.DeepEqual(cfg.Upstreams, old.cfg.Upstreams) {
		fixed = append(fixed, "upstreams") // each is a process or a connection made at start
	}
	if len(fixed) > 0 {
		return fmt.Errorf("%s changed: restart the gateway to apply it; nothing was reloaded", strings.Join(fixed, ", "))
	}
	g, err := build(cfg, logger, s.extra, &s.known, old.slots, pipeline.WithHolds(old.pipe.Holds()))
	if err != nil {
		return err
	}
	if g.notifier != nil {
		g.notifier.ShareRates(old.notifier) // once an hour per key, across reloads too
	}
	s.known.readable(cfg)
	s.gen.Store(g)
	if g.slots != nil {
		// The new bound from now on; runs of the last generation keep
		// their slots and count against it.
		g.slots.SetLimit(cfg.Exec.Limits.MaxConcurrent)
	}
	s.probed = time.Now()
	// The old feed watcher stops; calls still running under the old
	// generation keep the feed it last loaded.
	old.close()
	s.repin()
	return nil
}

// Config is the configuration in force.
func (s *Service) Config() *config.Config { return s.gen.Load().cfg }

// Pipeline is the service's pipeline (its hold queue is served on the
// admin socket, and survives reloads).
func (s *Service) Pipeline() *pipeline.Pipeline { return s.gen.Load().pipe }

// Close expires waiting tickets, stops the feed watcher and closes the
// audit log.
// ReopenAudit opens the audit log's path afresh (SIGHUP, after logrotate
// has renamed the file).
func (s *Service) ReopenAudit() error {
	if s.audit == nil {
		return ErrNoAuditLog
	}
	return s.audit.Reopen()
}

func (s *Service) Close() error {
	// Tickets still waiting get their never-ran events while the audit
	// log is open.
	s.tickets.Close()
	s.closeUpstreams()
	s.gen.Load().close()
	if s.audit == nil {
		return nil
	}
	return s.audit.Close()
}
