package egress

import (
	"sync"
	"time"
)

// MaxDeniedHosts caps Report.DeniedHosts and Report.Denials: the first 16
// distinct host:port pairs, as the spec's egress.denied_hosts says; Denied
// has the count.
const MaxDeniedHosts = 16

// Report is what the proxy let through and refused during one execution.
// Allowed, Denied and DeniedHosts are the audit event's egress block;
// Denials feed the DLP unauthorized_destination events.
type Report struct {
	// Allowed counts connections allowed: CONNECTs and plain HTTP requests
	// whose destination passed (DialErrors of them were then unreachable).
	Allowed int `json:"allowed"`
	// Denied counts refused connections and requests; each also went to
	// the denial hook.
	Denied int `json:"denied"`
	// DeniedHosts are the first MaxDeniedHosts distinct refused host:port.
	DeniedHosts []string `json:"denied_hosts"`
	// DeniedHostsTruncated: more distinct destinations were refused than
	// DeniedHosts holds.
	DeniedHostsTruncated bool `json:"denied_hosts_truncated"`
	// Denials are the same destinations as DeniedHosts, in the same order,
	// each with why it was refused and how often.
	Denials []DeniedDestination `json:"denials"`
	// DialErrors counts allowed destinations that could not be reached.
	DialErrors int `json:"dial_errors"`
	// BadRequests counts the refusals among Denied that were requests
	// refused unread (400, 405), before any destination was looked at
	// (reason bad_request).
	BadRequests int `json:"bad_requests"`
}

// DeniedDestination is one distinct refused destination: the decision of
// its first refusal and how many refusals it had. Category and Detail name
// the address class for the operator; the agent never sees them.
type DeniedDestination struct {
	// Target is host:port as Decision.Target has it.
	Target   string   `json:"target"`
	Reason   Reason   `json:"reason"`
	Category Category `json:"category,omitempty"`
	Detail   string   `json:"detail,omitempty"`
	// Method is CONNECT or the plain HTTP method of the first refusal.
	Method string    `json:"method"`
	First  time.Time `json:"first"`
	// Count is every refusal of Target in this execution.
	Count int `json:"count"`
}

// Denial is one refused connection, handed to the denial hook.
type Denial struct {
	Time     time.Time
	Method   string // CONNECT, or the plain HTTP method
	Decision Decision
}

// recorder accumulates a Report. Safe for concurrent use.
type recorder struct {
	mu     sync.Mutex
	r      Report
	listed map[string]int // target -> index in r.Denials
}

func (rec *recorder) allowed() {
	rec.mu.Lock()
	rec.r.Allowed++
	rec.mu.Unlock()
}

func (rec *recorder) denied(d Denial) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.r.Denied++
	target := d.Decision.Target
	if i, ok := rec.listed[target]; ok {
		rec.r.Denials[i].Count++
		return
	}
	if len(rec.r.Denials) == MaxDeniedHosts {
		rec.r.DeniedHostsTruncated = true
		return
	}
	if rec.listed == nil {
		rec.listed = map[string]int{}
	}
	rec.listed[target] = len(rec.r.Denials)
	rec.r.DeniedHosts = append(rec.r.DeniedHosts, target)
	rec.r.Denials = append(rec.r.Denials, DeniedDestination{
		Target: target, Reason: d.Decision.Reason, Category: d.Decision.Category, Detail: d.Decision.Detail,
		Method: d.Method, First: d.Time.UTC(), Count: 1,
	})
}

func (rec *recorder) dialError() {
	rec.mu.Lock()
	rec.r.DialErrors++
	rec.mu.Unlock()
}

func (rec *recorder) badRequest() {
	rec.mu.Lock()
	rec.r.BadRequests++
	rec.mu.Unlock()
}

func (rec *recorder) snapshot() Report {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	r := rec.r
	r.DeniedHosts = append([]string{}, rec.r.DeniedHosts...)
	r.Denials = append([]DeniedDestination{}, rec.r.Denials...)
	return r
}
