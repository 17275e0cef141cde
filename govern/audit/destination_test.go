package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rs/zerolog"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern/egress"
)

// proxyDenials is what the proxy's report lists for one execution: a name
// off the allowlist, the metadata address, a numeric trick and a name
// carrying the call's credential.
func proxyDenials() []egress.DeniedDestination {
	at := fixedTime.Add(300 * time.Millisecond)
	return []egress.DeniedDestination{
		{Target: "evil.example:443", Reason: egress.ReasonNotAllowlisted, Method: "CONNECT", First: at, Count: 2},
		{Target: "169.254.169.254:80", Reason: egress.ReasonRefusedAddress, Category: "metadata",
			Detail: "169.254.169.254 is metadata", Method: "GET", First: at.Add(time.Second), Count: 1},
		{Target: `"2130706433":443`, Reason: egress.ReasonNumericHost, Method: "CONNECT", First: at.Add(2 * time.Second), Count: 1},
		{Target: secret + ".exfil.example:443", Reason: egress.ReasonNotAllowlisted, Method: "CONNECT", First: at.Add(3 * time.Second), Count: 1},
	}
}

func TestDestinationDenials(t *testing.T) {
	t.Parallel()
	b := testBuilder()
	rec := completedRecord()
	rec.Scrub = scrubOf(t, map[string]string{"github_token": secret})
	exec := mustBuild(t, b, rec)
	evs, err := b.DestinationDenials(exec, proxyDenials(), rec.Scrub)
	assert.NilError(t, err)
	assert.Equal(t, len(evs), 4)

	ids := map[string]bool{exec.ID: true}
	for i, ev := range evs {
		assert.Check(t, !ids[ev.ID], "event %d reuses id %s", i, ev.ID)
		ids[ev.ID] = true
		assert.Check(t, is.Equal(ev.Type, TypeUnauthorizedDestination))
		assert.Check(t, is.Equal(ev.Source, exec.Source))
		assert.Check(t, is.Equal(ev.Subject, "claude-build-7"))
		assert.Check(t, is.Equal(ev.Time, proxyDenials()[i].First.UTC()))
		d := ev.Data
		assert.Check(t, is.Equal(d.Agent, exec.Data.Agent))
		assert.Check(t, is.Equal(d.Surface, SurfaceMCP))
		assert.Check(t, is.Equal(d.Tool, exec.Data.Tool))
		assert.Check(t, is.Equal(d.ActionType, exec.Data.ActionType))
		assert.Check(t, is.Equal(d.Session, "sess-42"))
		assert.Check(t, is.Equal(d.LinkedEventID, exec.ID))
		assert.Check(t, is.Equal(d.Decision.Outcome, OutcomeDeny))
		assert.Check(t, is.Equal(d.Decision.Reason, ReasonUnauthorizedDestination))
		assert.Check(t, is.Equal(d.Decision.Stage, StageEgress))
		assert.Check(t, is.Equal(d.BlockedBy, StageEgress))
		assert.Check(t, d.Command == nil && d.Execution == nil)
	}
	assert.DeepEqual(t, evs[0].Data.Destination, &Destination{
		Target: "evil.example:443", Host: "evil.example", Port: 443, Reason: "not_allowlisted", Method: "CONNECT", Count: 2})
	assert.Check(t, is.Equal(evs[0].Data.Decision.Message, "egress refused evil.example:443 (not_allowlisted), 2 times"))
	assert.DeepEqual(t, evs[1].Data.Destination, &Destination{
		Target: "169.254.169.254:80", Host: "169.254.169.254", Port: 80, Reason: "refused_address", Category: "metadata",
		Detail: "169.254.169.254 is metadata", Method: "GET", Count: 1})
	assert.Check(t, is.Equal(evs[1].Data.Decision.Message, "egress refused 169.254.169.254:80 (refused_address, metadata), once"))
	// The agent's bytes stay quoted: no host is made of them.
	assert.DeepEqual(t, evs[2].Data.Destination, &Destination{Target: `"2130706433":443`, Reason: "numeric_host", Method: "CONNECT", Count: 1})
	// A name built from a credential is scrubbed like the execution event.
	assert.Check(t, is.Equal(evs[3].Data.Destination.Target, "[REDACTED:credential:github_token].exfil.example:443"))
	for _, ev := range evs {
		raw, err := json.Marshal(ev)
		assert.NilError(t, err)
		assertNoSecret(t, "unauthorized_destination event", raw)
	}

	// The trail keeps them beside the execution, and reads them back.
	path := filepath.Join(t.TempDir(), "events.jsonl")
	w, err := OpenWriter(path)
	assert.NilError(t, err)
	assert.NilError(t, w.Write(exec))
	for _, ev := range evs {
		assert.NilError(t, w.Write(ev))
	}
	assert.NilError(t, w.Close())
	got, err := ReadAll(path, Filter{Agent: "claude-build-7"})
	assert.NilError(t, err)
	if d := cmp.Diff(append([]*Event{exec}, evs...), got); d != "" {
		t.Fatalf("read back differs (-wrote +read):\n%s", d)
	}
	raw, err := json.Marshal(evs[1])
	assert.NilError(t, err)
	assert.Check(t, is.Contains(string(raw), `"type":"dev.mitrity.dlp.unauthorized_destination"`))
	assert.Check(t, is.Contains(string(raw), `"destination":{"target":"169.254.169.254:80","host":"169.254.169.254","port":80,"reason":"refused_address","category":"metadata"`))

	// The canonical line names the refusal and the execution.
	var logBuf bytes.Buffer
	LogDecision(zerolog.New(&logBuf), evs[0])
	assert.Check(t, is.Contains(logBuf.String(), `"reason":"unauthorized_destination"`))
	assert.Check(t, is.Contains(logBuf.String(), `"linked_event_id":"`+exec.ID+`"`))
}

