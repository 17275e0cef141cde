package metrics

import (
	"bufio"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"gotest.tools/v3/assert"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/audit"
	"github.com/mitrity/mitrity/govern/dlp"
)

func mode(m govern.SandboxMode) *govern.SandboxMode { return &m }

func call(surface string) govern.Call {
	return govern.Call{Agent: "claude-build-7", Tool: govern.ToolShellExecute, ActionType: govern.ActionShellExecute,
		Surface: surface, Command: "make test", Cwd: "/workspace"}
}

// build turns a record into an event with the zero Builder, as the service
// does; the writer's validation runs inside Build.
func build(t *testing.T, r audit.Record) *audit.Event {
	t.Helper()
	ev, err := audit.Builder{}.Build(r)
	assert.NilError(t, err)
	return ev
}

// scrape fetches the handler's text exposition and returns every sample
// that is not zero and not a Go or process metric, keyed by its series.
func scrape(t *testing.T, m *Metrics) map[string]float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	assert.Equal(t, rec.Code, http.StatusOK)
	assert.Assert(t, strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain"), rec.Header().Get("Content-Type"))
	got := map[string]float64{}
	sc := bufio.NewScanner(rec.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") || !strings.HasPrefix(line, "mitrity_") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		assert.Assert(t, i > 0, line)
		v, err := strconv.ParseFloat(line[i+1:], 64)
		assert.NilError(t, err, line)
		if v != 0 {
			got[line[:i]] = v
		}
	}
	assert.NilError(t, sc.Err())
	return got
}

