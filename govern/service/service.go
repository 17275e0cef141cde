// Package service runs one call end to end — decide, plan, execute,
// redact, audit, notify — so that every surface (the exec subcommand, the
// MCP tool, the hook relay) takes the same code path.
package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/audit"
	"github.com/mitrity/mitrity/govern/config"
	"github.com/mitrity/mitrity/govern/dlp"
	"github.com/mitrity/mitrity/govern/executor"
	"github.com/mitrity/mitrity/govern/metrics"
	"github.com/mitrity/mitrity/govern/notify"
	"github.com/mitrity/mitrity/govern/ownfiles"
	"github.com/mitrity/mitrity/govern/pipeline"
	"github.com/mitrity/mitrity/govern/plan"
	"github.com/mitrity/mitrity/govern/policy"
	"github.com/mitrity/mitrity/govern/sandbox"
	"github.com/mitrity/mitrity/govern/sandbox/settings"
	"github.com/mitrity/mitrity/govern/ticket"
)

// Service runs calls. Build it with Open (or New). A reload (Reload)
// replaces the configuration, policy and sandbox choice as one generation;
// a call runs under the generation it started with, and a ticket under
// the one that issued it.
type Service struct {
	gen     atomic.Pointer[generation]
	audit   Sink
	builder audit.Builder
	log     zerolog.Logger
	// tickets hold the fixed plans of routed hook calls until the relay
	// redeems them.
	tickets *ticket.Store
	metrics *metrics.Metrics // nil: none
	reload  sync.Mutex       // one Reload (or re-probe) at a time
	// known are the credential values this gateway has, redacted from
	// every run's output (and from what its runs' egress proxies log,
	// through each generation).
	known known
	// extra are the own files the gateway's flags name (Open), kept for
	// every reload.
	extra  []ownfiles.File
	probed time.Time // the last re-probe; under reload
	// ups are the upstream MCP servers (StartUpstreams); nil: none.
	ups *upstreams
	// version is the gateway's, told to upstreams at initialize.
	version string
}

// SetVersion is the version the gateway reports to upstream servers.
func (s *Service) SetVersion(v string) { s.version = v }

// generation is what one load of the config builds.
type generation struct {
	cfg      *config.Config
	pipe     *pipeline.Pipeline
	exec     Runner
	slots    *executor.Slots // the runs at once, shared by every generation (nil: the executor's own)
	notifier *notify.Notifier
	home     string
	runAs    *plan.User
	// settings is exec.sandbox.settings_file, parsed (nil: none): it
	// narrows the sandbox and each plan's egress allowlist.
	settings *settings.Settings
	// backend is the kernel sandbox found when the generation was built;
	// when it is not available every call stamps unavailable_denied or
	// none, with its reason.
	backend backend
	// own are the gateway's own files under cfg, and place who could
	// rewrite them: every run masks the first and keeps programs
	// read-only; a sandbox helper a run could replace is refused.
	own   ownfiles.Set
	place ownfiles.Placement
	// scrub takes the host paths of own out of what the gateway tells an
	// agent (its own words, not the command's output).
	scrub   *ownfiles.Scrubber
	closers []func() error
	// proxyLog is the gateway's logger, which every run's egress proxy
	// logs into, every value of known scrubbed (nil: a generation New
	// made, which starts no proxy of its own).
	proxyLog   zerolog.Logger
	proxyKnown *known
}

// bound is the service with the generation one call runs under.
type bound struct {
	*Service
	*generation
}

func (s *Service) bind() bound {
	g := s.gen.Load()
	if !g.backend.available && g.backend.reprobe {
		g = s.reprobe(g)
	}
	return bound{s, g}
}

// reprobe is exec.sandbox.backend's "re-checks per call" for a sandbox
// found unavailable: at most once per ReprobeInterval, a call probes the
// host afresh (a failed probe is never cached); when the sandbox is there
// now, a generation like g but with it (the same configuration, policy and
// pipeline: nothing is read again from disk, so this is not a reload)
// replaces g, and this call and every later one run sandboxed. A call that
// finds another probing does not wait for it. (A sandbox that is available
// is re-checked by every run itself: bubblewrap failing to start is
// failed_to_start, sandbox_unavailable, never a silent run without it.)
func (s *Service) reprobe(g *generation) *generation {
	if !s.reload.TryLock() {
		return g
	}
	defer s.reload.Unlock()
	if cur := s.gen.Load(); cur != g {
		return cur // reloaded meanwhile
	}
	if time.Since(s.probed) < ReprobeInterval {
		return g
	}
	s.probed = time.Now()
	b := selectBackend(g.cfg, g.place)
	if !b.available {
		return g
	}
	ng := *g // shares g's feed watcher: g is not closed
	ng.setBackend(b)
	s.gen.Store(&ng)
	s.log.Info().Msg("the sandbox backend is available now: calls run sandboxed again")
	return &ng
}

