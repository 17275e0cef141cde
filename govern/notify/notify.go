package notify

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mitrity/mitrity/govern"
	"github.com/rs/zerolog"
)

// Kind is the closed set of notifications.
type Kind string

const (
	// KindSandboxDegraded: the shell stamped none, bubblewrap_no_seccomp or
	// unavailable_denied. Once per agent, mode and host reason per hour.
	KindSandboxDegraded Kind = "execution.sandbox_degraded"
	// KindOutputRedacted: an injected credential value was redacted from a
	// command's output. Once per agent and credential per hour.
	KindOutputRedacted Kind = "execution.output_redacted"
)

// Kinds lists every kind.
func Kinds() []Kind { return []Kind{KindSandboxDegraded, KindOutputRedacted} }

// MarshalText refuses a kind outside the set.
func (k Kind) MarshalText() ([]byte, error) {
	if !slices.Contains(Kinds(), k) {
		return nil, fmt.Errorf("unknown notification kind %q", string(k))
	}
	return []byte(k), nil
}

// UnmarshalText refuses a kind outside the set.
func (k *Kind) UnmarshalText(b []byte) error {
	v := Kind(b)
	if !slices.Contains(Kinds(), v) {
		return fmt.Errorf("unknown notification kind %q: want %s or %s", string(b), KindSandboxDegraded, KindOutputRedacted)
	}
	*k = v
	return nil
}

// Window is the rate-limit period: one notification per key per hour.
const Window = time.Hour

// DefaultEventLink is the deep link when no dashboard URL is configured:
// the command that shows the event's card on the gateway host.
const DefaultEventLink = "mitrity-gateway audit show {id}"

// Notification is one message as every sink receives it. The webhook body
// is this value as JSON: "text" makes it a valid Slack incoming-webhook
// payload, and the other fields are there for a machine.
type Notification struct {
	Text      string    `json:"text"`
	Kind      Kind      `json:"kind"`
	Time      time.Time `json:"time"`
	Host      string    `json:"host"`
	Agent     string    `json:"agent"`
	EventID   string    `json:"event_id"`
	EventLink string    `json:"event_link"`
	// Sandbox degraded.
	SandboxMode      string `json:"sandbox_mode,omitempty"`
	RequestedBackend string `json:"requested_backend,omitempty"`
	HostReason       string `json:"host_reason,omitempty"`
	Ran              *bool  `json:"ran,omitempty"`
	SandboxRequired  *bool  `json:"sandbox_required,omitempty"`
	// Output redacted.
	CredentialID string `json:"credential_id,omitempty"`
	Redactions   int    `json:"redactions,omitempty"`
	// Suppressed counts notifications for the same key dropped by the rate
	// limit since the previous one was sent.
	Suppressed int `json:"suppressed"`
}

// Degradation is what the executor knows when it stamps a mode short of
// full strength.
type Degradation struct {
	Agent   string
	EventID string
	Mode    govern.SandboxMode
	// Requested is exec.sandbox.backend (auto, bubblewrap, seatbelt, none);
	// Seccomp is exec.sandbox.seccomp (required, preferred, off).
	Requested string
	Seccomp   string
	// HostReason is the probe's reason, e.g. "unprivileged user namespaces
	// are disabled". It is part of the rate-limit key.
	HostReason string
	// Status is what became of the command.
	Status          govern.Status
	SandboxRequired bool
}

// Redaction is one credential whose value was redacted from one call's
// output. A call that leaked several credentials reports each.
type Redaction struct {
	Agent        string
	EventID      string
	CredentialID string
	Count        int // occurrences redacted in this call
}

// Option configures a Notifier.
type Option func(*Notifier) error

// WithClock replaces the wall clock (tests).
func WithClock(now func() time.Time) Option {
	return func(n *Notifier) error {
		if now == nil {
			return errors.New("notify: nil clock")
		}
		n.now = now
		return nil
	}
}

// WithHost names the host in the text; the default is os.Hostname.
func WithHost(name string) Option {
	return func(n *Notifier) error { n.host = name; return nil }
}

// WithEventLink sets the deep link to an audit event; "{id}" is replaced
// by the event id (for example https://dash.example/audit/{id}).
func WithEventLink(template string) Option {
	return func(n *Notifier) error {
		if !strings.Contains(template, "{id}") {
			return fmt.Errorf("notify: event link %q has no {id} placeholder", template)
		}
		n.link = template
		return nil
	}
}