func TestObserveAuditEvents(t *testing.T) {
	t.Parallel()
	m := New()

	// A hard denial before anything ran: a decision event.
	m.Observe(build(t, audit.Record{Call: call("mcp"),
		Decision: govern.Decision{Outcome: govern.Deny, Reason: govern.ReasonCredentialInArgv, Stage: "analyzer", Message: "no"}}))

	// A plain allow that ran under bubblewrap, exited 3, with refused egress.
	m.Observe(build(t, audit.Record{Call: call("mcp"), Decision: govern.Decision{Outcome: govern.Allow, Stage: "rules"},
		Run: &audit.Run{Status: govern.StatusCompleted, SandboxMode: mode(govern.SandboxBubblewrap), ExitCode: 3,
			Duration: 1843 * time.Millisecond, TimeoutSeconds: 120, RedactionCount: 2,
			EgressAllowed: 2, EgressDenied: 3, DeniedHosts: []string{"evil.example:443", "169.254.169.254:80"}}}))

	// No sandbox and sandbox_required: denied, never ran.
	m.Observe(build(t, audit.Record{Call: call("cli"),
		Decision: govern.Decision{Outcome: govern.Deny, Reason: govern.ReasonSandboxUnavailable, Stage: "executor"},
		Run: &audit.Run{Status: govern.StatusNeverRan, Reason: govern.ReasonSandboxUnavailable,
			SandboxMode: mode(govern.SandboxUnavailableDenied), TimeoutSeconds: 120}}))

	// Could not start: the executor's reason rides on an allow.
	m.Observe(build(t, audit.Record{Call: call("mcp"),
		Decision: govern.Decision{Outcome: govern.Allow, Reason: govern.ReasonSpawnError, Stage: "executor"},
		Run: &audit.Run{Status: govern.StatusFailedToStart, Reason: govern.ReasonSpawnError,
			SandboxMode: mode(govern.SandboxNone), Duration: 3 * time.Millisecond, TimeoutSeconds: 120}}))

	// A routed hook call: the decision at admit time, then the execution,
	// linked, which timed out in mode none.
	admit := build(t, audit.Record{Call: call("agent_hook"), Decision: govern.Decision{Outcome: govern.Allow, Stage: "rules"}})
	m.Observe(admit)
	m.Observe(build(t, audit.Record{Call: call("agent_hook"), Decision: govern.Decision{Outcome: govern.Allow, Stage: "rules"},
		LinkedEventID: admit.ID,
		Run: &audit.Run{Status: govern.StatusTimedOut, SandboxMode: mode(govern.SandboxNone),
			Duration: 120 * time.Second, TimeoutSeconds: 120}}))

	// A routed call whose ticket expired: never ran, no mode to vouch for.
	admit2 := build(t, audit.Record{Call: call("agent_hook"), Decision: govern.Decision{Outcome: govern.Allow, Stage: "rules"}})
	m.Observe(admit2)
	m.Observe(build(t, audit.Record{Call: call("agent_hook"), Decision: govern.Decision{Outcome: govern.Allow, Stage: "rules"},
		LinkedEventID: admit2.ID, Run: &audit.Run{Status: govern.StatusNeverRan, TimeoutSeconds: 120}}))

	// A held call denied by an approver.
	m.Observe(build(t, audit.Record{Call: call("mcp"),
		Decision: govern.Decision{Outcome: govern.Deny, Reason: govern.ReasonHoldDenied, Stage: "hold"}}))

	m.AuditWriteError()

	want := map[string]float64{
		`mitrity_decisions_total{decision="allow",reason="none"}`:                        3, // the unrouted run + two admits; linked halves not again
		`mitrity_decisions_total{decision="allow",reason="spawn_error"}`:                 1,
		`mitrity_decisions_total{decision="deny",reason="credential_in_argv"}`:           1,
		`mitrity_decisions_total{decision="deny",reason="sandbox_unavailable"}`:          1,
		`mitrity_decisions_total{decision="deny",reason="hold_denied"}`:                  1,
		`mitrity_executions_total{sandbox_mode="bubblewrap",status="completed"}`:         1,
		`mitrity_executions_total{sandbox_mode="unavailable_denied",status="never_ran"}`: 1,
		`mitrity_executions_total{sandbox_mode="none",status="failed_to_start"}`:         1,
		`mitrity_executions_total{sandbox_mode="none",status="timed_out"}`:               1,
		`mitrity_executions_total{sandbox_mode="absent",status="never_ran"}`:             1,
		// Two started runs: 1.843s and 120s.
		`mitrity_execution_duration_seconds_bucket{le="2.5"}`:  1,
		`mitrity_execution_duration_seconds_bucket{le="5"}`:    1,
		`mitrity_execution_duration_seconds_bucket{le="10"}`:   1,
		`mitrity_execution_duration_seconds_bucket{le="30"}`:   1,
		`mitrity_execution_duration_seconds_bucket{le="60"}`:   1,
		`mitrity_execution_duration_seconds_bucket{le="120"}`:  2,
		`mitrity_execution_duration_seconds_bucket{le="300"}`:  2,
		`mitrity_execution_duration_seconds_bucket{le="600"}`:  2,
		`mitrity_execution_duration_seconds_bucket{le="1800"}`: 2,
		`mitrity_execution_duration_seconds_bucket{le="3600"}`: 2,
		`mitrity_execution_duration_seconds_bucket{le="+Inf"}`: 2,
		`mitrity_execution_duration_seconds_sum`:               121.843,
		`mitrity_execution_duration_seconds_count`:             2,
		`mitrity_egress_denied_total`:                          3,
		`mitrity_audit_write_errors_total`:                     1,
	}
	assert.DeepEqual(t, scrape(t, m), want)
}

func TestRedactions(t *testing.T) {
	t.Parallel()
	m := New()
	b, err := dlp.Bind([]string{"all"})
	assert.NilError(t, err)
	_, hits := b.Redact("token ghp_" + strings.Repeat("a", 36) + " and AKIA" + strings.Repeat("B", 16) + " and ghp_" + strings.Repeat("c", 36))
	assert.Equal(t, len(hits), 3)
	m.DLPHits(hits)
	m.Redactions(KindCredential, 2)
	m.Redactions(KindCredential, 0)  // nothing
	m.Redactions(KindCredential, -4) // nothing
	m.Redactions("dlp:not_a_detector", 1)
	m.Redactions("credential:github_token", 1) // an id is never a label

	want := map[string]float64{
		`mitrity_redactions_total{kind="credential"}`:            2,
		`mitrity_redactions_total{kind="dlp:github_token"}`:      2,
		`mitrity_redactions_total{kind="dlp:aws_access_key_id"}`: 1,
		`mitrity_redactions_total{kind="other"}`:                 2,
	}
	assert.DeepEqual(t, scrape(t, m), want)
}

