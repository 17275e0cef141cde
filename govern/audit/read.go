package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mitrity/mitrity/govern"
)

// Filter selects events for `audit list`. A zero field matches everything.
type Filter struct {
	SandboxMode string // a sandbox_mode word; matches only cards stamped with it
	Status      string // a status word; matches only cards with it
	Agent       string
	Since       time.Time // events at or after
}

// Validate refuses words outside the vocabularies, so a misspelt
// --sandbox-mode is an error rather than an empty list.
func (f Filter) Validate() error {
	var errs []error
	if f.SandboxMode != "" {
		if _, err := govern.ParseSandboxMode(f.SandboxMode); err != nil {
			errs = append(errs, err)
		}
	}
	if f.Status != "" {
		if _, err := govern.ParseStatus(f.Status); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Match reports whether ev passes the filter.
func (f Filter) Match(ev *Event) bool {
	x := ev.Data.Execution
	switch {
	case f.Agent != "" && ev.Data.Agent != f.Agent:
		return false
	case !f.Since.IsZero() && ev.Time.Before(f.Since):
		return false
	case f.SandboxMode != "" && (x == nil || x.SandboxMode == nil || x.SandboxMode.String() != f.SandboxMode):
		return false
	case f.Status != "" && (x == nil || x.Status.String() != f.Status):
		return false
	}
	return true
}

// LineError is a line of the audit file that is not a valid event: a line
// torn by a crash mid-write, or one edited by hand.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// ReadAll returns the events of the file at path that match f, in file
// order. A line that does not parse does not hide the rest: its LineError is
// joined into the returned error and the good events are still returned,
// so `audit list` can show the trail and say which lines are damaged.
func ReadAll(path string, f Filter) ([]*Event, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	defer file.Close()
	return Read(file, f)
}

// Read is ReadAll over any reader.
func Read(r io.Reader, f Filter) ([]*Event, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	var (
		events []*Event
		errs   []error
		br     = bufio.NewReader(r)
	)
	for n := 1; ; n++ {
		line, long, rerr := readLine(br)
		if long {
			errs = append(errs, &LineError{n, fmt.Errorf("longer than %d bytes: skipped unread", MaxLineBytes)})
		} else if line = bytes.TrimSpace(line); len(line) > 0 {
			ev := new(Event)
			if err := json.Unmarshal(line, ev); err != nil {
				errs = append(errs, &LineError{n, err})
			} else if err := ev.Validate(); err != nil {
				errs = append(errs, &LineError{n, err})
			} else if f.Match(ev) {
				events = append(events, ev)
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			errs = append(errs, fmt.Errorf("audit log: %w", rerr))
			break
		}
	}
	return events, errors.Join(errs...)
}

// MaxLineBytes bounds a line Read will hold: far beyond any event the
// gateway writes (a command's text is at most 64 KiB, and what an event
// records of it is bounded by it), so a longer line is damage or another
// process's, and is skipped: no more of it is held, whatever its length.
const MaxLineBytes = 64 << 20

// readLine reads one line, its newline included. A line longer than
// MaxLineBytes is read past to its end and reported long, with nothing
// of it kept.
func readLine(br *bufio.Reader) (line []byte, long bool, err error) {
	for {
		frag, err := br.ReadSlice('\n')
		if !long {
			if len(line)+len(frag) > MaxLineBytes {
				long, line = true, nil
			} else {
				line = append(line, frag...)
			}
		}
		if err != bufio.ErrBufferFull {
			return line, long, err
		}
	}
}

// Find returns the event with the given id (for `audit show`).
func Find(path, id string) (*Event, error) {
	events, err := ReadAll(path, Filter{})
	for _, ev := range events {
		if ev.ID == id {
			return ev, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("event %s not found; the log has damaged lines: %w", id, err)
	}
	return nil, fmt.Errorf("event %s not found in %s", id, path)
}

// Calls folds events into one per call, for `audit list`: a call that ran
// has its decision (written before the command started) and its execution
// (written after, linked to the decision by data.linked_event_id); the
// execution stands for both. A decision no event links to stays: a call
// that never reached its completion (the gateway was killed mid-run), a
// framework's own tool, or a refusal. Refused-destination events are
// linked to their execution and stay too.
//
// A decision is folded only into the first execution that follows it in
// the file, links to it, and judged the same command (by hash) for the
// same agent, as the gateway writes them: a line that merely names a
// decision's id (appended by another process) cannot take its place, so
// the list never shows a command other than the one decided. Every
// execution is listed.
func Calls(events []*Event) []*Event {
	folded := completions(events)
	out := make([]*Event, 0, len(events))
	for _, ev := range events {
		if folded[ev] == nil {
			out = append(out, ev)
		}
	}
	return out
}

// completions pairs each decision with its own execution, the rule Calls
// and Linked share: the first execution that follows the decision in the
// file, links to it, and judged the same command for the same agent.
func completions(events []*Event) map[*Event]*Event {
	decisions := map[string]*Event{} // id -> the first decision with it, so far
	folded := map[*Event]*Event{}
	for _, ev := range events {
		if ev.Data.Execution == nil {
			if _, seen := decisions[ev.ID]; ev.Type == TypeDecision && !seen {
				decisions[ev.ID] = ev
			}
			continue
		}
		if d := decisions[ev.Data.LinkedEventID]; d != nil && folded[d] == nil && sameCall(d, ev) {
			folded[d] = ev
		}
	}
	return folded
}

// sameCall reports whether execution x can be the completion of decision
// d: the same agent, and the same judged command.
func sameCall(d, x *Event) bool {
	return d.Data.Agent == x.Data.Agent && d.Data.Command != nil && x.Data.Command != nil &&
		d.Data.Command.SHA256 == x.Data.Command.SHA256
}

// Linked returns the events of the file at path that link to id: a
// decision's execution, an execution's refused destinations. An
// execution is listed only as the completion of the decision shown (the
// pairing `audit list` folds, see Calls): a line that merely names the
// id in its linked_event_id, with another command or agent, before the
// decision, or a second one, is not shown as part of the call.
func Linked(path, id string) ([]*Event, error) {
	events, err := ReadAll(path, Filter{})
	var shown *Event // the event Find returns: the first with the id
	for _, ev := range events {
		if ev.ID == id {
			shown = ev
			break
		}
	}
	own := completions(events)[shown]
	var out []*Event
	for _, ev := range events {
		if ev.Data.LinkedEventID != id || (ev.Data.Execution != nil && ev != own) {
			continue
		}
		out = append(out, ev)
	}
	return out, err
}
