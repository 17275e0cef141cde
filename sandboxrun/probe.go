package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/sandbox"
)

// A host's level, as the probe reports it and exits with. 1 and 2 stay the
// CLI's own (an error, a usage error), so a pipeline can tell "this host
// is weaker" from "the probe did not run".
type level string

const (
	levelFull        level = "full"        // bubblewrap, user namespaces and seccomp: sandbox_mode bubblewrap
	levelDegraded    level = "degraded"    // no seccomp stage: bubblewrap_no_seccomp, under seccomp: preferred only
	levelUnavailable level = "unavailable" // no kernel sandbox: denied, or mode none where a profile allows it
)

// Exit codes of probe, one per level.
const (
	exitFull        = 0
	exitDegraded    = 3
	exitUnavailable = 4
	exitUsage       = 2
)

// probeVersion is the version of the --json document; it changes only
// when a field changes meaning or goes away (a new field does not).
const probeVersion = 1

// rank orders the levels for --require.
var rank = map[level]int{levelUnavailable: 0, levelDegraded: 1, levelFull: 2}

var exitOf = map[level]int{levelFull: exitFull, levelDegraded: exitDegraded, levelUnavailable: exitUnavailable}

// modeOf is the sandbox_mode a run gets at each level; "none" at
// unavailable, where a profile that requires a sandbox is denied
// (unavailable_denied) and one that does not runs in mode none.
var modeOf = map[level]string{
	levelFull:        govern.SandboxBubblewrap.String(),
	levelDegraded:    govern.SandboxBubblewrapNoSeccomp.String(),
	levelUnavailable: govern.SandboxNone.String(),
}

// probeReport is the --json document, documented field by field in
// docs/sandbox.md ("The probe"). Every field is always present.
type probeReport struct {
	Version     int          `json:"version"`
	Level       level        `json:"level"`
	ExitCode    int          `json:"exit_code"`
	Required    level        `json:"required"` // "" without --require
	Met         bool         `json:"met"`
	SandboxMode string       `json:"sandbox_mode"`
	Limits      string       `json:"limits"` // cgroup or rlimit
	EUID        int          `json:"euid"`
	Helper      string       `json:"helper_version"`
	Bubblewrap  probeBwrap   `json:"bubblewrap"`
	Checks      []probeCheck `json:"checks"`
}

type probeBwrap struct {
	Path    string `json:"path"`
	Version string `json:"version"`
}

type probeCheck struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	Reason string `json:"reason"`
	Remedy string `json:"remedy"`
}

func probeFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: "json", Usage: "print the probe report as JSON (docs/sandbox.md)"},
		&cli.StringFlag{Name: "require", Usage: "exit 0 when the host is at least this level (full or degraded), else with the level's code"},
	}
}

const probeUsage = "report what this host can enforce (bubblewrap, user namespaces, seccomp, cgroups); exit 0 at full strength, 3 degraded (no seccomp), 4 unavailable"

func probeCommand() *cli.Command {
	return &cli.Command{
		Name:   "probe",
		Usage:  probeUsage,
		Flags:  probeFlags(),
		Action: probeAction,
	}
}

// levelOf reads a sandbox probe: bubblewrap and user namespaces make a
// sandbox; the seccomp stage makes it full strength. Cgroups decide only
// how limits are held, not the level.
func levelOf(r sandbox.ProbeReport) level {
	ok := func(name string) bool { c, found := r.Check(name); return found && c.OK }
	switch {
	case r.FullStrength:
		return levelFull
	case ok(sandbox.CheckBubblewrap) && ok(sandbox.CheckUserNamespaces):
		return levelDegraded
	}
	return levelUnavailable
}

func probeAction(c *cli.Context) error {
	req := level(c.String("require"))
	if _, known := rank[req]; req != "" && (!known || req == levelUnavailable) {
		return cli.Exit(fmt.Sprintf("--require %q: want full or degraded", c.String("require")), exitUsage)
	}
	r := sandbox.Probe(context.Background())
	lv := levelOf(r)
	code := exitOf[lv]
	met := req == "" && lv == levelFull || req != "" && rank[lv] >= rank[req]
	if met && req != "" {
		code = exitFull
	}
	rep := probeReport{Version: probeVersion, Level: lv, ExitCode: code, Required: req, Met: met,
		SandboxMode: modeOf[lv], Limits: "rlimit", EUID: os.Geteuid(), Helper: version,
		Bubblewrap: probeBwrap{Path: r.BwrapPath, Version: r.BwrapVersion}, Checks: []probeCheck{}}
	if cg, found := r.Check(sandbox.CheckCgroups); found && cg.OK {
		rep.Limits = "cgroup"
	}
	for _, ck := range r.Checks {
		rep.Checks = append(rep.Checks, probeCheck(ck))
	}
	w := c.App.Writer
	if c.Bool("json") {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false) // a remedy's <abi/4.0> reads as written
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		for _, ck := range r.Checks {
			state := "ok  "
			if !ck.OK {
				state = "FAIL"
			}
			fmt.Fprintf(w, "%s %-16s %s%s\n", state, ck.Name, ck.Detail, ck.Reason)
			if ck.Remedy != "" {
				fmt.Fprintf(w, "     %-16s remedy: %s\n", "", ck.Remedy)
			}
		}
		switch lv {
		case levelFull:
			fmt.Fprintf(w, "level full: sandbox_mode bubblewrap; limits by %s\n", rep.Limits)
		case levelDegraded:
			fmt.Fprintln(w, "level degraded: no seccomp stage; commands run as bubblewrap_no_seccomp under exec.sandbox.seccomp: preferred, and are denied under required (the default)")
		default:
			fmt.Fprintln(w, "level unavailable: no kernel sandbox; a profile with sandbox_required denies every command (sandbox_unavailable)")
		}
		if req != "" {
			verdict := "met"
			if !met {
				verdict = "NOT met"
			}
			fmt.Fprintf(w, "--require %s: %s\n", req, verdict)
		}
	}
	if code != exitFull {
		return cli.Exit("", code)
	}
	return nil
}
