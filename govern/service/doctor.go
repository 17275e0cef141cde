package service

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/mitrity/mitrity/govern/config"
	"github.com/mitrity/mitrity/govern/ownfiles"
	"github.com/mitrity/mitrity/govern/sandbox"
)

// Check is one line of the doctor's report.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
	Remedy string `json:"remedy,omitempty"`
}

// Doctor checks the host against the config: the shell, the default
// working directory, the sandbox backend and why, seccomp, cgroups, each
// credential source (id and ok/failed only: a value is fetched and
// dropped, never printed) and the audit sink. It needs no control plane
// and never runs an agent command. OK is true only when everything the
// config asks for can be enforced.
func Doctor(ctx context.Context, cfg *config.Config) (checks []Check, ok bool) {
	add := func(c Check) { checks = append(checks, c) }
	add(Check{Name: "shell", OK: cfg.Exec.Dialect() != "", Detail: fmt.Sprintf("%s (dialect %s)", cfg.Exec.Shell, cfg.Exec.Dialect())})
	if fi, err := os.Stat(cfg.Exec.DefaultCwd); err == nil && fi.IsDir() {
		add(Check{Name: "default_cwd", OK: true, Detail: cfg.Exec.DefaultCwd})
	} else {
		add(Check{Name: "default_cwd", Detail: fmt.Sprintf("%s: not a directory", cfg.Exec.DefaultCwd), Remedy: "create it or change exec.default_cwd"})
	}

	// Nothing a run can write may configure the gateway (the checks Open
	// makes). When something could, the credential sources are not run:
	// a command source named by a rewritten config is the agent's code.
	pol, err := LoadPolicy(cfg)
	var place ownfiles.Placement
	ownOK := false
	switch {
	case err != nil:
		add(Check{Name: "policy", Detail: err.Error(), Remedy: "fix the policy file"})
	default:
		runAs, _, rerr := resolveRunAs(cfg)
		place = placement(cfg, pol, runAs)
		if rerr == nil {
			rerr = place.Check(ownFiles(cfg, nil))
		}
		if rerr != nil {
			add(Check{Name: "own_files", Detail: rerr.Error(), Remedy: "keep the configuration, policy, feeds and credential sources outside every workspace root, owned by root (a root gateway) or the gateway's user, and writable by nobody else"})
		} else {
			ownOK = true
			add(Check{Name: "own_files", OK: true, Detail: "no file that configures the gateway is within reach of the commands it runs"})
		}
	}

	helper := sandboxHelper()
	switch {
	case cfg.Exec.Sandbox.Backend == config.BackendNone:
		add(Check{Name: "sandbox_backend", OK: true, Detail: "none (configured): commands run without kernel isolation, or are denied sandbox_unavailable where a profile requires a sandbox"})
	case helper == "":
		add(Check{Name: "sandbox_backend", Detail: "mitrity-sandboxrun was not found next to the gateway or in PATH", Remedy: "install mitrity-sandboxrun beside mitrity-gateway (make build does)"})
	default:
		pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		rep := sandbox.Probe(pctx, sandbox.WithHelper(helper))
		cancel()
		b := backendFrom(cfg, helper, rep, place)
		detail := fmt.Sprintf("bubblewrap %s at %s", rep.BwrapVersion, rep.BwrapPath)
		if !b.available {
			detail = b.reason
		}
		add(Check{Name: "sandbox_backend", OK: b.available, Detail: detail + " (requested: " + string(cfg.Exec.Sandbox.Backend) + ")"})
		for _, c := range rep.Checks {
			ck := Check{Name: c.Name, OK: c.OK, Detail: c.Detail, Remedy: c.Remedy}
			if !c.OK && c.Reason != "" {
				ck.Detail = c.Reason
			}
			// Seccomp matters only where the config requires it; cgroups are
			// reported (limits fall back to rlimits) but do not fail the host.
			if !c.OK && (c.Name == sandbox.CheckCgroups || c.Name == sandbox.CheckSeccomp && cfg.Exec.Sandbox.Seccomp != config.SeccompRequired) {
				ck.Name += " (not required)"
				ck.OK = true
			}
			add(ck)
		}
	}

	ids := make([]string, 0, len(cfg.Credentials))
	for id := range cfg.Credentials {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if !ownOK {
			add(Check{Name: "credential " + id, Detail: cfg.Credentials[id].Kind() + ": not fetched: own_files failed, and the source may be the commands' own"})
			continue
		}
		fctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		_, err := cfg.Credentials[id].Fetch(fctx)
		cancel()
		c := Check{Name: "credential " + id, OK: err == nil, Detail: cfg.Credentials[id].Kind()}
		if err != nil {
			c.Detail += ": " + err.Error()
		}
		add(c)
	}

	dir := filepath.Dir(cfg.Audit.Path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		add(Check{Name: "audit", Detail: err.Error(), Remedy: "make " + dir + " writable or change audit.path"})
	} else if f, err := os.OpenFile(cfg.Audit.Path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err != nil {
		add(Check{Name: "audit", Detail: err.Error(), Remedy: "make " + cfg.Audit.Path + " writable or change audit.path"})
	} else {
		f.Close()
		add(Check{Name: "audit", OK: true, Detail: cfg.Audit.Path + " is writable"})
	}
	checks = append(checks, doctorUpstreams(cfg, ownOK)...)
	ok = true
	for _, c := range checks {
		ok = ok && c.OK
	}
	return checks, ok
}

// doctorWait bounds how long the doctor waits for each upstream.
const doctorWait = 20 * time.Second

// doctorUpstreams connects to every upstream the way serving does (a
// stdio server launched in its sandbox) and reports whether each
// answered initialize and what it serves; then stops them.
func doctorUpstreams(cfg *config.Config, ownOK bool) []Check {
	if len(cfg.Upstreams) == 0 {
		return nil
	}
	var out []Check
	names := make([]string, 0, len(cfg.Upstreams))
	for n := range cfg.Upstreams {
		names = append(names, n)
	}
	sort.Strings(names)
	if !ownOK {
		for _, n := range names {
			out = append(out, Check{Name: "upstream " + n, Detail: "not started: own_files failed, and its command or credentials may be the commands' own"})
		}
		return out
	}
	// The doctor's own audit log: what it starts is a check, not the
	// gateway's record (its first_seen definitions would otherwise land in
	// the operator's trail).
	dir, err := os.MkdirTemp("", "mitrity-doctor-")
	if err != nil {
		for _, n := range names {
			out = append(out, Check{Name: "upstream " + n, Detail: "not started: " + err.Error()})
		}
		return out
	}
	defer os.RemoveAll(dir)
	c := *cfg
	c.Audit.Path = filepath.Join(dir, "audit.jsonl")
	logs := &lockedWriter{}
	svc, err := Open(&c, zerolog.New(logs).Level(zerolog.WarnLevel))
	if err != nil {
		for _, n := range names {
			out = append(out, Check{Name: "upstream " + n, Detail: "not started: " + err.Error()})
		}
		return out
	}
	defer svc.Close()
	svc.StartUpstreams(func() {}, func(string) bool { return false }, doctorWait)
	health := svc.UpstreamHealth()
	tools := map[string]int{}
	for _, t := range svc.UpstreamTools() {
		tools[t.Server]++
	}
	for _, n := range names {
		u := cfg.Upstreams[n]
		kind := "stdio, sandboxed"
		if u.Sandbox == config.UpstreamUnsandboxed {
			kind = "stdio, sandbox: none"
		}
		if !u.Stdio() {
			kind = "http " + u.URL
		}
		if err := health[n]; err != nil {
			out = append(out, Check{Name: "upstream " + n, Detail: kind + ": " + err.Error() + lastLines(logs.String(), n),
				Remedy: "check upstreams." + n + "; `mitrity-gateway --log-level debug serve` logs the server's stderr"})
			continue
		}
		out = append(out, Check{Name: "upstream " + n, OK: true, Detail: fmt.Sprintf("%s: connected, %d tools served", kind, tools[n])})
	}
	return out
}

// lastLines are the log lines about upstream n the doctor's service wrote
// (its server's last stderr lines among them), at most a few.
func lastLines(logs, n string) string {
	var keep []string
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, `"upstream":"`+n+`"`) {
			keep = append(keep, l)
		}
	}
	if len(keep) > 3 {
		keep = keep[len(keep)-3:]
	}
	if len(keep) == 0 {
		return ""
	}
	return "; log: " + strings.Join(keep, " | ")
}

// lockedWriter is the doctor's logger's buffer, written by the service's
// goroutines while the doctor reads it.
type lockedWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
