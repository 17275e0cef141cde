package service

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/config"
	"github.com/mitrity/mitrity/govern/egress"
	"github.com/mitrity/mitrity/govern/executor"
	"github.com/mitrity/mitrity/govern/ownfiles"
	"github.com/mitrity/mitrity/govern/sandbox"
)

// backend is the kernel sandbox this gateway can use, found at start.
type backend struct {
	available bool
	// reason says why it is not available (the probe's reason and remedy).
	reason string
	// reprobe: it is not available on a host that can still be fixed (a
	// sysctl, a package, a helper installed), so calls probe again (see
	// Service.bind).
	reprobe bool
	sandbox executor.Sandbox
	// helpers are the sandbox's own programs, kept read-only in every run.
	helpers []ownfiles.File
}

// ReprobeInterval is how often, at most, a call probes again for a
// sandbox that was not available: a host that is fixed gets its sandbox
// back without a restart, and a host that is not pays one probe per
// interval, never one per call.
const ReprobeInterval = 10 * time.Second

// ProbeCacheTTL is how long a full-strength sandbox probe is trusted.
const ProbeCacheTTL = 10 * time.Minute

// selectBackend probes the host for exec.sandbox.backend. auto and
// bubblewrap use bubblewrap through mitrity-sandboxrun when the probe
// passes; none, seatbelt on Linux, or a failed probe leave no backend.
func selectBackend(cfg *config.Config, place ownfiles.Placement) backend {
	switch cfg.Exec.Sandbox.Backend {
	case config.BackendNone:
		return backend{reason: "exec.sandbox.backend is none"}
	case config.BackendSeatbelt:
		return backend{reason: "the seatbelt backend is macOS only"}
	}
	if runtime.GOOS != "linux" {
		return backend{reason: "no sandbox backend on " + runtime.GOOS}
	}
	helper := sandboxHelper()
	if helper == "" {
		return backend{reason: "mitrity-sandboxrun was not found next to the gateway or in PATH", reprobe: true}
	}
	// A gateway SIGKILLed while bubblewrap was setting a sandbox up may
	// have left that sandbox's first process: end it before serving. A
	// register that cannot be locked fails each run (spawn_error) instead.
	sandbox.EndOrphans()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// A full-strength probe is remembered for a while (per user, in the
	// runtime directory), so a one-shot exec does not pay three probing
	// sandboxes before each command; doctor always probes afresh.
	rep := sandbox.ProbeCached(ctx, govern.RuntimeDir(os.Geteuid(), os.Getenv), ProbeCacheTTL, sandbox.WithHelper(helper))
	return backendFrom(cfg, helper, rep, place)
}

// backendFrom decides from a probe report. A helper that a run could
// replace (for a root gateway: one that root alone cannot change) is no
// sandbox: the supervisor that would run it is the gateway's own user.
func backendFrom(cfg *config.Config, helper string, rep sandbox.ProbeReport, place ownfiles.Placement) backend {
	seccomp := sandbox.SeccompMode(cfg.Exec.Sandbox.Seccomp)
	for _, c := range rep.Checks {
		if c.OK {
			continue
		}
		switch {
		case c.Name == sandbox.CheckCgroups:
			continue // reported per run as limits not enforced
		case c.Name == sandbox.CheckSeccomp && seccomp != sandbox.SeccompRequired:
			continue // preferred falls back per run; off never installs it
		}
		msg := c.Name + ": " + c.Reason
		if c.Remedy != "" {
			msg += " (remedy: " + c.Remedy + ")"
		}
		return backend{reason: msg, reprobe: true}
	}
	helpers := helperFiles(helper, rep.BwrapPath)
	if err := place.Check(helpers); err != nil {
		return backend{reason: "the sandbox's programs are within reach of the commands it would run: " + err.Error(), reprobe: true}
	}
	l := cfg.Exec.Limits
	return backend{available: true, helpers: helpers, sandbox: executor.Sandbox{
		Egress: egressConfig(cfg),
		Helper: helper, Bwrap: sandbox.Bwrap{Path: rep.BwrapPath, Version: rep.BwrapVersion}, Seccomp: seccomp,
		Limits: sandbox.Limits{MemoryBytes: l.MemoryBytes, Pids: int64(l.Pids), TmpfsBytes: l.TmpfsBytes, FileSizeBytes: l.FileSizeBytes, Nofile: 1024},
	}}
}

// egressConfig is exec.egress as the proxy reads it, in every mode.
func egressConfig(cfg *config.Config) egress.Config {
	eg := egress.Config{DeniedCIDRs: cfg.Exec.Egress.DeniedCIDRs, AllowedPrivateCIDRs: cfg.Exec.Egress.AllowedPrivateCIDRs,
		// Non-nil even when empty: an explicit [] means only entries with
		// a port match, where nil would mean the default ports.
		AllowedPorts: make([]uint16, 0, len(cfg.Exec.Egress.AllowedPorts))}
	for _, p := range cfg.Exec.Egress.AllowedPorts {
		eg.AllowedPorts = append(eg.AllowedPorts, uint16(p))
	}
	return eg
}

// sandboxHelper finds mitrity-sandboxrun: beside the running binary (make
// build installs them together), else in PATH.
func sandboxHelper() string {
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), "mitrity-sandboxrun")
		if fi, err := os.Stat(p); err == nil && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	if p, err := exec.LookPath("mitrity-sandboxrun"); err == nil && strings.HasPrefix(p, "/") {
		return p
	}
	return ""
}
