package service

import (
	"fmt"
	"os"
	"os/user"
	"strconv"
	"time"

	"github.com/rs/zerolog"

	"github.com/mitrity/mitrity/govern/audit"
	"github.com/mitrity/mitrity/govern/config"
	"github.com/mitrity/mitrity/govern/executor"
	"github.com/mitrity/mitrity/govern/intel"
	"github.com/mitrity/mitrity/govern/notify"
	"github.com/mitrity/mitrity/govern/pipeline"
	"github.com/mitrity/mitrity/govern/plan"
	"github.com/mitrity/mitrity/govern/policy"
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
// that cannot be opened is an error here.
func Open(cfg *config.Config, logger zerolog.Logger, opts ...pipeline.Option) (*Service, error) {
	pol, err := LoadPolicy(cfg)
	if err != nil {
		return nil, err
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		home = cfg.Exec.DefaultCwd
	}
	var runAs *plan.User
	if os.Geteuid() == 0 {
		// Config validation already requires run_as for a root gateway.
		u, err := user.Lookup(cfg.Exec.RunAs)
		if err != nil {
			return nil, fmt.Errorf("exec.run_as %q: %w", cfg.Exec.RunAs, err)
		}
		uid, _ := strconv.ParseUint(u.Uid, 10, 32)
		gid, _ := strconv.ParseUint(u.Gid, 10, 32)
		if uid == 0 {
			return nil, fmt.Errorf("exec.run_as %q is root: agent commands never run as root", cfg.Exec.RunAs)
		}
		runAs = &plan.User{UID: uint32(uid), GID: uint32(gid), Name: u.Username}
		home = u.HomeDir
	}
	var feed *intel.Watcher
	if cfg.ThreatIntel.Feed != "" {
		feed, err = intel.NewWatcher(cfg.ThreatIntel.Feed, time.Duration(cfg.ThreatIntel.ReloadSeconds)*time.Second, logger)
		if err != nil {
			return nil, fmt.Errorf("threat_intel.feed: %w", err)
		}
		opts = append(opts, pipeline.WithIntel(feed))
	}
	pipe, err := pipeline.New(cfg, pol, home, opts...)
	if err != nil {
		return nil, fmt.Errorf("policy %s: %w", pol.File, err)
	}
	w, err := audit.OpenWriter(cfg.Audit.Path)
	if err != nil {
		return nil, err
	}
	var nopts []notify.Option
	if cfg.Notifications.Webhook.URL != "" {
		nopts = append(nopts, notify.WithWebhook(cfg.Notifications.Webhook.URL, time.Duration(cfg.Notifications.Webhook.TimeoutSeconds)*time.Second))
	}
	nlog := logger
	if !cfg.Notifications.Log {
		nlog = zerolog.Nop()
	}
	n, err := notify.New(nlog, nopts...)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("notifications: %w", err)
	}
	backend := selectBackend(cfg)
	var xopts []executor.Option
	if backend.available {
		xopts = append(xopts, executor.WithSandbox(backend.sandbox))
	}
	svc := New(Deps{Config: cfg, Pipeline: pipe, Executor: executor.New(cfg.Exec.Limits.MaxConcurrent, xopts...),
		Audit: w, Notifier: n, Logger: logger, Home: home, RunAs: runAs})
	svc.backend = backend
	if feed != nil {
		svc.closers = append(svc.closers, feed.Close)
	}
	return svc, nil
}

// Pipeline is the service's pipeline (its hold queue is served on the
// admin socket).
func (s *Service) Pipeline() *pipeline.Pipeline { return s.pipe }

// Close stops the feed watcher and closes the audit log.
func (s *Service) Close() error {
	// Tickets still waiting get their never-ran events while the audit
	// log is open.
	s.tickets.Close()
	for _, c := range s.closers {
		_ = c()
	}
	if s.audit == nil {
		return nil
	}
	return s.audit.Close()
}
