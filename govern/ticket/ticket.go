// Package ticket keeps execution tickets: the single-use, short-lived
// capability an admitted hook call receives and the relay redeems, bound to
// the agent, session, caller uid and plan it was issued for.
package ticket

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Bits of randomness in a ticket id.
const Bits = 256

// Prefix starts every ticket id: an id never begins with '-' (a command
// line would read it as a flag), and a ticket pasted somewhere is
// recognisable for what it is.
const Prefix = "mtk_"

// Errors of Take. Each means nothing runs.
var (
	// ErrUnknown: never issued, already redeemed, or expired (an expired
	// ticket is gone: its never-ran event has been written).
	ErrUnknown = errors.New("unknown, already redeemed or expired ticket")
	// ErrFull: too many tickets wait to be redeemed.
	ErrFull = errors.New("too many unredeemed tickets")
)

// Ticket is what an id stands for. Payload carries the issuer's state (the
// fixed plan); the store never looks inside.
type Ticket struct {
	Agent    string
	Session  string
	UID      int // the caller that was admitted
	PlanHash string
	EventID  string // the decision event written at admit time
	Issued   time.Time
	Expires  time.Time
	Payload  any
}

// Store holds unredeemed tickets. Safe for concurrent use.
type Store struct {
	ttl      time.Duration
	max      int
	onExpire func(Ticket)
	now      func() time.Time

	mu sync.Mutex
	// m is keyed by the SHA-256 of the id: the ids themselves are kept
	// nowhere but in the hook's answer.
	m map[[32]byte]*entry
}

type entry struct {
	t     Ticket
	timer *time.Timer
}

// New returns a store whose tickets live ttl, at most max at once;
// onExpire is called (on its own goroutine) for each ticket that expires
// unredeemed.
func New(ttl time.Duration, max int, onExpire func(Ticket)) *Store {
	return &Store{ttl: ttl, max: max, onExpire: onExpire, now: time.Now, m: map[[32]byte]*entry{}}
}

// Issue stores t and returns its id and expiry.
func (s *Store) Issue(t Ticket) (id string, expires time.Time, err error) {
	var b [Bits / 8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", time.Time{}, fmt.Errorf("ticket: %w", err)
	}
	id = Prefix + base64.RawURLEncoding.EncodeToString(b[:])
	key := sha256.Sum256([]byte(id))
	t.Issued = s.now()
	t.Expires = t.Issued.Add(s.ttl)

	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.m) >= s.max {
		return "", time.Time{}, ErrFull
	}
	e := &entry{t: t}
	e.timer = time.AfterFunc(s.ttl, func() { s.expire(key, e) })
	s.m[key] = e
	return id, t.Expires, nil
}

func (s *Store) expire(key [32]byte, e *entry) {
	s.mu.Lock()
	cur, ok := s.m[key]
	if ok && cur == e {
		delete(s.m, key)
	}
	s.mu.Unlock()
	if ok && cur == e && s.onExpire != nil {
		s.onExpire(e.t)
	}
}

// Take removes the ticket with id and returns it: a ticket is taken once,
// whatever the caller then finds wrong with it, so a second redemption
// (or a guess after a refused one) finds nothing.
func (s *Store) Take(id string) (Ticket, error) {
	key := sha256.Sum256([]byte(id))
	s.mu.Lock()
	e, ok := s.m[key]
	if ok {
		delete(s.m, key)
	}
	s.mu.Unlock()
	if !ok {
		return Ticket{}, ErrUnknown
	}
	e.timer.Stop()
	if !s.now().Before(e.t.Expires) {
		// The timer has not fired yet; the ticket is expired all the same.
		if s.onExpire != nil {
			s.onExpire(e.t)
		}
		return Ticket{}, ErrUnknown
	}
	return e.t, nil
}

// Len is the number of unredeemed tickets.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// Close expires every unredeemed ticket now (the gateway is stopping: each
// gets its never-ran event).
func (s *Store) Close() {
	s.mu.Lock()
	var gone []Ticket
	for k, e := range s.m {
		if e.timer.Stop() {
			gone = append(gone, e.t)
		}
		delete(s.m, k)
	}
	s.mu.Unlock()
	for _, t := range gone {
		if s.onExpire != nil {
			s.onExpire(t)
		}
	}
}