// Runner runs a decided plan: the executor (govern/executor), which
// spawns the sandbox helper and the egress proxy. Output goes to stdout
// and stderr as it is produced; the result says what happened.
type Runner interface {
	Run(ctx context.Context, p *plan.Plan, mode govern.SandboxMode, creds map[string]string, stdout, stderr io.Writer) executor.Result
}

// Sink is where the service's audit events go: the audit log's writer
// (govern/audit). Write returns once the event is durable, or an error.
type Sink interface {
	Write(ev *audit.Event) error
	Reopen() error
	Close() error
}

// Deps are the parts a Service is built from.
type Deps struct {
	Config   *config.Config
	Pipeline *pipeline.Pipeline
	Executor Runner
	Audit    Sink
	Notifier *notify.Notifier
	Logger   zerolog.Logger
	// Home is HOME for commands.
	Home string
	// RunAs is the user commands run as (a root gateway); nil: the
	// gateway's own.
	RunAs *plan.User
}

// New returns a Service with no sandbox backend probed.
func New(d Deps) *Service {
	s := &Service{audit: d.Audit, log: d.Logger}
	s.gen.Store(&generation{cfg: d.Config, pipe: d.Pipeline, exec: d.Executor, notifier: d.Notifier,
		home: d.Home, runAs: d.RunAs, backend: backend{reason: "no sandbox backend was probed"}})
	ttl := time.Duration(d.Config.Admission.TicketTTLSeconds) * time.Second
	if ttl <= 0 {
		ttl = config.DefaultTicketTTLSeconds * time.Second
	}
	s.tickets = ticket.New(ttl, MaxTickets, s.expired)
	return s
}

// Structured is the machine-readable part of a result: the MCP tool's
// structuredContent. It carries everything the text does (Claude Code and
// Codex hand a model only the structured content when there is one), so
// the output of both streams and the sentence of a denial are here too.
type Structured struct {
	// Stdout and Stderr are redacted and truncated, with the markers the
	// text has (truncation, timeout, what the sandbox refused).
	Stdout         string `json:"stdout"`
	Stderr         string `json:"stderr"`
	ExitCode       *int   `json:"exit_code"`
	DurationMs     int64  `json:"duration_ms"`
	TimeoutSeconds int    `json:"timeout_seconds"`
	TimedOut       bool   `json:"timed_out"`
	Truncated      bool   `json:"truncated"`
	SandboxMode    string `json:"sandbox_mode,omitempty"`
	RedactionCount int    `json:"redaction_count"`
	// Reason (closed vocabulary) and Status explain a denial or a run that
	// did not complete.
	Reason string `json:"reason,omitempty"`
	Status string `json:"status,omitempty"`
	// Message is the sentence, redacted, that says what happened and what
	// to do: why a call was denied, why a command did not run, why a run
	// was killed.
	Message string `json:"message,omitempty"`
	EventID string `json:"event_id,omitempty"`
	// ProtectedCreated lists protected paths the command created (absent
	// before the run): reported to the operator, not prevented.
	ProtectedCreated []string `json:"protected_created,omitempty"`
}

// Result is what the agent sees.
type Result struct {
	// Text is the content shown to the agent: everything Structured says,
	// written for a model to read (runText), or the denial.
	Text       string
	IsError    bool
	Structured Structured
	Decision   govern.Decision
	Status     govern.Status // zero when nothing was attempted
}

// ExitCode maps a result to the relay's exit codes: the command's own;
// 124 timed out; 126 denied or could not start; 137 killed.
func (r Result) ExitCode() int {
	switch r.Status {
	case govern.StatusCompleted:
		if r.Structured.ExitCode != nil {
			return *r.Structured.ExitCode
		}
	case govern.StatusTimedOut:
		return 124
	case govern.StatusKilled:
		return 137
	}
	return 126
}

// Call runs one call.
func (s *Service) Call(ctx context.Context, call govern.Call) Result { return s.bind().call(ctx, call) }

func (s bound) call(ctx context.Context, call govern.Call) Result {
	call.ActionType, call.Tool = govern.ActionShellExecute, govern.ToolShellExecute
	st, d := s.pipe.Decide(ctx, call, s.host())
	if d.Outcome == govern.Deny {
		return s.denied(ctx, call, st, d)
	}
	return s.execute(ctx, st, d)
}

// host is what the pipeline is told of the host this generation runs on.
func (s bound) host() pipeline.Host {
	return pipeline.Host{SandboxAvailable: s.backend.available, SandboxReason: s.backend.reason}
}

