package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mitrity/mitrity/govern"
	"github.com/rs/zerolog"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

var t0 = time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)

// syncBuffer is a log sink safe for the webhook goroutines of httptest.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		assert.NilError(t, json.Unmarshal([]byte(l), &m), l)
		out = append(out, m)
	}
	return out
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func newTest(t *testing.T, opts ...Option) (*Notifier, *fakeClock, *syncBuffer) {
	t.Helper()
	clock := &fakeClock{now: t0}
	var log syncBuffer
	n, err := New(zerolog.New(&log), append([]Option{WithClock(clock.Now), WithHost("build-7.example")}, opts...)...)
	assert.NilError(t, err)
	return n, clock, &log
}

func denied(agent string) Degradation {
	return Degradation{
		Agent: agent, EventID: "0a1b2c3d-0000-4000-8000-000000000001", Mode: govern.SandboxUnavailableDenied,
		Requested: "auto", Seccomp: "required", HostReason: "unprivileged user namespaces are disabled",
		Status: govern.StatusNeverRan, SandboxRequired: true,
	}
}

func unsandboxed(agent string) Degradation {
	return Degradation{
		Agent: agent, EventID: "0a1b2c3d-0000-4000-8000-000000000002", Mode: govern.SandboxNone,
		Requested: "auto", HostReason: "bwrap not found in PATH", Status: govern.StatusCompleted,
	}
}

func TestRateLimitSandboxDegraded(t *testing.T) {
	t.Parallel()
	n, clock, _ := newTest(t)
	ctx := context.Background()
	send := func(d Degradation) bool {
		t.Helper()
		ok, err := n.SandboxDegraded(ctx, d)
		assert.NilError(t, err)
		return ok
	}
	assert.Assert(t, send(denied("a1")), "first for the key is sent")
	clock.Advance(30 * time.Minute)
	assert.Assert(t, !send(denied("a1")), "same agent, mode and reason within the hour is suppressed")

	other := denied("a1")
	other.HostReason = "kernel.apparmor_restrict_unprivileged_userns=1"
	assert.Assert(t, send(other), "another host reason is another key")
	assert.Assert(t, send(unsandboxed("a1")), "another mode is another key")
	assert.Assert(t, send(denied("a2")), "another agent is another key")

	clock.Advance(29*time.Minute + 59*time.Second)
	assert.Assert(t, !send(denied("a1")), "59m59s after the first: still suppressed")
	clock.Advance(time.Second)
	assert.Assert(t, send(denied("a1")), "an hour after the first: released")
	assert.Assert(t, !send(denied("a1")), "and a new window opens")

	assert.Equal(t, n.Sent(), uint64(5))
	assert.Equal(t, n.Suppressed(), uint64(3))
}

func TestRateLimitOutputRedacted(t *testing.T) {
	t.Parallel()
	n, clock, log := newTest(t)
	ctx := context.Background()
	r := Redaction{Agent: "a1", EventID: "e1", CredentialID: "github_token", Count: 1}
	send := func(r Redaction) bool {
		t.Helper()
		ok, err := n.OutputRedacted(ctx, r)
		assert.NilError(t, err)
		return ok
	}
	assert.Assert(t, send(r))
	clock.Advance(time.Minute)
	assert.Assert(t, !send(r))
	assert.Assert(t, !send(r))
	r2 := r
	r2.CredentialID = "aws_key"
	assert.Assert(t, send(r2), "another credential is another key")
	r3 := r
	r3.Agent = "a2"
	assert.Assert(t, send(r3), "another agent is another key")
	clock.Advance(Window)
	assert.Assert(t, send(r), "released after the hour")

	lines := log.lines(t)
	assert.Equal(t, len(lines), 4)
	last := lines[3]
	assert.Equal(t, last["suppressed"], 2.0, "the next notification says how many were dropped")
	assert.Assert(t, is.Contains(last["text"].(string), "2 more like this in the past hour were not sent."))
}

