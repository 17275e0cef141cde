package metrics

import (
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/audit"
	"github.com/mitrity/mitrity/govern/dlp"
)

// Metric names. They are constants so the docs, the tests and the
// dashboards cannot drift from the code.
const (
	NameDecisions         = "mitrity_decisions_total"
	NameExecutions        = "mitrity_executions_total"
	NameExecutionDuration = "mitrity_execution_duration_seconds"
	NameRedactions        = "mitrity_redactions_total"
	NameEgressDenied      = "mitrity_egress_denied_total"
	NameAuditWriteErrors  = "mitrity_audit_write_errors_total"
	NameAuditReopens      = "mitrity_audit_reopens_total"
	// NameReloads counts SIGHUP reloads of the config and policy by
	// result, so a refused reload (the old config still in force) can be
	// alerted on rather than found in the log.
	NameReloads = "mitrity_config_reloads_total"

	// NameUpstreamProgressDropped counts upstream progress notifications
	// that belong to no call of the session that sent them.
	NameUpstreamProgressDropped = "mitrity_upstream_progress_dropped_total"

	// The MCP server over Streamable HTTP (serve --http).
	NameHTTPConnections        = "mitrity_http_connections"
	NameHTTPConnectionsRefused = "mitrity_http_connections_refused_total"
	NameMCPSessions            = "mitrity_mcp_sessions"
	NameMCPSessionsRefused     = "mitrity_mcp_sessions_refused_total"
)

// Label names.
const (
	LabelDecision    = "decision"
	LabelReason      = "reason"
	LabelStatus      = "status"
	LabelSandboxMode = "sandbox_mode"
	LabelKind        = "kind"
	LabelResult      = "result"
)

// ConnRefusedReasons is the reason label's vocabulary of
// mitrity_http_connections_refused_total: the connection limit per peer,
// and in total.
var ConnRefusedReasons = []string{"peer_limit", "total_limit"}

// Label values outside the audit vocabularies.
const (
	// Other replaces any value outside a label's closed vocabulary, so a
	// bug or a new word upstream can add at most one series per label.
	Other = "other"
	// ReasonNone is the reason label of a decision without a reason (a
	// plain allow).
	ReasonNone = "none"
	// SandboxAbsent is the sandbox_mode label of an execution card without
	// a sandbox_mode: the gateway started nothing and vouches for no
	// isolation. It is not "none", which means a run without a sandbox.
	SandboxAbsent = "absent"
	// KindCredential is the redaction kind of an injected credential value
	// (any form, any credential; the id is never a label).
	KindCredential = "credential"
	// KindDLPPrefix starts the redaction kind of a DLP detector hit:
	// dlp:<detector>, the word in the [REDACTED:dlp:<detector>] marker.
	KindDLPPrefix = "dlp:"
)

// DurationBuckets are the execution duration histogram's upper bounds in
// seconds: 5ms (a builtin) to one hour (a long build or test run).
var DurationBuckets = []float64{
	0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
	1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600,
}

// reasons is the reason label's vocabulary: every govern.Reason constant
// (TestReasonVocabulary keeps it in step with govern/reason.go). A reason
// outside it is counted as "other".
var reasons = govern.Reasons()

var outcomes = []audit.Outcome{audit.OutcomeAllow, audit.OutcomeAsk, audit.OutcomeHold, audit.OutcomeDeny}

// Metrics holds the gateway's collectors on a registry of its own (never
// the process-global default). It is safe for concurrent use. A nil
// *Metrics records nothing, so callers with metrics off need no checks.
type Metrics struct {
	reg          *prometheus.Registry
	decisions    *prometheus.CounterVec
	executions   *prometheus.CounterVec
	duration     prometheus.Histogram
	redactions   *prometheus.CounterVec
	egressDenied prometheus.Counter
	auditErrors  prometheus.Counter
	auditReopens *prometheus.CounterVec
	reloads      *prometheus.CounterVec
	progressDrop prometheus.Counter
	kinds        []string // the redaction kind vocabulary

	connsRefused    *prometheus.CounterVec
	sessionsRefused prometheus.Counter
	// serving reports the HTTP server's open connections and sessions
	// (SetServing); nil until it starts.
	serving atomic.Pointer[serving]
}

type serving struct{ conns, sessions func() int }