// Reject audits and returns a call refused before it reached the
// pipeline, nothing ran: a malformed tool call (invalid_argument, stage
// arguments), a call that arrived while the gateway stops (shutting_down,
// stage server).
func (s *Service) Reject(ctx context.Context, call govern.Call, reason govern.Reason, msg string) Result {
	return s.bind().reject(ctx, call, reason, msg)
}

func (s bound) reject(ctx context.Context, call govern.Call, reason govern.Reason, msg string) Result {
	call.ActionType, call.Tool = govern.ActionShellExecute, govern.ToolShellExecute
	stage := "arguments"
	if reason == govern.ReasonShuttingDown {
		stage = "server"
	}
	return s.denied(ctx, call, nil, govern.Decision{Outcome: govern.Deny, Reason: reason, Stage: stage, Message: msg})
}

// denied audits a denial and returns it as the agent sees it. A call
// refused for want of a sandbox also gets the card of the execution that
// did not happen (never_ran, unavailable_denied) and the degraded notice.
func (s bound) denied(ctx context.Context, call govern.Call, st *pipeline.State, d govern.Decision) Result {
	rec := audit.Record{Call: call, Decision: d}
	if st != nil {
		rec.Analysis = st.Analysis
	}
	noSandbox := st != nil && d.Reason == govern.ReasonSandboxUnavailable
	ceiling := 0
	if noSandbox {
		rec.WouldDeny = len(st.WouldDeny) > 0 // monitor mode let it this far
		ceiling = int(s.timeout(st) / time.Second)
		m := govern.SandboxUnavailableDenied
		rec.Run = &audit.Run{Status: govern.StatusNeverRan, Reason: d.Reason, SandboxMode: &m, TimeoutSeconds: ceiling}
	}
	id, err := s.record(rec)
	text := fmt.Sprintf("denied (%s): %s", d.Reason, d.Message)
	if err != nil {
		text += unrecordedNote("refusal", err)
	}
	text = s.scrub.Scrub(text)
	res := Result{Text: text, IsError: true, Decision: d,
		Structured: Structured{Reason: string(d.Reason), Message: s.scrub.Scrub(d.Message), EventID: id}}
	if noSandbox {
		s.degraded(ctx, st, govern.SandboxUnavailableDenied, govern.StatusNeverRan, id)
		res.Status = govern.StatusNeverRan
		res.Structured.TimeoutSeconds, res.Structured.SandboxMode, res.Structured.Status = ceiling, govern.SandboxUnavailableDenied.String(), govern.StatusNeverRan.String()
	}
	return res
}

// SetMetrics makes the service count what it audits into m.
func (s *Service) SetMetrics(m *metrics.Metrics) { s.metrics = m }

// record audits rec and returns the event's id once the event is on disk
// (written and fsynced). An event that cannot be built or written is an
// error, logged and counted so the operator hears of it, and its id is
// never handed out: an id an agent is given is always in the file.
func (s *Service) record(rec audit.Record) (string, error) {
	ev, err := s.recordEvent(rec)
	if err != nil {
		return "", err
	}
	return ev.ID, nil
}

// write is record for an event whose loss changes nothing the caller
// does (the call was refused or has ended): the loss is logged and
// counted, and the id is "" when the event is not on disk.
func (s *Service) write(rec audit.Record) string {
	id, _ := s.record(rec)
	return id
}

// recordEvent is record returning the event.
func (s *Service) recordEvent(rec audit.Record) (*audit.Event, error) {
	return s.recordWith(rec, s.builder.Build, nil)
}

// recordUpstream records the event of an upstream request (card) or of a
// judged tool definition (def) the way recordEvent records any other;
// with a room, it is appended into it and its fsync is left to the
// writer's flusher (a request that has already happened, whose room was
// reserved).
func (s *Service) recordUpstream(rec audit.Record, card *audit.UpstreamCall, def *audit.ToolDefinition, room *audit.Room) (*audit.Event, error) {
	return s.recordWith(rec, func(r audit.Record) (*audit.Event, error) { return s.builder.BuildUpstream(r, card, def) }, room)
}

// recordWith scrubs, builds (with build) and writes one event.
func (s *Service) recordWith(rec audit.Record, build func(audit.Record) (*audit.Event, error), room *audit.Room) (*audit.Event, error) {
	if rec.Scrub == nil {
		// Every event: a value typed into a refused command is as much
		// a credential as one a run printed.
		red, err := s.known.redactor()
		if err != nil {
			s.log.Error().Err(err).Msg("audit event could not be built")
			s.metrics.AuditWriteError()
			return nil, err
		}
		rec.Scrub = red
	}
	ev, err := build(rec)
	if err != nil {
		s.log.Error().Err(err).Msg("audit event could not be built")
		s.metrics.AuditWriteError()
		return nil, fmt.Errorf("building the audit event: %w", err)
	}
	if err := s.emitWith(ev, room); err != nil {
		return nil, err
	}
	return ev, nil
}

