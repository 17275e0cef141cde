// Package hold is the approval queue: a held call waits here until a person
// approves or denies it, or until it expires, which is a denial. The queue
// is served to its owner over a local admin socket (server.go).
package hold

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/mitrity/mitrity/govern"
)

// Pending is a held call as an approver sees it: what would run and why it
// was held. Never a credential value (the judged text holds references).
type Pending struct {
	ID      string `json:"id"`
	Agent   string `json:"agent"`
	Command string `json:"command"`
	// Arguments are an upstream call's JSON arguments in full, as they
	// will be sent: Command shows the first 2 KiB of them, and a person
	// approves all of them (approvals show ID).
	Arguments string    `json:"arguments,omitempty"`
	Cwd       string    `json:"cwd,omitempty"`
	Rule      string    `json:"rule,omitempty"`
	Reason    string    `json:"reason"`
	Message   string    `json:"message,omitempty"`
	EventID   string    `json:"event_id,omitempty"`
	Created   time.Time `json:"created"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Verdict is how a hold ended.
type Verdict struct {
	Outcome govern.Outcome // Allow or Deny
	By      string         // who answered: a uid, or "expiry"
	Expired bool
}

// ErrUnknown is returned for an id that is not (or no longer) pending.
var ErrUnknown = errors.New("no pending hold with that id")

type entry struct {
	Pending
	answer chan Verdict
}

// Queue holds calls. The zero value is not usable; use New.
type Queue struct {
	mu      sync.Mutex
	pending map[string]*entry
	now     func() time.Time
}

// New returns an empty queue.
func New() *Queue {
	return &Queue{pending: map[string]*entry{}, now: time.Now}
}

// Wait adds p to the queue and blocks until it is answered, it expires
// after timeout (a denial), or ctx ends (a denial: nobody approved it).
func (q *Queue) Wait(ctx context.Context, p Pending, timeout time.Duration) Verdict {
	p.ID = newID()
	p.Created = q.now()
	p.ExpiresAt = p.Created.Add(timeout)
	e := &entry{Pending: p, answer: make(chan Verdict, 1)}
	q.mu.Lock()
	q.pending[p.ID] = e
	q.mu.Unlock()
	defer func() {
		q.mu.Lock()
		delete(q.pending, p.ID)
		q.mu.Unlock()
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case v := <-e.answer:
		return v
	case <-t.C:
		return Verdict{Outcome: govern.Deny, By: "expiry", Expired: true}
	case <-ctx.Done():
		return Verdict{Outcome: govern.Deny, By: "cancelled"}
	}
}

// List returns the pending holds, oldest first.
func (q *Queue) List() []Pending {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]Pending, 0, len(q.pending))
	for _, e := range q.pending {
		out = append(out, e.Pending)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out
}

// Answer approves (Allow) or denies (Deny) a pending hold.
func (q *Queue) Answer(id string, outcome govern.Outcome, by string) error {
	if outcome != govern.Allow && outcome != govern.Deny {
		return errors.New("a hold is answered with allow or deny")
	}
	q.mu.Lock()
	e, ok := q.pending[id]
	if ok {
		delete(q.pending, id)
	}
	q.mu.Unlock()
	if !ok {
		return ErrUnknown
	}
	e.answer <- Verdict{Outcome: outcome, By: by}
	return nil
}

// WaitPending blocks until at least n holds are pending or ctx ends (tests
// and the CLI's --wait).
func (q *Queue) WaitPending(ctx context.Context, n int) error {
	for {
		if len(q.List()) >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func newID() string {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b)
}