// New returns Metrics on a fresh registry that also carries the Go runtime
// and process collectors. Every series of the closed label sets is created
// at zero, so rate() and alerts see the first increment.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameDecisions,
			Help: "Decisions recorded in the audit trail, by outcome (allow, ask, hold, deny) and reason. A routed hook call counts once, at admit time.",
		}, []string{LabelDecision, LabelReason}),
		executions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameExecutions,
			Help: "Execution cards recorded in the audit trail, by status and sandbox mode (absent: nothing was started).",
		}, []string{LabelStatus, LabelSandboxMode}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    NameExecutionDuration,
			Help:    "Wall-clock duration of executions that started (completed, timed_out, killed).",
			Buckets: DurationBuckets,
		}),
		redactions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: NameRedactions,
			Help: "Redactions in command output returned to agents, by kind: credential (an injected credential value) or dlp:<detector>.",
		}, []string{LabelKind}),
		egressDenied: prometheus.NewCounter(prometheus.CounterOpts{
			Name: NameEgressDenied,
			Help: "Connections the egress proxy refused, summed over execution cards.",
		}),
		auditErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: NameAuditWriteErrors,
			Help: "Audit events that could not be built or written: calls missing from the trail.",
		}),
		progressDrop: prometheus.NewCounter(prometheus.CounterOpts{
			Name: NameUpstreamProgressDropped,
			Help: "Progress notifications of upstream servers dropped because they belong to no call the sending session serves (an unknown token, or another server's call).",
		}),
	}
	m.kinds = []string{KindCredential}
	for _, d := range dlp.DetectorNames() {
		m.kinds = append(m.kinds, KindDLPPrefix+d)
	}
	m.auditReopens = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: NameAuditReopens,
		Help: "Times the audit log was opened again, by cause: requested (SIGHUP), replaced (the path names another file), missing (deleted, or rotated away).",
	}, []string{"cause"})
	for _, c := range AuditReopenCauses {
		m.auditReopens.WithLabelValues(c)
	}
	m.reloads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: NameReloads,
		Help: "SIGHUP reloads of the config and policy, by result: applied (in force from the next call), refused (invalid, or a change that needs a restart: the running ones stay).",
	}, []string{LabelResult})
	for _, r := range ReloadResults {
		m.reloads.WithLabelValues(r)
	}
	m.connsRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: NameHTTPConnectionsRefused,
		Help: "Connections to the MCP HTTP listener refused at accept, by reason: peer_limit (the peer's share) or total_limit.",
	}, []string{LabelReason})
	m.sessionsRefused = prometheus.NewCounter(prometheus.CounterOpts{
		Name: NameMCPSessionsRefused,
		Help: "MCP sessions refused (503) because the session limit was reached.",
	})
	conns := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: NameHTTPConnections,
		Help: "Connections open on the MCP HTTP listener.",
	}, func() float64 { return m.servingValue(func(s *serving) func() int { return s.conns }) })
	sessions := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: NameMCPSessions,
		Help: "MCP sessions open over Streamable HTTP.",
	}, func() float64 { return m.servingValue(func(s *serving) func() int { return s.sessions }) })
	m.reg.MustRegister(m.decisions, m.executions, m.duration, m.redactions, m.egressDenied, m.auditErrors, m.auditReopens, m.reloads, m.progressDrop,
		m.connsRefused, m.sessionsRefused, conns, sessions,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, r := range ConnRefusedReasons {
		m.connsRefused.WithLabelValues(r)
	}

	for _, o := range outcomes {
		m.decisions.WithLabelValues(string(o), ReasonNone)
		for _, r := range reasons {
			m.decisions.WithLabelValues(string(o), string(r))
		}
	}
	for _, s := range govern.Statuses() {
		m.executions.WithLabelValues(s.String(), SandboxAbsent)
		for _, mode := range govern.SandboxModes() {
			m.executions.WithLabelValues(s.String(), mode.String())
		}
	}
	for _, k := range m.kinds {
		m.redactions.WithLabelValues(k)
	}
	return m
}

// Observe records what one audit event says: its decision (outcome and
// reason) and, when it carries an execution card, the card's status,
// sandbox mode, duration and refused egress. Call it once for every event
// built, whether or not the write then succeeds.
//
// The execution half of a routed hook call (an event with
// linked_event_id) counts its execution only: its decision was counted
// from the admit-time event, and a call is one decision.
//
// Redactions are not taken from the event, which has only their total;
// report them per kind with Redactions.
func (m *Metrics) Observe(ev *audit.Event) {
	if m == nil || ev == nil {
		return
	}
	d := &ev.Data
	if d.LinkedEventID == "" {
		m.decisions.WithLabelValues(outcomeLabel(d.Decision.Outcome), reasonLabel(d.Decision.Reason)).Inc()
	}
	x := d.Execution
	if x == nil {
		return
	}
	m.executions.WithLabelValues(statusLabel(x.Status), sandboxLabel(x.SandboxMode)).Inc()
	if x.Status.Started() {
		m.duration.Observe((time.Duration(x.DurationMS) * time.Millisecond).Seconds())
	}
	if x.Egress.Denied > 0 {
		m.egressDenied.Add(float64(x.Egress.Denied))
	}
}