func TestFullStrengthNotifiesNothing(t *testing.T) {
	t.Parallel()
	n, _, log := newTest(t)
	for _, m := range []govern.SandboxMode{govern.SandboxBubblewrap, govern.SandboxSeatbelt} {
		d := unsandboxed("a1")
		d.Mode = m
		ok, err := n.SandboxDegraded(context.Background(), d)
		assert.NilError(t, err)
		assert.Assert(t, !ok)
	}
	assert.Equal(t, log.String(), "")
}

func TestInvalidInputRefused(t *testing.T) {
	t.Parallel()
	n, _, _ := newTest(t)
	ctx := context.Background()
	for name, mutate := range map[string]func(*Degradation){
		"no agent":                     func(d *Degradation) { d.Agent = "" },
		"no event id":                  func(d *Degradation) { d.EventID = "" },
		"no requested backend":         func(d *Degradation) { d.Requested = "" },
		"invalid mode":                 func(d *Degradation) { d.Mode = 0 },
		"invalid status":               func(d *Degradation) { d.Status = 0 },
		"unavailable_denied that ran":  func(d *Degradation) { d.Status = govern.StatusCompleted },
		"unavailable_denied, optional": func(d *Degradation) { d.SandboxRequired = false },
	} {
		d := denied("a1")
		mutate(&d)
		_, err := n.SandboxDegraded(ctx, d)
		assert.ErrorIs(t, err, ErrInvalid, name)
	}
	d := unsandboxed("a1")
	d.SandboxRequired = true
	_, err := n.SandboxDegraded(ctx, d)
	assert.ErrorContains(t, err, "must be denied as unavailable_denied")
	_, err = n.OutputRedacted(ctx, Redaction{Agent: "a1", EventID: "e1", CredentialID: "x"})
	assert.ErrorIs(t, err, ErrInvalid)
	assert.Equal(t, n.Sent(), uint64(0))
}

