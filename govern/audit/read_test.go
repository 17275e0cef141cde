package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern/shell"
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
	linked := func(d *Event, edit func(*Event)) *Event { return linkedExecution(t, b, d, edit) }
	ids := eventIDs
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

// What an agent or an upstream chose (a tool name, an agent name, a
// command's words) cannot drive the operator's terminal through `audit
// list` or `audit show`: no escape sequence, carriage return, line break,
// bidi override or other unprintable character reaches it raw, so no row
// can be rewritten, hidden or forged on screen.
func TestRenderShowsChosenTextInert(t *testing.T) {
	b := testBuilder()
	r := completedRecord()
	const evil = "shell\x1b[1A\x1b[2K\r\x1b]0;x\x07\u202e\u2028\x85\x7f\xff"
	r.Call.Tool = "mcp__srv__" + evil
	r.Call.Agent = "ci" + evil
	// Without a line break or a tab among them too.
	r.Analysis.Commands[0].Argv = []shell.Word{{Value: "bash"}, {Value: "./deploy.sh\x1b[1A\x1b[2K\u202e"}}
	r.Call.Cwd = "/workspace\x1b]0;x\x07"
	ev := mustBuild(t, b, r)
	var list, card bytes.Buffer
	assert.NilError(t, RenderList(&list, []*Event{ev}))
	assert.NilError(t, RenderCard(&card, ev))
	for name, out := range map[string]string{"list": list.String(), "card": card.String()} {
		bad := strings.IndexFunc(out, func(c rune) bool {
			return c != '\n' && (c == utf8.RuneError || !unicode.IsPrint(c) && c != ' ')
		})
		assert.Check(t, bad < 0, "%s: an unprintable character reaches the terminal at %d: %q", name, bad, out)
	}
	assert.Check(t, is.Equal(strings.Count(list.String(), "\n"), 2), "a header and one line: %q", list.String())
	assert.Check(t, is.Contains(list.String(), `\x1b[1A`), "the escape is shown, escaped")
}

// zeros is n bytes of 'x', read without holding them.
type zeros struct{ n int64 }

func (z *zeros) Read(p []byte) (int, error) {
	if z.n <= 0 {
		return 0, io.EOF
	}
	k := int(min(int64(len(p)), z.n))
	for i := range p[:k] {
		p[i] = 'x'
	}
	z.n -= int64(k)
	return k, nil
}

// A line longer than MaxLineBytes (garbage appended by another process,
// a file that is not a trail) is skipped and named, never held beyond the
// bound, and the events after it are read.
func TestReadSkipsHugeLines(t *testing.T) {
	ev := mustBuild(t, testBuilder(), completedRecord())
	good, err := json.Marshal(ev)
	assert.NilError(t, err)
	in := io.MultiReader(strings.NewReader(string(good)+"\n"), &zeros{12*MaxLineBytes + 1}, strings.NewReader("\n"+string(good)+"\n"))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	evs, err := Read(in, Filter{})
	runtime.ReadMemStats(&after)
	assert.Equal(t, len(evs), 2)
	var le *LineError
	assert.Assert(t, errors.As(err, &le), "%v", err)
	assert.Equal(t, le.Line, 2)
	assert.Check(t, is.ErrorContains(err, "longer than"))
	// What is held of it stops at the bound: reading twelve times the bound
	// allocates (in all, growth included) what the bound costs, not more
	// (ReadBytes held the whole line: twice its size, at least).
	assert.Check(t, after.TotalAlloc-before.TotalAlloc < 8*MaxLineBytes, "allocated %d bytes", after.TotalAlloc-before.TotalAlloc)
}

// `audit show` lists with an event the events of its call, by the rule
// `audit list` folds them (Calls): a decision's own execution, and no
// execution that merely names the decision's id in its linked_event_id
// with another command or agent, before the decision, or after its own.
func TestLinkedOnlyItsOwnExecution(t *testing.T) {
	b := testBuilder()
	decision := func() *Event {
		r := completedRecord()
		r.Run = nil
		return mustBuild(t, b, r)
	}
	linked := func(to *Event, edit func(*Event)) *Event { return linkedExecution(t, b, to, edit) }
	ids := eventIDs
	type lines struct {
		file []*Event // as written, in order
		show *Event
		want []*Event
	}
	for _, tc := range []struct {
		name string
		make func() lines
	}{
		{"its own execution", func() lines {
			d := decision()
			own := linked(d, nil)
			return lines{[]*Event{d, own}, d, []*Event{own}}
		}},
		{"another command", func() lines {
			d := decision()
			forged := linked(d, func(ev *Event) { ev.Data.Command.SHA256 = strings.Repeat("0", 64) })
			return lines{[]*Event{d, forged}, d, nil}
		}},
		{"another agent", func() lines {
			d := decision()
			forged := linked(d, func(ev *Event) { ev.Data.Agent = "someone-else" })
			return lines{[]*Event{d, forged}, d, nil}
		}},
		{"before its decision", func() lines {
			d := decision()
			early := linked(d, nil)
			return lines{[]*Event{early, d}, d, nil}
		}},
		{"a second after its own", func() lines {
			d := decision()
			own, again := linked(d, nil), linked(d, nil)
			return lines{[]*Event{d, own, again}, d, []*Event{own}}
		}},
		{"an execution naming an execution", func() lines {
			d := decision()
			own := linked(d, nil)
			forged := linked(own, nil)
			return lines{[]*Event{d, own, forged}, own, nil}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := tc.make()
			path := filepath.Join(t.TempDir(), "events.jsonl")
			w, err := OpenWriter(path)
			assert.NilError(t, err)
			for _, ev := range l.file {
				assert.NilError(t, w.Write(ev))
			}
			assert.NilError(t, w.Close())
			got, err := Linked(path, l.show.ID)
			assert.NilError(t, err)
			assert.DeepEqual(t, ids(got), ids(l.want))
		})
	}
}

// linkedExecution is an execution that names to in its linked_event_id,
// edited by edit (nil: as the gateway writes it).
func linkedExecution(t *testing.T, b Builder, to *Event, edit func(*Event)) *Event {
	t.Helper()
	r := completedRecord()
	r.LinkedEventID = to.ID
	ev := mustBuild(t, b, r)
	if edit != nil {
		edit(ev)
	}
	return ev
}

// eventIDs are the ids of evs, in order.
func eventIDs(evs []*Event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.ID)
	}
	return out
}