// TestOutsideVocabulary: a word no vocabulary knows becomes "other", so a
// bug upstream adds at most one series per label.
func TestOutsideVocabulary(t *testing.T) {
	t.Parallel()
	m := New()
	before := testutil.CollectAndCount(m.decisions) + testutil.CollectAndCount(m.executions)
	for i := range 50 {
		bad := govern.SandboxMode(100 + i)
		ev := &audit.Event{Data: audit.Data{
			Decision:  audit.Decision{Outcome: audit.Outcome("maybe-" + strconv.Itoa(i)), Reason: govern.Reason("made_up_" + strconv.Itoa(i))},
			Execution: &audit.Execution{Status: govern.Status(100 + i), SandboxMode: &bad},
		}}
		m.Observe(ev)
	}
	assert.Equal(t, testutil.ToFloat64(m.decisions.WithLabelValues(Other, Other)), 50.0)
	assert.Equal(t, testutil.ToFloat64(m.executions.WithLabelValues(Other, Other)), 50.0)
	after := testutil.CollectAndCount(m.decisions) + testutil.CollectAndCount(m.executions)
	assert.Equal(t, after, before+2)
}

// TestSeriesBounded: every series exists from the start and none is added
// by real events, whatever their agent, command or ids.
func TestSeriesBounded(t *testing.T) {
	t.Parallel()
	m := New()
	want := map[string]int{
		NameDecisions:  len(outcomes) * (len(reasons) + 1),
		NameExecutions: len(govern.Statuses()) * (len(govern.SandboxModes()) + 1),
		NameRedactions: 1 + len(dlp.DetectorNames()),
	}
	counts := func() map[string]int {
		return map[string]int{
			NameDecisions:  testutil.CollectAndCount(m.decisions),
			NameExecutions: testutil.CollectAndCount(m.executions),
			NameRedactions: testutil.CollectAndCount(m.redactions),
		}
	}
	assert.DeepEqual(t, counts(), want)
	for _, r := range reasons {
		for i := range 3 {
			c := call("mcp")
			c.Agent = "agent-" + strconv.Itoa(i)
			m.Observe(build(t, audit.Record{Call: c, Decision: govern.Decision{Outcome: govern.Deny, Reason: r, Stage: "s"}}))
		}
	}
	assert.DeepEqual(t, counts(), want)
}

// TestReasonVocabulary keeps the reason label's vocabulary equal to the
// Reason constants declared in govern, so a new reason is not counted as
// "other".
func TestReasonVocabulary(t *testing.T) {
	t.Parallel()
	f, err := parser.ParseFile(token.NewFileSet(), "../reason.go", nil, 0)
	assert.NilError(t, err)
	var declared []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Reason" {
				continue
			}
			for _, v := range vs.Values {
				lit := v.(*ast.BasicLit)
				w, err := strconv.Unquote(lit.Value)
				assert.NilError(t, err)
				declared = append(declared, w)
			}
		}
	}
	var ours []string
	for _, r := range reasons {
		ours = append(ours, string(r))
	}
	slices.Sort(declared)
	slices.Sort(ours)
	if diff := cmp.Diff(declared, ours); diff != "" {
		t.Fatalf("reason vocabulary differs from govern/reason.go (-declared +metrics):\n%s", diff)
	}
}

func TestLint(t *testing.T) {
	t.Parallel()
	m := New()
	problems, err := testutil.GatherAndLint(m.reg, NameDecisions, NameExecutions, NameExecutionDuration,
		NameRedactions, NameEgressDenied, NameAuditWriteErrors)
	assert.NilError(t, err)
	assert.Equal(t, len(problems), 0, "%v", problems)
}