func TestWording(t *testing.T) {
	t.Parallel()
	noSeccomp := Degradation{
		Agent: "claude-build-7", EventID: "ev-3", Mode: govern.SandboxBubblewrapNoSeccomp,
		Requested: "bubblewrap", Seccomp: "preferred", HostReason: "seccomp filter could not be installed: EINVAL",
		Status: govern.StatusCompleted, SandboxRequired: true,
	}
	noneNotStarted := unsandboxed("ops-bot")
	noneNotStarted.Status, noneNotStarted.HostReason = govern.StatusFailedToStart, ""
	for _, tc := range []struct {
		name    string
		d       *Degradation
		r       *Redaction
		prefix  string
		want    []string
		notWant []string
	}{
		{
			name: "nothing ran: leads with denied", d: ptr(denied("claude-build-7")),
			prefix: "Denied: agent claude-build-7 cannot execute anything in the governed shell on build-7.example.",
			want: []string{
				"Requested backend: auto;",                               // which backend was requested
				"host reason: unprivileged user namespaces are disabled", // the host's reason
				"the command did not run",                                // whether it ran
				"The policy requires a sandbox (sandbox_required: true)", // what the policy required
				"Until the host's sandbox prerequisites are fixed, every governed-shell command from this agent is refused",
				"Audit event 0a1b2c3d-0000-4000-8000-000000000001: mitrity-gateway audit show 0a1b2c3d-0000-4000-8000-000000000001",
			},
			notWant: []string{"Still held", "degraded"},
		},
		{
			name: "ran with no sandbox: what it lacked and what held", d: ptr(unsandboxed("ops-bot")),
			prefix: "Sandbox degraded: a command from agent ops-bot ran on build-7.example with no kernel sandbox (sandbox_mode: none).",
			want: []string{
				"Requested backend: auto; host reason: bwrap not found in PATH.",
				"The policy does not require a sandbox (sandbox_required: false)",
				"The run did not have filesystem containment or egress control: the proxy variables are set and the proxy still enforces the allowlist, but nothing stops a process from ignoring them.",
				"Still held: pinned scripts, the constructed environment, output redaction, timeouts, output caps.",
				"Audit event 0a1b2c3d-0000-4000-8000-000000000002:",
			},
			notWant: []string{"Denied", "did not run"},
		},
		{
			name: "no sandbox, failed to start", d: &noneNotStarted,
			prefix: "Sandbox degraded: a command from agent ops-bot on build-7.example was to run with no kernel sandbox",
			want: []string{
				"it did not run (status failed_to_start)",
				"host reason: the host gave no reason.",
				"Runs from this agent on this host have no filesystem containment or egress control",
				"Still held:",
			},
			notWant: []string{"The run did not have"},
		},
		{
			name: "bubblewrap without seccomp", d: &noSeccomp,
			prefix: "Sandbox degraded: a command from agent claude-build-7 ran on build-7.example in bubblewrap without the seccomp stage (sandbox_mode: bubblewrap_no_seccomp).",
			want: []string{
				"Requested backend: bubblewrap, seccomp: preferred; host reason: seccomp filter could not be installed: EINVAL.",
				"The policy requires a sandbox (sandbox_required: true), which bubblewrap satisfies",
				"host Unix sockets were reachable from inside the sandbox",
				"Still held: the namespaces",
				"Audit event ev-3: mitrity-gateway audit show ev-3",
			},
			notWant: []string{"Denied", "filesystem containment"},
		},
		{
			name: "credential redacted", r: &Redaction{Agent: "claude-build-7", EventID: "ev-4", CredentialID: "github_token", Count: 3},
			prefix: "Credential github_token was redacted from command output: a command from agent claude-build-7 on build-7.example printed its value (3 times), and the agent saw [REDACTED:credential:github_token] instead.",
			want:   []string{"An env dump, a cat of a key file or a script that echoes its token", "Audit event ev-4: mitrity-gateway audit show ev-4"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n, _, log := newTest(t)
			var err error
			if tc.d != nil {
				_, err = n.SandboxDegraded(context.Background(), *tc.d)
			} else {
				_, err = n.OutputRedacted(context.Background(), *tc.r)
			}
			assert.NilError(t, err)
			lines := log.lines(t)
			assert.Equal(t, len(lines), 1)
			text := lines[0]["text"].(string)
			assert.Assert(t, strings.HasPrefix(text, tc.prefix), "text:\n%s\nwant prefix:\n%s", text, tc.prefix)
			for _, w := range tc.want {
				assert.Check(t, is.Contains(text, w))
			}
			for _, w := range tc.notWant {
				assert.Check(t, !strings.Contains(text, w), "text has %q:\n%s", w, text)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestLogSink(t *testing.T) {
	t.Parallel()
	n, _, log := newTest(t, WithEventLink("https://dash.example/audit/{id}"))
	ctx := context.Background()
	_, err := n.SandboxDegraded(ctx, denied("a1"))
	assert.NilError(t, err)
	_, err = n.SandboxDegraded(ctx, unsandboxed("a1"))
	assert.NilError(t, err)
	lines := log.lines(t)
	assert.Equal(t, len(lines), 2)
	assert.Equal(t, lines[0]["level"], "error", "an agent that can run nothing is an outage")
	assert.Equal(t, lines[0]["message"], string(KindSandboxDegraded))
	assert.Equal(t, lines[0]["event_link"], "https://dash.example/audit/0a1b2c3d-0000-4000-8000-000000000001")
	assert.Equal(t, lines[0]["ran"], false)
	assert.Equal(t, lines[0]["sandbox_mode"], "unavailable_denied")
	assert.Equal(t, lines[1]["level"], "warn")
	assert.Equal(t, lines[1]["ran"], true)

	_, err = New(zerolog.Nop(), WithEventLink("https://dash.example/audit"))
	assert.ErrorContains(t, err, "{id}")
}

const hookPath = "/services/T000/B000/s3cr3tW3bh00kT0k3n"

func TestWebhookPayload(t *testing.T) {
	t.Parallel()
	type got struct {
		path, contentType string
		body              []byte
	}
	ch := make(chan got, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		ch <- got{r.URL.Path, r.Header.Get("Content-Type"), b}
	}))
	t.Cleanup(srv.Close)
	assert.Assert(t, strings.HasPrefix(srv.URL, "http://127.0.0.1:"), srv.URL)

	n, _, _ := newTest(t, WithWebhook(srv.URL+hookPath, 2*time.Second))
	ok, err := n.SandboxDegraded(context.Background(), denied("claude-build-7"))
	assert.NilError(t, err)
	assert.Assert(t, ok)
	g := <-ch
	assert.Equal(t, g.path, hookPath)
	assert.Equal(t, g.contentType, "application/json")
	var p map[string]any
	assert.NilError(t, json.Unmarshal(g.body, &p))
	assert.Assert(t, strings.HasPrefix(p["text"].(string), "Denied: "), "Slack shows text")
	assert.Equal(t, p["kind"], "execution.sandbox_degraded")
	assert.Equal(t, p["agent"], "claude-build-7")
	assert.Equal(t, p["host"], "build-7.example")
	assert.Equal(t, p["event_id"], "0a1b2c3d-0000-4000-8000-000000000001")
	assert.Equal(t, p["event_link"], "mitrity-gateway audit show 0a1b2c3d-0000-4000-8000-000000000001")
	assert.Equal(t, p["sandbox_mode"], "unavailable_denied")
	assert.Equal(t, p["requested_backend"], "auto")
	assert.Equal(t, p["host_reason"], "unprivileged user namespaces are disabled")
	assert.Equal(t, p["ran"], false)
	assert.Equal(t, p["sandbox_required"], true)
	assert.Equal(t, p["suppressed"], 0.0)
	assert.Equal(t, p["time"], "2026-03-14T09:00:00Z")

	ok, err = n.OutputRedacted(context.Background(), Redaction{Agent: "claude-build-7", EventID: "e9", CredentialID: "github_token", Count: 1})
	assert.NilError(t, err)
	assert.Assert(t, ok)
	g = <-ch
	assert.NilError(t, json.Unmarshal(g.body, &p))
	p = map[string]any{}
	assert.NilError(t, json.Unmarshal(g.body, &p))
	assert.Equal(t, p["kind"], "execution.output_redacted")
	assert.Equal(t, p["credential_id"], "github_token")
	assert.Equal(t, p["redactions"], 1.0)
	_, hasMode := p["sandbox_mode"]
	assert.Assert(t, !hasMode)
	assert.Equal(t, n.WebhookFailures(), uint64(0))
}

func TestWebhookHangReturnsWithinTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs first: lets Close finish

	const timeout = 300 * time.Millisecond
	n, _, log := newTest(t, WithWebhook(srv.URL+hookPath, timeout))
	start := time.Now()
	ok, err := n.SandboxDegraded(context.Background(), denied("a1"))
	elapsed := time.Since(start)
	assert.NilError(t, err, "a webhook failure is logged and counted, not returned")
	assert.Assert(t, ok, "the log sink still delivered")
	assert.Assert(t, elapsed >= timeout, "returned before the timeout: %s", elapsed)
	assert.Assert(t, elapsed < timeout+time.Second, "blocked %s, timeout %s", elapsed, timeout)
	assert.Equal(t, n.WebhookFailures(), uint64(1))
	out := log.String()
	assert.Assert(t, strings.Contains(out, "webhook delivery failed"), out)
	assert.Assert(t, !strings.Contains(out, "s3cr3tW3bh00kT0k3n"), "the webhook URL is a secret:\n%s", out)
}

func TestWebhookFailuresCounted(t *testing.T) {
	t.Parallel()
	for name, h := range map[string]http.HandlerFunc{
		"server error": func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", http.StatusInternalServerError) },
		"redirect": func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "http://elsewhere.example/", http.StatusFound)
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(h)
			t.Cleanup(srv.Close)
			n, _, log := newTest(t, WithWebhook(srv.URL+hookPath, time.Second))
			ok, err := n.OutputRedacted(context.Background(), Redaction{Agent: "a", EventID: "e", CredentialID: "c", Count: 1})
			assert.NilError(t, err)
			assert.Assert(t, ok)
			assert.Equal(t, n.WebhookFailures(), uint64(1))
			assert.Assert(t, !strings.Contains(log.String(), "s3cr3tW3bh00kT0k3n"), log.String())
		})
	}

	// A closed port: the dial fails fast and the URL stays out of the log.
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL + hookPath
	srv.Close()
	n, _, log := newTest(t, WithWebhook(url, time.Second))
	_, err := n.OutputRedacted(context.Background(), Redaction{Agent: "a", EventID: "e", CredentialID: "c", Count: 1})
	assert.NilError(t, err)
	assert.Equal(t, n.WebhookFailures(), uint64(1))
	assert.Assert(t, !strings.Contains(log.String(), "s3cr3tW3bh00kT0k3n"), log.String())
}

func TestWebhookConfigRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url     string
		timeout time.Duration
	}{
		{"hooks.slack.com/services/T/B/s3cr3tW3bh00kT0k3n", time.Second},
		{"ftp://hooks.example/s3cr3tW3bh00kT0k3n", time.Second},
		{"https:///s3cr3tW3bh00kT0k3n", time.Second},
		{"https://hooks.example/x", -time.Second},
		{"https://hooks.example/x", time.Minute},
	} {
		_, err := New(zerolog.Nop(), WithWebhook(tc.url, tc.timeout))
		assert.Assert(t, err != nil, tc.url)
		assert.Assert(t, !strings.Contains(err.Error(), "s3cr3tW3bh00kT0k3n"), err.Error())
	}
	_, err := New(zerolog.Nop(), WithHTTPClient(http.DefaultClient))
	assert.ErrorContains(t, err, "without WithWebhook")
}

func TestKindVocabulary(t *testing.T) {
	t.Parallel()
	for _, k := range Kinds() {
		b, err := json.Marshal(k)
		assert.NilError(t, err)
		var back Kind
		assert.NilError(t, json.Unmarshal(b, &back))
		assert.Equal(t, back, k)
	}
	_, err := json.Marshal(Kind("execution.sandbox_downgraded"))
	assert.ErrorContains(t, err, "unknown notification kind")
	var k Kind
	assert.ErrorContains(t, json.Unmarshal([]byte(`"sandbox_degraded"`), &k), "unknown notification kind")
}

