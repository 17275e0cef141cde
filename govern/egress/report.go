package egress

import (
	"slices"
	"sync"
	"time"
)

// MaxDeniedHosts caps Report.DeniedHosts: the first 16 distinct host:port
// pairs, as the spec's egress.denied_hosts says; Denied has the count.
const MaxDeniedHosts = 16

// Report is what the proxy let through and refused during one execution.
// Its JSON is the gateway's egress block on the audit event.
type Report struct {
	// Allowed counts connections allowed: CONNECTs and plain HTTP requests
	// whose destination passed (DialErrors of them were then unreachable).
	Allowed int `json:"allowed"`
	// Denied counts refused connections; each also went to the denial hook.
	Denied int `json:"denied"`
	// DeniedHosts are the first MaxDeniedHosts distinct refused host:port.
	DeniedHosts []string `json:"denied_hosts"`
	// DeniedHostsTruncated: more distinct destinations were refused than
	// DeniedHosts holds.
	DeniedHostsTruncated bool `json:"denied_hosts_truncated"`
	// DialErrors counts allowed destinations that could not be reached.
	DialErrors int `json:"dial_errors"`
	// BadRequests counts requests refused as malformed (400, 405) before any
	// destination was looked at.
	BadRequests int `json:"bad_requests"`
}

// Denial is one refused connection, handed to the denial hook (the gateway
// turns each into a DLP unauthorized_destination event).
type Denial struct {
	Time     time.Time
	Method   string // CONNECT, or the plain HTTP method
	Decision Decision
}

// recorder accumulates a Report. Safe for concurrent use.
type recorder struct {
	mu sync.Mutex
	r  Report
}

func (rec *recorder) allowed() {
	rec.mu.Lock()
	rec.r.Allowed++
	rec.mu.Unlock()
}

func (rec *recorder) denied(target string) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.r.Denied++
	if slices.Contains(rec.r.DeniedHosts, target) {
		return
	}
	if len(rec.r.DeniedHosts) < MaxDeniedHosts {
		rec.r.DeniedHosts = append(rec.r.DeniedHosts, target)
		return
	}
	rec.r.DeniedHostsTruncated = true
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
	return r
}