// emit logs, counts and writes one built event.
func (s *Service) emit(ev *audit.Event) error { return s.emitWith(ev, nil) }

// appender is an audit sink that can append an event into the room
// reserved for it, with its fsync left to a flusher (audit.Writer.Append).
type appender interface {
	Append(*audit.Event, *audit.Room) error
}

// emitWith writes ev; with a room, into it, the fsync following at once
// in the background (the event of a request that has already happened,
// whose room was reserved before it was sent).
func (s *Service) emitWith(ev *audit.Event, room *audit.Room) error {
	s.metrics.Observe(ev)
	audit.LogDecision(s.log, ev)
	err := ErrNoAuditLog
	if a, ok := s.audit.(appender); ok && room != nil {
		err = a.Append(ev, room)
	} else if s.audit != nil {
		err = s.audit.Write(ev)
	}
	if err != nil {
		s.log.Error().Err(err).Str("event_id", ev.ID).Msg("audit event could not be written")
		s.metrics.AuditWriteError()
	}
	return err
}

// ErrNoAuditLog is the write error of a service without an audit log.
var ErrNoAuditLog = errors.New("no audit log is open")

// recordDecision puts the decision of a call about to run on disk before
// anything runs: the execution event will link to it. A decision that
// cannot be recorded refuses the call (audit_unavailable): nothing runs.
func (s bound) recordDecision(pr *prepared, d govern.Decision) (Result, bool) {
	id, err := s.record(s.decisionRecord(pr.st, d))
	if err != nil {
		return s.unaudited(pr.st, pr.mode, pr.ceiling, err), false
	}
	pr.base.LinkedEventID = id
	return Result{}, true
}

// unaudited is the answer to a call refused because its decision could
// not be recorded. Nothing of it is on disk, so it has no event id.
func (s bound) unaudited(st *pipeline.State, mode govern.SandboxMode, ceiling int, err error) Result {
	d := s.auditUnavailable(err)
	return Result{Text: s.scrub.Scrub("denied (audit_unavailable): " + d.Message), IsError: true, Decision: d, Status: govern.StatusNeverRan,
		Structured: Structured{TimeoutSeconds: ceiling, SandboxMode: mode.String(), Reason: string(d.Reason), Status: govern.StatusNeverRan.String(),
			Message: s.scrub.Scrub(d.Message)}}
}

// auditUnavailable is the refusal of a call whose decision could not be
// recorded.
func (s *Service) auditUnavailable(err error) govern.Decision {
	return govern.Decision{Outcome: govern.Deny, Reason: govern.ReasonAuditUnavailable, Stage: "audit",
		Message: fmt.Sprintf("the gateway could not record this call in its audit log (%v), and a call it cannot audit does not run: nothing ran. The operator must make the audit log writable again (see the gateway's log and mitrity_audit_write_errors_total)", err)}
}

// unrecordedNote tells the agent that what happened could not be recorded.
func unrecordedNote(what string, err error) string {
	return fmt.Sprintf(" [this %s could not be recorded in the audit log (%v); the operator has been told through the gateway's log]", what, err)
}

// mode chooses the sandbox mode for a call: bubblewrap when the backend is
// available (the run may report bubblewrap_no_seccomp under seccomp:
// preferred), else unavailable_denied or none as the profile requires.
func (s bound) mode(p policy.Profile) govern.SandboxMode {
	switch {
	case s.backend.available:
		return govern.SandboxBubblewrap
	case p.SandboxRequired:
		return govern.SandboxUnavailableDenied
	}
	return govern.SandboxNone
}

// execute fixes the plan of an allowed call, records its decision, and
// runs it: the decision is on disk before the command starts, the
// completion after.
func (s bound) execute(ctx context.Context, st *pipeline.State, d govern.Decision) Result {
	pr, res := s.prepare(ctx, st)
	if pr == nil {
		return res
	}
	if res, ok := s.recordDecision(pr, d); !ok {
		return res
	}
	return s.run(ctx, pr, nil)
}

// prepared is a decided call with its plan fixed: what a ticket holds
// between admit and redeem.
type prepared struct {
	b       bound // the generation that fixed the plan
	st      *pipeline.State
	plan    *plan.Plan
	base    audit.Record // the execution event's start
	mode    govern.SandboxMode
	ceiling int // seconds
}