// TestShareRates: a notifier that shares another's windows (a reload's)
// suppresses what the other already sent within the hour; one that does
// not would send it again.
func TestShareRates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	first, clock, _ := newTest(t)
	ok, err := first.SandboxDegraded(ctx, denied("a1"))
	assert.NilError(t, err)
	assert.Assert(t, ok, "first for the key is sent")

	fresh, _, _ := newTest(t)
	ok, err = fresh.SandboxDegraded(ctx, denied("a1"))
	assert.NilError(t, err)
	assert.Assert(t, ok, "a notifier of its own has windows of its own")

	reloaded, err := New(zerolog.Nop(), WithClock(clock.Now), WithHost("build-7.example"))
	assert.NilError(t, err)
	reloaded.ShareRates(first)
	clock.Advance(10 * time.Minute)
	ok, err = reloaded.SandboxDegraded(ctx, denied("a1"))
	assert.NilError(t, err)
	assert.Assert(t, !ok, "the reloaded notifier suppresses the key the last one sent within the hour")
	ok, err = reloaded.SandboxDegraded(ctx, denied("a2"))
	assert.NilError(t, err)
	assert.Assert(t, ok, "another key is sent")
	clock.Advance(50 * time.Minute)
	ok, err = reloaded.SandboxDegraded(ctx, denied("a1"))
	assert.NilError(t, err)
	assert.Assert(t, ok, "an hour after the first: released")
	reloaded.ShareRates(nil) // no previous notifier: its own windows stay
	ok, err = reloaded.SandboxDegraded(ctx, denied("a1"))
	assert.NilError(t, err)
	assert.Assert(t, !ok, "and the window it opened holds")
}
