package e2e

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestEgressDecisionsInGatewayLog: the egress proxy of every run logs its
// decisions into the gateway's own log, at the gateway's level, named as
// the proxy's (before, they were kept only to explain a proxy that failed,
// and an operator never saw a refused destination in the log).
func TestEgressDecisionsInGatewayLog(t *testing.T) {
	forGatewayIdentities(t, func(t *testing.T, asUser bool) {
		w := newWorldBackend(t, asUser, sandboxPolicy, "bubblewrap")
		g := startHTTPGW(t, w, gwOptions{logLevel: "info"})
		cs := g.client(t)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		r, err := callShell(t, ctx, cs, map[string]any{"command": "curl -s -o /dev/null -w '%{http_code}' http://refused-host.invalid/"})
		if err != nil || r.stdout != "403" {
			t.Fatalf("%v %+v", err, r)
		}
		var log string
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			if log = g.stderr.String(); strings.Contains(log, "refused-host.invalid") {
				break
			}
		}
		var line string
		for l := range strings.Lines(log) {
			if strings.Contains(l, "refused-host.invalid") {
				line = l
			}
		}
		// The proxy's own decision line, at its own level, with its
		// fields: not a wrapper around text the gateway could not read.
		if line == "" || !strings.Contains(line, "component=mitrity-egressproxy") || !strings.Contains(line, "egress.decision") ||
			strings.Contains(line, "not JSON") || !strings.Contains(line, "reason=not_allowlisted") {
			t.Fatalf("the proxy's decision is not in the gateway's log as the proxy's:\n%s", log)
		}
	})
}
