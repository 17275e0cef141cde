package audit

import (
	"strings"
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

// A decision folds only into an execution that follows it in the file and
// judged the same command for the same agent: a line that merely names a
// decision's id (appended by another process, or one before the decision
// it names) cannot take its place in `audit list`, so the list never
// shows a command other than the one decided. The first execution that
// fits folds it; every execution is listed.
func TestCallsFoldOnlyTheirOwnExecution(t *testing.T) {
	b := testBuilder()
	decisionOf := func(r Record) Record {
		r.Run = nil
		return r
	}
	linked := func(d *Event, edit func(*Event)) *Event {
		r := completedRecord()
		r.LinkedEventID = d.ID
		ev := mustBuild(t, b, r)
		if edit != nil {
			edit(ev)
		}
		return ev
	}
	ids := func(evs []*Event) []string {
		var out []string
		for _, ev := range evs {
			out = append(out, ev.ID)
		}
		return out
	}
	t.Run("another command", func(t *testing.T) {
		d := mustBuild(t, b, decisionOf(completedRecord()))
		forged := linked(d, func(ev *Event) { ev.Data.Command.SHA256 = strings.Repeat("0", 64) })
		assert.DeepEqual(t, ids(Calls([]*Event{d, forged})), []string{d.ID, forged.ID})
	})
	t.Run("another agent", func(t *testing.T) {
		d := mustBuild(t, b, decisionOf(completedRecord()))
		forged := linked(d, func(ev *Event) { ev.Data.Agent = "someone-else" })
		assert.DeepEqual(t, ids(Calls([]*Event{d, forged})), []string{d.ID, forged.ID})
	})
	t.Run("before its decision", func(t *testing.T) {
		d := mustBuild(t, b, decisionOf(completedRecord()))
		early := linked(d, nil)
		assert.DeepEqual(t, ids(Calls([]*Event{early, d})), []string{early.ID, d.ID})
	})
	t.Run("an execution without the command", func(t *testing.T) {
		d := mustBuild(t, b, decisionOf(completedRecord()))
		forged := linked(d, func(ev *Event) { ev.Data.Command = nil })
		assert.DeepEqual(t, ids(Calls([]*Event{d, forged})), []string{d.ID, forged.ID})
	})
	t.Run("its own, then a second", func(t *testing.T) {
		d := mustBuild(t, b, decisionOf(completedRecord()))
		own, again := linked(d, nil), linked(d, nil)
		assert.DeepEqual(t, ids(Calls([]*Event{d, own, again})), []string{own.ID, again.ID})
	})
}