// WithWebhook adds a webhook sink: a POST of the Notification as JSON, at
// most timeout long (default 5s), no retries. Its URL is a secret (Slack
// puts the token in the path) and is never logged; errors name its host.
func WithWebhook(rawURL string, timeout time.Duration) Option {
	return func(n *Notifier) error {
		wh, err := newWebhook(rawURL, timeout, nil)
		if err != nil {
			return err
		}
		n.webhook = wh
		return nil
	}
}

// WithHTTPClient sets the client the webhook uses (its Timeout and
// CheckRedirect are overridden). It must follow WithWebhook.
func WithHTTPClient(c *http.Client) Option {
	return func(n *Notifier) error {
		if n.webhook == nil {
			return errors.New("notify: WithHTTPClient without WithWebhook")
		}
		n.webhook.setClient(c)
		return nil
	}
}

// Notifier delivers notifications to its sinks under the spec's rate
// limits. It is safe for concurrent use.
type Notifier struct {
	logger  zerolog.Logger
	now     func() time.Time
	host    string
	link    string
	webhook *webhook

	rates *rates

	sent, suppressed, failures atomic.Uint64
}

// rates is a Notifier's rate-limit windows; ShareRates hands them to the
// notifier a reload builds.
type rates struct {
	mu        sync.Mutex
	windows   map[rateKey]*window
	lastSweep time.Time
}

type rateKey struct {
	kind          Kind
	agent, k1, k2 string
}

type window struct {
	start      time.Time
	suppressed int
}

// New returns a Notifier that logs to logger and, with WithWebhook, posts.
func New(logger zerolog.Logger, opts ...Option) (*Notifier, error) {
	n := &Notifier{logger: logger, now: time.Now, link: DefaultEventLink, rates: &rates{windows: map[rateKey]*window{}}}
	for _, o := range opts {
		if err := o(n); err != nil {
			return nil, err
		}
	}
	if n.host == "" {
		if h, err := os.Hostname(); err == nil && h != "" {
			n.host = h
		} else {
			n.host = "localhost"
		}
	}
	return n, nil
}

// ShareRates makes n count against prev's rate-limit windows: a reload
// builds a new notifier, and without them every SIGHUP (logrotate's
// weekly one among them) would let each key fire again at once. Call it
// before n is used; prev may still be notifying (the windows are locked).
func (n *Notifier) ShareRates(prev *Notifier) {
	if prev != nil {
		n.rates = prev.rates
	}
}

// Sent, Suppressed and WebhookFailures are counters for the metrics.
func (n *Notifier) Sent() uint64            { return n.sent.Load() }
func (n *Notifier) Suppressed() uint64      { return n.suppressed.Load() }
func (n *Notifier) WebhookFailures() uint64 { return n.failures.Load() }

// ErrInvalid wraps every refusal of a malformed Degradation or Redaction.
var ErrInvalid = errors.New("notify: invalid notification")

// SandboxDegraded notifies when d.Mode is short of full strength
// (bubblewrap_no_seccomp, none, unavailable_denied) and the (agent, mode,
// host reason) key has not fired within the hour. It reports whether the
// notification was delivered; a full-strength mode notifies nothing. It
// returns within the webhook timeout.
func (n *Notifier) SandboxDegraded(ctx context.Context, d Degradation) (bool, error) {
	if err := d.validate(); err != nil {
		return false, err
	}
	if d.Mode.FullStrength() {
		return false, nil
	}
	ran, req := d.Status.Started(), d.SandboxRequired
	no := Notification{
		Kind: KindSandboxDegraded, Agent: d.Agent, EventID: d.EventID,
		SandboxMode: d.Mode.String(), RequestedBackend: d.Requested, HostReason: d.HostReason,
		Ran: &ran, SandboxRequired: &req,
	}
	return n.deliver(ctx, rateKey{KindSandboxDegraded, d.Agent, d.Mode.String(), d.HostReason}, no, func(no *Notification) string {
		return degradedText(d, no)
	})
}

// OutputRedacted notifies that r.CredentialID's value was redacted from a
// command's output, once per (agent, credential) per hour. Ordinary DLP
// pattern redactions do not come here: they are rows, not alerts.
func (n *Notifier) OutputRedacted(ctx context.Context, r Redaction) (bool, error) {
	if err := r.validate(); err != nil {
		return false, err
	}
	no := Notification{Kind: KindOutputRedacted, Agent: r.Agent, EventID: r.EventID, CredentialID: r.CredentialID, Redactions: r.Count}
	return n.deliver(ctx, rateKey{KindOutputRedacted, r.Agent, r.CredentialID, ""}, no, func(no *Notification) string {
		return redactedText(r, no)
	})
}