// prepare fixes the plan of an allowed call. When it cannot (no sandbox
// where one is required, a plan that does not build) the outcome is
// audited and returned instead.
func (s bound) prepare(ctx context.Context, st *pipeline.State) (*prepared, Result) {
	a := st.Analysis
	timeout := s.timeout(st)
	mode := s.mode(st.Profile)
	ceiling := int(timeout / time.Second)
	base := audit.Record{Call: st.Call, Decision: govern.Decision{Outcome: govern.Allow}, Analysis: a}
	if len(st.WouldDeny) > 0 {
		base.WouldDeny = true
	}
	if mode == govern.SandboxUnavailableDenied {
		// The pipeline's sandbox stage refuses such a call; this is that
		// rule again, so that nothing runs unsandboxed whatever asked.
		return nil, s.denied(ctx, st.Call, st, pipeline.SandboxDecision(st.Profile, s.host()))
	}
	p, err := plan.New(plan.Spec{
		Shell: s.cfg.Exec.Shell, Dialect: a.Dialect, Command: a.Text, CommandSHA256: a.SHA256,
		Cwd: st.Cwd, WorkspaceRoots: st.WorkspaceRoots, Timeout: timeout, Env: st.Env,
		CredentialEnv: st.CredentialEnv, CredentialFiles: st.CredentialFiles, CredentialDir: credentialDir(),
		Pins: a.Pins, DenyPaths: st.Profile.ExtraDenyPaths, Stdin: st.Call.Stdin, Egress: s.settings.NarrowEgress(st.Agent.Destinations, egressConfig(s.cfg).AllowedPorts),
		SandboxRequired: st.Profile.SandboxRequired, OutputMaxBytes: s.cfg.Exec.Limits.OutputMaxBytes,
		RunAs: s.runAs,
	})
	pr := &prepared{b: s, st: st, plan: p, base: base, mode: mode, ceiling: ceiling}
	if err != nil {
		return nil, s.finish(ctx, pr, mode, notRun(govern.StatusFailedToStart, govern.ReasonSpawnError, err.Error()), nil, nil, nil)
	}
	return pr, Result{}
}

// Output receives redacted output as it is produced: stream is "stdout" or
// "stderr". Calls come from one goroutine per stream.
type Output func(stream string, p []byte)

// run executes a prepared plan and audits the execution.
func (s bound) run(ctx context.Context, pr *prepared, live Output) Result {
	st, p := pr.st, pr.plan
	mode := pr.mode
	if mode == govern.SandboxBubblewrap && !s.backend.available {
		// The backend went away between admit and redeem: the sandbox
		// stage's rule, applied again at the start.
		mode = s.mode(st.Profile)
		if d := pipeline.SandboxDecision(st.Profile, s.host()); d.Outcome == govern.Deny {
			return s.finish(ctx, pr, mode, notRun(govern.StatusNeverRan, d.Reason, d.Message), nil, nil, nil)
		}
	}
	secrets, err := s.fetch(ctx, p)
	if err != nil {
		return s.finish(ctx, pr, mode, notRun(govern.StatusFailedToStart, govern.ReasonSpawnError, err.Error()), nil, nil, nil)
	}
	s.known.add(secrets...)
	// Every value the gateway has, not only the run's own: a value
	// another run left in the workspace is redacted here too. One
	// redactor for the output, the events and the refused destinations.
	red, err := s.known.redactor()
	if err != nil {
		return s.finish(ctx, pr, mode, notRun(govern.StatusFailedToStart, govern.ReasonSpawnError, err.Error()), nil, nil, nil)
	}
	bindings, _ := dlp.Bind(st.Profile.DLP.Bindings)
	out := newOutputStream(red.Redactor, bindings, "stdout", live)
	errs := newOutputStream(red.Redactor, bindings, "stderr", live)
	r := s.exec.Run(ctx, p, mode, secretMap(secrets), out, errs)
	out.Close()
	errs.Close()
	return s.finish(ctx, pr, mode, r, out, errs, red)
}

// notRun is the result of an execution the service did not start.
func notRun(status govern.Status, reason govern.Reason, msg string) executor.Result {
	return executor.Result{Result: sandbox.Result{Status: status, Reason: reason, Message: msg}}
}

