package audit

import (
	"crypto/rand"
	"fmt"
	"net"
	"strconv"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/egress"
)

// The DLP event a refused egress connection produces. The spec: "Every
// refused connection ... produces a DLP event with unauthorized_destination,
// so the dashboard's destination views need no new concept."
const (
	// TypeUnauthorizedDestination is a DLP event: a sandboxed command tried
	// to reach a destination its allowlist (or the host's egress settings)
	// refuses. One per distinct destination, linked to the execution.
	TypeUnauthorizedDestination = "dev.mitrity.dlp.unauthorized_destination"
	// ReasonUnauthorizedDestination is the decision reason such an event
	// carries.
	ReasonUnauthorizedDestination = govern.ReasonUnauthorizedDestination
	// StageEgress is the stage that refused: the execution's egress proxy.
	StageEgress = "egress"
)

// Destination is what a DLP unauthorized_destination event is about.
type Destination struct {
	// Target is host:port as the proxy canonicalised it, or a quoted form
	// ("\"2130706433\":443") of a host that could not be.
	Target string `json:"target"`
	// Host and Port are Target's parts; Host is empty for a quoted target.
	Host string `json:"host,omitempty"`
	Port int    `json:"port,omitempty"`
	// Reason is the proxy's word for the refusal: not_allowlisted,
	// no_egress, refused_name, refused_address, numeric_host, invalid_host,
	// invalid_port, resolve_failed.
	Reason string `json:"reason"`
	// Category is the address class of a refused_address (loopback,
	// link_local, metadata, private, host_interface, denied_cidr, ...).
	Category string `json:"category,omitempty"`
	// Detail names the address that failed, for the operator.
	Detail string `json:"detail,omitempty"`
	// Method is CONNECT or the plain HTTP method of the first refusal.
	Method string `json:"method"`
	// Count is how many times the execution was refused this destination;
	// the event's time is the first.
	Count int `json:"count"`
}

// DestinationDenials builds one DLP unauthorized_destination event per
// distinct destination the execution's egress proxy refused, at most
// MaxDeniedHosts (the proxy's report holds no more; the execution event's
// egress.denied has the full count). exec is the execution event already
// built for the same call: each event copies its agent, surface, tool,
// action type and session, links to it by id, and is stamped with the time
// of the destination's first refusal. scrub is the call's redactor
// (Record.Scrub): a name built from a token (curl
// https://$TOKEN.evil.example) is scrubbed, as on the execution event.
// Every event is validated; nil denials give no events.
func (b Builder) DestinationDenials(exec *Event, denials []egress.DeniedDestination, scrub Scrubber) ([]*Event, error) {
	if len(denials) == 0 {
		return nil, nil
	}
	if exec == nil || exec.ID == "" {
		return nil, fmt.Errorf("%w: unauthorized_destination events need the execution event they belong to", ErrInvalidEvent)
	}
	rnd := b.Rand
	if rnd == nil {
		rnd = rand.Reader
	}
	if len(denials) > MaxDeniedHosts {
		denials = denials[:MaxDeniedHosts]
	}
	out := make([]*Event, 0, len(denials))
	for _, d := range denials {
		id, err := NewID(rnd)
		if err != nil {
			return nil, err
		}
		at := d.First
		if at.IsZero() {
			at = exec.Time
		}
		dest := &Destination{
			Target:   d.Target,
			Reason:   string(d.Reason),
			Category: string(d.Category),
			Detail:   d.Detail,
			Method:   d.Method,
			Count:    max(d.Count, 1),
		}
		// Redacted before the target is split, so the host is the
		// redacted target's.
		redactStrings(scrub, []*string{&dest.Target, &dest.Detail})
		if h, p, err := net.SplitHostPort(dest.Target); err == nil && h != "" && h[0] != '"' {
			if n, err := strconv.Atoi(p); err == nil {
				dest.Host, dest.Port = h, n
			}
		}
		why := string(d.Reason)
		if d.Category != "" {
			why += ", " + string(d.Category)
		}
		ev := &Event{
			SpecVersion:     SpecVersion,
			ID:              id,
			Source:          exec.Source,
			Type:            TypeUnauthorizedDestination,
			Time:            at.UTC(),
			Subject:         exec.Subject,
			DataContentType: ContentType,
			Data: Data{
				Agent:      exec.Data.Agent,
				Surface:    exec.Data.Surface,
				Tool:       exec.Data.Tool,
				ActionType: exec.Data.ActionType,
				Session:    exec.Data.Session,
				Decision: Decision{
					Outcome: OutcomeDeny,
					Reason:  ReasonUnauthorizedDestination,
					Stage:   StageEgress,
					Message: fmt.Sprintf("egress refused %s (%s), %s", dest.Target, why, times(dest.Count)),
				},
				BlockedBy:     StageEgress,
				LinkedEventID: exec.ID,
				Destination:   dest,
			},
		}
		if err := ev.Validate(); err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	return out, nil
}

func times(n int) string {
	if n == 1 {
		return "once"
	}
	return strconv.Itoa(n) + " times"
}

// validateDestination checks what only an unauthorized_destination event
// has: its destination, its reason word and the link to its execution.
func (e *Event) validateDestination() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	d := &e.Data
	if e.Type != TypeUnauthorizedDestination {
		if d.Destination != nil {
			bad("type %s carries data.destination; only %s does", e.Type, TypeUnauthorizedDestination)
		}
		return errs
	}
	if d.Execution != nil {
		bad("type %s carries an execution card", e.Type)
	}
	if d.Decision.Outcome != OutcomeDeny || d.Decision.Reason != ReasonUnauthorizedDestination {
		bad("type %s needs decision deny/%s, not %s/%s", e.Type, ReasonUnauthorizedDestination, d.Decision.Outcome, d.Decision.Reason)
	}
	if d.LinkedEventID == "" {
		bad("type %s needs data.linked_event_id (the execution it belongs to)", e.Type)
	}
	x := d.Destination
	if x == nil {
		bad("type %s without data.destination", e.Type)
		return errs
	}
	if x.Target == "" {
		bad("data.destination.target is empty")
	}
	if x.Count < 1 {
		bad("data.destination.count %d, want at least 1", x.Count)
	}
	if x.Port < 0 || x.Port > 65535 {
		bad("data.destination.port %d is not a port", x.Port)
	}
	if err := checkWord("data.destination.reason", egress.Reason(x.Reason), egress.RefusalReasons()); err != nil {
		errs = append(errs, err)
	}
	return errs
}