func (n *Notifier) deliver(ctx context.Context, key rateKey, no Notification, text func(*Notification) string) (bool, error) {
	now := n.now()
	suppressed, ok := n.admit(key, now)
	if !ok {
		n.suppressed.Add(1)
		return false, nil
	}
	no.Time = now.UTC()
	no.Host = n.host
	no.EventLink = strings.ReplaceAll(n.link, "{id}", no.EventID)
	no.Suppressed = suppressed
	no.Text = text(&no)
	n.log(no)
	n.sent.Add(1)
	if n.webhook != nil {
		if err := n.webhook.post(ctx, no); err != nil {
			n.failures.Add(1)
			n.logger.Warn().Str("kind", string(no.Kind)).Str("event_id", no.EventID).
				Str("webhook_host", n.webhook.host()).Str("err", err.Error()).Msg("notify: webhook delivery failed")
		}
	}
	return true, nil
}

// admit applies the rate limit: the first notification for a key opens a
// one-hour window and is sent; the rest inside it are counted and dropped;
// the first after it is sent with that count and opens a new window.
func (n *Notifier) admit(key rateKey, now time.Time) (suppressed int, ok bool) {
	r := n.rates
	r.mu.Lock()
	defer r.mu.Unlock()
	if now.Sub(r.lastSweep) >= Window {
		// An expired window is kept only while it carries a suppressed
		// count for the next notification, and for a day at most.
		for k, w := range r.windows {
			if age := now.Sub(w.start); age >= Window && w.suppressed == 0 || age >= 24*Window {
				delete(r.windows, k)
			}
		}
		r.lastSweep = now
	}
	w := r.windows[key]
	if w != nil && now.Sub(w.start) < Window {
		w.suppressed++
		return 0, false
	}
	if w != nil {
		suppressed = w.suppressed
	}
	r.windows[key] = &window{start: now}
	return suppressed, true
}

func (n *Notifier) log(no Notification) {
	level := zerolog.WarnLevel
	if no.SandboxMode == govern.SandboxUnavailableDenied.String() {
		level = zerolog.ErrorLevel // an agent that can run nothing is an outage
	}
	e := n.logger.WithLevel(level).
		Str("kind", string(no.Kind)).
		Str("agent", no.Agent).
		Str("event_id", no.EventID).
		Str("event_link", no.EventLink).
		Int("suppressed", no.Suppressed)
	switch no.Kind {
	case KindSandboxDegraded:
		e = e.Str("sandbox_mode", no.SandboxMode).Str("requested_backend", no.RequestedBackend).
			Str("host_reason", no.HostReason).Bool("ran", *no.Ran).Bool("sandbox_required", *no.SandboxRequired)
	case KindOutputRedacted:
		e = e.Str("credential_id", no.CredentialID).Int("redactions", no.Redactions)
	}
	e.Str("text", no.Text).Msg(string(no.Kind))
}

func (d Degradation) validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if d.Agent == "" {
		bad("agent is empty")
	}
	if d.EventID == "" {
		bad("event id is empty: the notification must link to its audit event")
	}
	if !d.Mode.Valid() {
		bad("sandbox mode %d is not in the vocabulary", uint8(d.Mode))
	}
	if !d.Status.Valid() {
		bad("status %d is not in the vocabulary", uint8(d.Status))
	}
	if d.Requested == "" {
		bad("requested backend is empty")
	}
	switch d.Mode {
	case govern.SandboxUnavailableDenied:
		if d.Status.Started() {
			bad("unavailable_denied with status %s: nothing runs under unavailable_denied", d.Status)
		}
		if !d.SandboxRequired {
			bad("unavailable_denied without sandbox_required: the policy would have run it as none")
		}
	case govern.SandboxNone:
		if d.SandboxRequired {
			bad("none under sandbox_required: true: the call must be denied as unavailable_denied")
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalid, errors.Join(errs...))
}

func (r Redaction) validate() error {
	var errs []error
	if r.Agent == "" {
		errs = append(errs, errors.New("agent is empty"))
	}
	if r.EventID == "" {
		errs = append(errs, errors.New("event id is empty: the notification must link to its audit event"))
	}
	if r.CredentialID == "" {
		errs = append(errs, errors.New("credential id is empty"))
	}
	if r.Count < 1 {
		errs = append(errs, fmt.Errorf("redaction count %d: a notification needs at least one redaction", r.Count))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalid, errors.Join(errs...))
}
