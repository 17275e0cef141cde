package ticket

import (
	"encoding/base64"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"
)

func TestIssueTakeOnce(t *testing.T) {
	t.Parallel()
	s := New(time.Minute, 10, func(Ticket) { t.Error("nothing should expire") })
	id, exp, err := s.Issue(Ticket{Agent: "claude-code", Session: "s1", UID: 1000, PlanHash: "abc", EventID: "ev1"})
	assert.NilError(t, err)
	assert.Assert(t, strings.HasPrefix(id, Prefix), id)
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(id, Prefix))
	assert.NilError(t, err)
	assert.Equal(t, len(raw)*8, Bits)
	assert.Assert(t, time.Until(exp) > 50*time.Second)

	got, err := s.Take(id)
	assert.NilError(t, err)
	assert.Equal(t, got.Agent, "claude-code")
	assert.Equal(t, got.EventID, "ev1")
	_, err = s.Take(id)
	assert.ErrorIs(t, err, ErrUnknown, "a ticket redeems once")
	_, err = s.Take("not-a-ticket")
	assert.ErrorIs(t, err, ErrUnknown)
	assert.Equal(t, s.Len(), 0)
}

func TestIDsAreDistinct(t *testing.T) {
	t.Parallel()
	s := New(time.Minute, 1000, nil)
	seen := map[string]bool{}
	for range 500 {
		id, _, err := s.Issue(Ticket{})
		assert.NilError(t, err)
		assert.Assert(t, !seen[id])
		seen[id] = true
	}
}

func TestExpiry(t *testing.T) {
	t.Parallel()
	expired := make(chan Ticket, 1)
	s := New(30*time.Millisecond, 10, func(tk Ticket) { expired <- tk })
	id, _, err := s.Issue(Ticket{EventID: "ev2"})
	assert.NilError(t, err)
	select {
	case tk := <-expired:
		assert.Equal(t, tk.EventID, "ev2")
	case <-time.After(5 * time.Second):
		t.Fatal("the ticket never expired")
	}
	_, err = s.Take(id)
	assert.ErrorIs(t, err, ErrUnknown)
}

// TestTakeAfterExpiryBeforeTimer: a ticket past its expiry is refused even
// when the timer has not run yet, and its expiry is reported exactly once.
func TestTakeAfterExpiryBeforeTimer(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	s := New(time.Hour, 10, func(Ticket) { n.Add(1) })
	now := time.Now()
	s.now = func() time.Time { return now }
	id, _, err := s.Issue(Ticket{})
	assert.NilError(t, err)
	s.now = func() time.Time { return now.Add(2 * time.Hour) }
	_, err = s.Take(id)
	assert.ErrorIs(t, err, ErrUnknown)
	assert.Equal(t, n.Load(), int32(1))
}

func TestFull(t *testing.T) {
	t.Parallel()
	s := New(time.Minute, 2, nil)
	for range 2 {
		_, _, err := s.Issue(Ticket{})
		assert.NilError(t, err)
	}
	_, _, err := s.Issue(Ticket{})
	assert.ErrorIs(t, err, ErrFull)
}

// TestRaceTakeExpire: a ticket is either redeemed or expired, never both.
func TestRaceTakeExpire(t *testing.T) {
	t.Parallel()
	for range 200 {
		var expired atomic.Int32
		s := New(time.Millisecond, 10, func(Ticket) { expired.Add(1) })
		id, _, err := s.Issue(Ticket{})
		assert.NilError(t, err)
		time.Sleep(time.Millisecond)
		_, err = s.Take(id)
		time.Sleep(5 * time.Millisecond) // room for a wrong second report
		if err == nil {
			assert.Equal(t, expired.Load(), int32(0))
		} else {
			// The timer's expire calls onExpire after unlocking: a Take
			// that found the ticket gone can return before the call.
			for deadline := time.Now().Add(5 * time.Second); expired.Load() == 0 && time.Now().Before(deadline); {
				time.Sleep(time.Millisecond)
			}
			assert.Equal(t, expired.Load(), int32(1))
		}
	}
}

func TestCloseExpiresAll(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var gone []string
	s := New(time.Hour, 10, func(tk Ticket) { mu.Lock(); gone = append(gone, tk.EventID); mu.Unlock() })
	for _, ev := range []string{"a", "b"} {
		_, _, err := s.Issue(Ticket{EventID: ev})
		assert.NilError(t, err)
	}
	s.Close()
	assert.Equal(t, len(gone), 2)
	assert.Equal(t, s.Len(), 0)
}
