package audit

import (
	"testing"

	"gotest.tools/v3/assert"
)

// Calls shows a call that ran as its execution, and every decision no
// execution links to as itself.
func TestCalls(t *testing.T) {
	b := testBuilder()
	decisionOf := func(r Record) Record {
		r.Run = nil
		return r
	}
	ran := mustBuild(t, b, decisionOf(completedRecord()))
	exec := completedRecord()
	exec.LinkedEventID = ran.ID
	done := mustBuild(t, b, exec)
	died := mustBuild(t, b, decisionOf(completedRecord())) // its gateway was killed mid-run
	refused := mustBuild(t, b, deniedRecord())
	got := Calls([]*Event{ran, died, done, refused})
	var ids []string
	for _, ev := range got {
		ids = append(ids, ev.ID)
	}
	assert.DeepEqual(t, ids, []string{died.ID, done.ID, refused.ID})
	assert.Equal(t, ran.Type, TypeDecision)
	assert.Equal(t, done.Type, TypeExecution)
}