// finish records what a decided call's execution did (or why it did not
// run) and builds what the agent gets: the one place both are made for a
// call that got past its decision. out and errs are nil when nothing ran;
// red is nil when no redactor could be built (the event is then scrubbed
// by a new one, or not written, and the agent is told).
func (s bound) finish(ctx context.Context, pr *prepared, mode govern.SandboxMode, r executor.Result, out, errs *outputStream, red *redactor) Result {
	st, base, ceiling := pr.st, pr.base, pr.ceiling
	a := st.Analysis
	var streams []*outputStream
	if out != nil {
		streams = []*outputStream{out, errs}
	}
	// What the command chose to name (a path, a program) may spell an
	// injected credential.
	redact := func(v string) string {
		if red == nil {
			return v
		}
		return red.Scrub(v)
	}
	counts := map[string]int{}
	var stdout, stderr string
	redactions := 0
	for i, o := range streams {
		for id, n := range o.cred.Counts() {
			counts[id] += n
		}
		if i == 0 {
			stdout = o.buf.String()
		} else {
			stderr = o.buf.String()
		}
		redactions += o.redactions()
		s.metrics.Redactions(metrics.KindCredential, o.cred.Total())
		for name, n := range o.det.Counts() {
			s.metrics.Redactions(metrics.DLPKind(name), n)
		}
	}
	if len(r.MaskReplaced) > 0 {
		// The host replaced a masked file while the run ran, and the run
		// may have read the new one in the moment before it was killed:
		// none of what it printed goes back (what was streamed live
		// already has). The audit hashes what the agent got.
		stdout, stderr = "", "[the run's output is withheld: "+strings.Join(r.MaskReplaced, ", ")+" changed on the host while it ran, and it was stopped]\n"
	}
	if r.SandboxMode.Valid() {
		mode = r.SandboxMode // a preferred-seccomp run may have fallen back
	}
	m := mode
	stamp, shownMode := &m, mode.String()
	if r.Status == govern.StatusNeverRan {
		// Nothing was started (concurrency_limit, pin_mismatch, a cwd
		// outside the roots): no isolation is vouched for, so the card
		// has no sandbox_mode (docs/audit.md).
		stamp, shownMode = nil, ""
	}
	run := &audit.Run{Status: r.Status, Reason: r.Reason, SandboxMode: stamp, Duration: r.Duration(), TimeoutSeconds: ceiling,
		Stdout:         audit.Output{Redacted: []byte(stdout), Produced: r.Stdout.Bytes, Discarded: r.Stdout.Discarded, Truncated: r.Stdout.Truncated},
		Stderr:         audit.Output{Redacted: []byte(stderr), Produced: r.Stderr.Bytes, Discarded: r.Stderr.Discarded, Truncated: r.Stderr.Truncated},
		RedactionCount: redactions, Pins: a.Pins, PinMethod: audit.PinVerify, CredentialsInjected: r.CredentialsInjected,
		Limits: limitsOf(r), ProtectedCreated: r.ProtectedCreated, ProtectedModified: r.ProtectedModified,
		MaskReplaced: r.MaskReplaced,
	}
	for _, a := range r.ArgvRefused {
		run.ArgvRefused = append(run.ArgvRefused, audit.ArgvRefusal{Program: a.Program, Argument: a.Argument, Credential: a.Credential})
	}
	for _, w := range r.CredentialWritten {
		run.CredentialWritten = append(run.CredentialWritten, audit.CredentialWritten{Path: w.Path, Credential: w.Credential})
	}
	if r.PinMethod == string(audit.PinBind) {
		run.PinMethod = audit.PinBind
	}
	if r.Egress != nil {
		run.EgressAllowed, run.EgressDenied, run.DeniedHosts = r.Egress.Allowed, r.Egress.Denied, r.Egress.DeniedHosts
	}
	if r.ExitCode != nil {
		run.ExitCode = *r.ExitCode
	}
	rec := base
	rec.Run = run
	if red != nil {
		rec.Scrub = red
	}
	if r.Status != govern.StatusCompleted && (r.Reason != "" || r.Message != "") {
		// Why it did not complete, in words (a dead egress proxy ends a
		// run as killed with no reason code, only this message).
		rec.Decision = govern.Decision{Outcome: govern.Allow, Reason: r.Reason, Stage: "executor", Message: r.Message}
	}
	ev, recErr := s.recordEvent(rec)
	// The decision's event is on disk: the agent gets its id when the
	// completion's is not.
	id := base.LinkedEventID
	if recErr == nil {
		id = ev.ID
		s.destinationEvents(ev, r, rec.Scrub)
	}
	if r.EgressError != "" {
		s.log.Warn().Str("event_id", id).Str("error", r.EgressError).Msg("the egress proxy gave no report: egress counts on the event are incomplete")
	}
	s.degraded(ctx, st, mode, r.Status, id)
	for _, cid := range sortedKeys(counts) {
		if _, err := s.notifier.OutputRedacted(ctx, notify.Redaction{Agent: st.Call.Agent, EventID: id, CredentialID: cid, Count: counts[cid]}); err != nil {
			s.log.Warn().Err(err).Msg("output_redacted notification")
		}
	}

	truncated := r.Stdout.Truncated || r.Stderr.Truncated
	if r.Stdout.Truncated {
		stdout += fmt.Sprintf("\n[output truncated: %d bytes of stdout discarded]\n", r.Stdout.Discarded)
	}
	if r.Stderr.Truncated {
		stderr += fmt.Sprintf("\n[output truncated: %d bytes of stderr discarded]\n", r.Stderr.Discarded)
	}
	if r.TimedOut() {
		stderr += fmt.Sprintf("\n[timed out after %ds: the command was sent SIGTERM, then SIGKILL]\n", ceiling)
	}
	// A list of names is scrubbed as one text: a value cut into file
	// names of a few symbols each is still a value (audit.ScrubJoined).
	redactList := func(vs []string) []string {
		if red == nil || len(vs) == 0 {
			return vs
		}
		return audit.ScrubJoined(red, vs)
	}
	created := redactList(r.ProtectedCreated)
	if len(created) > 0 {
		stderr += fmt.Sprintf("\n[protected paths created, reported to the operator: %s]\n", strings.Join(created, ", "))
	}
	if n := len(r.ArgvRefused); n > 0 {
		first := r.ArgvRefused[0]
		prog := redact(first.Program)
		stderr += fmt.Sprintf("\n[credential_in_argv: the sandbox refused %d program start(s) whose command line carried the injected credential %s (first: %s, argument %d); a credential reaches a program through its environment or a file under $MITRITY_CRED_DIR, never as an argument]\n",
			n, first.Credential, prog, first.Argument)
	}
	if len(r.CredentialWritten) > 0 {
		var paths []string
		for _, w := range r.CredentialWritten {
			paths = append(paths, w.Path)
		}
		paths = redactList(paths)
		for i, w := range r.CredentialWritten {
			paths[i] += " (" + w.Credential + ")"
		}
		stderr += fmt.Sprintf("\n[the run left an injected credential in the workspace, reported to the operator: %s]\n", strings.Join(paths, ", "))
	}
	var killedBecause string
	if r.Status == govern.StatusKilled && r.Message != "" {
		killedBecause = s.scrub.Scrub(redact(r.Message))
		stderr += "\n[" + killedBecause + "]\n"
	}
	if recErr != nil {
		stderr += s.scrub.Scrub(fmt.Sprintf("\n[this run's completion could not be recorded in the audit log (%v); its decision is event %s; the operator has been told through the gateway's log]\n", recErr, id))
	}
	res := Result{Decision: govern.Decision{Outcome: govern.Allow}, Status: r.Status,
		Structured: Structured{Stdout: stdout, Stderr: stderr, ExitCode: r.ExitCode, DurationMs: r.DurationMS, TimeoutSeconds: ceiling,
			TimedOut: r.TimedOut(), Truncated: truncated, SandboxMode: shownMode, RedactionCount: redactions, EventID: id,
			ProtectedCreated: created, Message: killedBecause}}
	if r.Status == govern.StatusFailedToStart || r.Status == govern.StatusNeverRan {
		res.IsError = true
		res.Structured.Reason, res.Structured.Status = string(r.Reason), r.Status.String()
		res.Structured.Message = s.scrub.Scrub(redact(r.Message))
		res.Text = s.scrub.Scrub(fmt.Sprintf("the command did not run (%s): %s", r.Reason, r.Message))
		if recErr != nil {
			res.Text += s.scrub.Scrub(unrecordedNote("outcome", recErr))
		}
		return res
	}
	if r.Status != govern.StatusCompleted {
		res.Structured.Status, res.Structured.Reason = r.Status.String(), string(r.Reason)
	}
	res.Text = runText(res.Structured)
	return res
}