func TestNilMetrics(t *testing.T) {
	t.Parallel()
	var m *Metrics
	m.Observe(&audit.Event{})
	m.Redactions(KindCredential, 1)
	m.DLPHits([]dlp.Hit{{Detector: "jwt"}})
	m.AuditWriteError()
	m.Reloaded(nil)
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	assert.Equal(t, rec.Code, http.StatusNotFound)
	New().Observe(nil)
}

func TestConcurrentObserve(t *testing.T) {
	t.Parallel()
	m := New()
	ev := build(t, audit.Record{Call: call("mcp"), Decision: govern.Decision{Outcome: govern.Allow},
		Run: &audit.Run{Status: govern.StatusCompleted, SandboxMode: mode(govern.SandboxSeatbelt), Duration: time.Second, EgressDenied: 1}})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				m.Observe(ev)
				m.Redactions(KindCredential, 1)
				m.AuditWriteError()
			}
		})
		wg.Go(func() {
			rec := httptest.NewRecorder()
			m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
			if rec.Code != http.StatusOK {
				t.Errorf("scrape: %d", rec.Code)
			}
		})
	}
	wg.Wait()
	assert.Equal(t, testutil.ToFloat64(m.decisions.WithLabelValues("allow", ReasonNone)), 800.0)
	assert.Equal(t, testutil.ToFloat64(m.executions.WithLabelValues("completed", "seatbelt")), 800.0)
	assert.Equal(t, testutil.ToFloat64(m.egressDenied), 800.0)
	assert.Equal(t, testutil.ToFloat64(m.auditErrors), 800.0)
}

// TestServing: the HTTP server's gauges read what it reports (zero before
// it starts), and its refusals count under a closed reason vocabulary.
func TestServing(t *testing.T) {
	t.Parallel()
	m := New()
	assert.DeepEqual(t, scrape(t, m), map[string]float64{})
	conns, sessions := 3, 7
	m.SetServing(func() int { return conns }, func() int { return sessions })
	m.ConnRefused("peer_limit")
	m.ConnRefused("peer_limit")
	m.ConnRefused("total_limit")
	m.ConnRefused("made_up")
	m.SessionRefused()
	want := map[string]float64{
		NameHTTPConnections: 3,
		NameMCPSessions:     7,
		NameHTTPConnectionsRefused + `{reason="peer_limit"}`:  2,
		NameHTTPConnectionsRefused + `{reason="total_limit"}`: 1,
		NameHTTPConnectionsRefused + `{reason="other"}`:       1,
		NameMCPSessionsRefused:                                1,
	}
	assert.DeepEqual(t, scrape(t, m), want)
	conns = 0
	delete(want, NameHTTPConnections)
	assert.DeepEqual(t, scrape(t, m), want)
	var nilM *Metrics
	nilM.SetServing(nil, nil)
	nilM.ConnRefused("peer_limit")
	nilM.SessionRefused()
}

// The cause label's words are audit.ReopenCause's.
func TestAuditReopenCauses(t *testing.T) {
	want := []string{audit.ReopenRequested.String(), audit.ReopenReplaced.String(), audit.ReopenMissing.String()}
	if !slices.Equal(AuditReopenCauses, want) {
		t.Fatalf("AuditReopenCauses = %v, want %v", AuditReopenCauses, want)
	}
}

// TestReloaded: a reload is counted applied or refused, and both series
// exist at zero before the first.
func TestReloaded(t *testing.T) {
	t.Parallel()
	m := New()
	assert.Equal(t, testutil.CollectAndCount(m.reloads), len(ReloadResults))
	m.Reloaded(nil)
	m.Reloaded(errors.New("exec.enabled changed"))
	m.Reloaded(errors.New("unknown key"))
	assert.DeepEqual(t, scrape(t, m), map[string]float64{
		NameReloads + `{result="applied"}`: 1,
		NameReloads + `{result="refused"}`: 2,
	})
}