// Redactions adds n redactions of one kind: KindCredential, or
// DLPKind(detector) for a built-in DLP detector. Any other kind is counted
// as "other". n <= 0 records nothing.
func (m *Metrics) Redactions(kind string, n int) {
	if m == nil || n <= 0 {
		return
	}
	if !slices.Contains(m.kinds, kind) {
		kind = Other
	}
	m.redactions.WithLabelValues(kind).Add(float64(n))
}

// DLPHits adds one redaction of kind dlp:<detector> for every hit.
func (m *Metrics) DLPHits(hits []dlp.Hit) {
	for _, h := range hits {
		m.Redactions(DLPKind(h.Detector), 1)
	}
}

// DLPKind is the redaction kind of a DLP detector's hits.
func DLPKind(detector string) string { return KindDLPPrefix + detector }

// AuditWriteError counts one audit event that could not be built or
// written.
func (m *Metrics) AuditWriteError() {
	if m == nil {
		return
	}
	m.auditErrors.Inc()
}

// UpstreamProgressDropped counts one upstream progress notification
// dropped: it belongs to no call of the session that sent it.
func (m *Metrics) UpstreamProgressDropped() {
	if m == nil {
		return
	}
	m.progressDrop.Inc()
}

// AuditReopenCauses is the cause label's vocabulary of
// mitrity_audit_reopens_total (audit.ReopenCause's words).
var AuditReopenCauses = []string{"requested", "replaced", "missing"}

// AuditReopened counts one reopen of the audit log for cause.
func (m *Metrics) AuditReopened(cause string) {
	if m == nil {
		return
	}
	if !slices.Contains(AuditReopenCauses, cause) {
		cause = Other
	}
	m.auditReopens.WithLabelValues(cause).Inc()
}

// ReloadResults is the result label's vocabulary of
// mitrity_config_reloads_total.
var ReloadResults = []string{ReloadApplied, ReloadRefused}

// The results of a reload.
const (
	ReloadApplied = "applied"
	ReloadRefused = "refused"
)

// Reloaded counts one SIGHUP reload of the config and policy: applied
// when err is nil, else refused.
func (m *Metrics) Reloaded(err error) {
	if m == nil {
		return
	}
	r := ReloadApplied
	if err != nil {
		r = ReloadRefused
	}
	m.reloads.WithLabelValues(r).Inc()
}

// SetServing names the functions that report the HTTP server's open
// connections and sessions (mitrity_http_connections, mitrity_mcp_sessions;
// both 0 until it is called).
func (m *Metrics) SetServing(conns, sessions func() int) {
	if m == nil {
		return
	}
	m.serving.Store(&serving{conns: conns, sessions: sessions})
}

func (m *Metrics) servingValue(pick func(*serving) func() int) float64 {
	s := m.serving.Load()
	if s == nil {
		return 0
	}
	if f := pick(s); f != nil {
		return float64(f())
	}
	return 0
}

// ConnRefused counts one connection refused at accept, for a reason of
// ConnRefusedReasons (any other is counted as "other").
func (m *Metrics) ConnRefused(reason string) {
	if m == nil {
		return
	}
	if !slices.Contains(ConnRefusedReasons, reason) {
		reason = Other
	}
	m.connsRefused.WithLabelValues(reason).Inc()
}

// SessionRefused counts one MCP session refused at the session limit.
func (m *Metrics) SessionRefused() {
	if m == nil {
		return
	}
	m.sessionsRefused.Inc()
}

// Handler serves the registry in the Prometheus text (or negotiated)
// exposition format. A nil *Metrics serves 404.
func (m *Metrics) Handler() http.Handler {
	if m == nil {
		return http.NotFoundHandler()
	}
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		Registry:      m.reg, // counts its own errors as promhttp_metric_handler_errors_total
		ErrorHandling: promhttp.ContinueOnError,
	})
}

func outcomeLabel(o audit.Outcome) string {
	if slices.Contains(outcomes, o) {
		return string(o)
	}
	return Other
}

func reasonLabel(r govern.Reason) string {
	switch {
	case r == "":
		return ReasonNone
	case slices.Contains(reasons, r):
		return string(r)
	}
	return Other
}

func statusLabel(s govern.Status) string {
	if s.Valid() {
		return s.String()
	}
	return Other
}

func sandboxLabel(m *govern.SandboxMode) string {
	switch {
	case m == nil:
		return SandboxAbsent
	case m.Valid():
		return m.String()
	}
	return Other
}