// runText is a run's result as a model reads it: stdout, then stderr under
// a rule, then one line with the exit code and whatever else is true of
// the run (timed out, truncated, killed). Every client gets this text or
// the structured content, some only one of them, so both carry it all.
func runText(st Structured) string {
	var b strings.Builder
	rule := func(title string) {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteByte('\n')
		}
		b.WriteString("--- " + title + " ---")
	}
	b.WriteString(st.Stdout)
	if st.Stderr != "" {
		rule("stderr")
		b.WriteByte('\n')
		b.WriteString(st.Stderr)
	}
	facts := []string{"no exit code"}
	if st.ExitCode != nil {
		facts[0] = fmt.Sprintf("exit code %d", *st.ExitCode)
	}
	if st.Status != "" && st.Status != govern.StatusCompleted.String() && !st.TimedOut {
		facts = append(facts, st.Status)
	}
	if st.TimedOut {
		facts = append(facts, fmt.Sprintf("timed out after %ds", st.TimeoutSeconds))
	}
	if st.Truncated {
		facts = append(facts, "output truncated")
	}
	rule(strings.Join(facts, ", "))
	return b.String()
}

// destinationEvents writes one DLP event (unauthorized_destination) per
// distinct destination the egress proxy refused, linked to the execution.
func (s *Service) destinationEvents(exec *audit.Event, r executor.Result, scrub audit.Scrubber) {
	if r.Egress == nil || len(r.Egress.Denials) == 0 {
		return
	}
	evs, err := s.builder.DestinationDenials(exec, r.Egress.Denials, scrub)
	if err != nil {
		s.log.Error().Err(err).Str("event_id", exec.ID).Msg("unauthorized_destination events could not be built")
		s.metrics.AuditWriteError()
		return
	}
	for _, ev := range evs {
		_ = s.emit(ev) // counted; the execution it belongs to is recorded
	}
}

