package executor

import "sync"

// Slots bounds the executions running at once across executors. The
// generations of one gateway (each SIGHUP reload builds a new executor)
// share one, so a reload never grants a fresh set of slots while the runs
// of the last generation still hold theirs.
type Slots struct {
	mu          sync.Mutex
	used, limit int
}

// NewSlots returns Slots for at most limit runs at once (at least 1).
func NewSlots(limit int) *Slots { return &Slots{limit: max(limit, 1)} }

// SetLimit changes the bound (a reload's max_concurrent). Runs already
// holding a slot keep it; a lower bound refuses new runs until enough of
// them have finished.
func (s *Slots) SetLimit(limit int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limit = max(limit, 1)
}

// take holds a slot, or reports false and the bound when all are held.
func (s *Slots) take() (bool, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.used >= s.limit {
		return false, s.limit
	}
	s.used++
	return true, s.limit
}

func (s *Slots) give() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.used--
}

// Used is the number of slots held.
func (s *Slots) Used() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.used
}

// WithSlots makes the executor take its slots from s, shared with other
// executors, instead of a set of its own; New's maxConcurrent is then
// ignored (s carries the bound).
func WithSlots(s *Slots) Option { return func(e *Executor) { e.slots = s } }