// The proxy lists at most 16; a longer list still gives 16 events, and the
// count of the rest stays on the execution event.
func TestDestinationDenialsCap(t *testing.T) {
	t.Parallel()
	b := testBuilder()
	exec := mustBuild(t, b, completedRecord())
	var ds []egress.DeniedDestination
	for i := range 20 {
		ds = append(ds, egress.DeniedDestination{Target: fmt.Sprintf("d%02d.test:443", i), Reason: egress.ReasonNotAllowlisted, Method: "CONNECT", Count: 1})
	}
	evs, err := b.DestinationDenials(exec, ds, nil)
	assert.NilError(t, err)
	assert.Equal(t, len(evs), MaxDeniedHosts)
	assert.Equal(t, evs[15].Data.Destination.Target, "d15.test:443")
	// No refusal time: the execution's.
	assert.Equal(t, evs[0].Time, exec.Time)

	evs, err = b.DestinationDenials(exec, nil, nil)
	assert.NilError(t, err)
	assert.Equal(t, len(evs), 0)
	_, err = b.DestinationDenials(nil, ds, nil)
	assert.ErrorIs(t, err, ErrInvalidEvent)
}

// The writer refuses a destination event that breaks its rules, and a
// destination on any other event.
func TestValidateDestination(t *testing.T) {
	t.Parallel()
	b := testBuilder()
	exec := mustBuild(t, b, completedRecord())
	evs, err := b.DestinationDenials(exec, proxyDenials()[:1], nil)
	assert.NilError(t, err)
	for _, tc := range []struct {
		name   string
		mutate func(*Event)
		want   string
	}{
		{"unknown reason", func(e *Event) { e.Data.Destination.Reason = "suspicious" }, "data.destination.reason"},
		{"allowed is not a refusal", func(e *Event) { e.Data.Destination.Reason = "allowlisted" }, "data.destination.reason"},
		{"no count", func(e *Event) { e.Data.Destination.Count = 0 }, "count"},
		{"no target", func(e *Event) { e.Data.Destination.Target = "" }, "target"},
		{"no destination", func(e *Event) { e.Data.Destination = nil }, "without data.destination"},
		{"no link", func(e *Event) { e.Data.LinkedEventID = "" }, "linked_event_id"},
		{"not a denial", func(e *Event) { e.Data.Decision.Outcome, e.Data.BlockedBy = OutcomeAllow, "" }, "needs decision deny"},
		{"with a card", func(e *Event) { e.Data.Execution = exec.Data.Execution }, "execution card"},
	} {
		ev := *evs[0]
		dest := *ev.Data.Destination
		ev.Data.Destination = &dest
		tc.mutate(&ev)
		err := ev.Validate()
		assert.Check(t, is.ErrorContains(err, tc.want), tc.name)
	}
	withDest := *exec
	withDest.Data.Destination = evs[0].Data.Destination
	assert.Check(t, is.ErrorContains(withDest.Validate(), "carries data.destination"))
}

func TestRenderDestinationCard(t *testing.T) {
	t.Parallel()
	b := testBuilder()
	rec := completedRecord()
	exec := mustBuild(t, b, rec)
	evs, err := b.DestinationDenials(exec, proxyDenials(), nil)
	assert.NilError(t, err)
	var buf bytes.Buffer
	assert.NilError(t, RenderCard(&buf, evs[1]))
	out := buf.String()
	for _, want := range []string{"Refused destination", "169.254.169.254:80", "refused_address (metadata)", "GET", "Linked event"} {
		assert.Check(t, is.Contains(out, want))
	}
	assert.Check(t, !strings.Contains(out, "Execution card"), out)
}