// limitsOf maps the sandbox's account of the limits onto the card; in mode
// none nothing is enforced and every limit is reported false.
func limitsOf(r executor.Result) map[audit.Limit]audit.LimitEnforcement {
	conv := func(l sandbox.Limit) audit.LimitEnforcement {
		return audit.LimitEnforcement{Enforced: l.Enforced, Mechanism: audit.Mechanism(l.Mechanism)}
	}
	l := r.LimitsEnforced
	return map[audit.Limit]audit.LimitEnforcement{
		audit.LimitProcessCount: conv(l.ProcessCount), audit.LimitMemory: conv(l.Memory), audit.LimitTmpfsSize: conv(l.TmpfsSize),
		audit.LimitFileSize: conv(l.FileSize), audit.LimitDaemonKill: conv(l.DaemonKill),
	}
}

// hostReason is the degradation's cause for a notification.
func (s bound) hostReason(mode govern.SandboxMode) string {
	if mode == govern.SandboxBubblewrapNoSeccomp {
		return "the seccomp stage could not be installed (exec.sandbox.seccomp: preferred)"
	}
	return s.backend.reason
}

func (s bound) degraded(ctx context.Context, st *pipeline.State, mode govern.SandboxMode, status govern.Status, eventID string) {
	if mode.FullStrength() {
		return
	}
	_, err := s.notifier.SandboxDegraded(ctx, notify.Degradation{
		Agent: st.Call.Agent, EventID: eventID, Mode: mode, Requested: string(s.cfg.Exec.Sandbox.Backend),
		Seccomp: string(s.cfg.Exec.Sandbox.Seccomp), HostReason: s.hostReason(mode), Status: status,
		SandboxRequired: st.Profile.SandboxRequired,
	})
	if err != nil {
		s.log.Warn().Err(err).Msg("sandbox_degraded notification")
	}
}

// timeout is the call's, clamped to the effective ceiling: the profile's
// exec_timeout_seconds capped by exec.limits.max_timeout_seconds.
func (s bound) timeout(st *pipeline.State) time.Duration {
	ceiling := min(st.Profile.ExecTimeoutSeconds, s.cfg.Exec.Limits.MaxTimeoutSeconds)
	if ceiling < 1 {
		ceiling = 1
	}
	t := ceiling
	if st.Call.TimeoutSeconds > 0 && st.Call.TimeoutSeconds < ceiling {
		t = st.Call.TimeoutSeconds
	}
	return time.Duration(t) * time.Second
}

// fetch reads every credential the plan injects from its source, now.
func (s bound) fetch(ctx context.Context, p *plan.Plan) ([]dlp.Secret, error) {
	var out []dlp.Secret
	for _, id := range p.CredentialIDs() {
		src, ok := s.cfg.Credentials[id]
		if !ok {
			return nil, fmt.Errorf("credential %s is not configured", id)
		}
		v, err := src.Fetch(ctx)
		if err != nil {
			// The error names the source, never a value.
			return nil, fmt.Errorf("credential %s: %w", id, err)
		}
		out = append(out, dlp.Secret{ID: id, Value: v})
	}
	return out, nil
}

func secretMap(secrets []dlp.Secret) map[string]string {
	m := make(map[string]string, len(secrets))
	for _, s := range secrets {
		m[s.ID] = s.Value
	}
	return m
}

// credentialDir is a fresh private path for one execution's credential
// files (mode none runs on the host, so it cannot be the sandbox's fixed
// path), in the gateway's runtime directory: every run masks it, and
// root's is traversable by the run_as user, who owns each run's directory.
func credentialDir() string {
	var b [8]byte
	f, err := os.Open("/dev/urandom")
	if err == nil {
		f.Read(b[:])
		f.Close()
	}
	base, err := govern.MakeRuntimeDir(os.Geteuid(), os.Getenv)
	if err != nil {
		base = govern.RuntimeDir(os.Geteuid(), os.Getenv) // the run then fails to create it, closed
	}
	return filepath.Join(base, fmt.Sprintf("mitrity-cred-%x", b))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
