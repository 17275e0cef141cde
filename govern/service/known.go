package service

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/mitrity/mitrity/govern/config"
	"github.com/mitrity/mitrity/govern/dlp"
)

// known is every credential value this gateway has: those it fetched for
// a run, and at start those it can read without running anything (env
// and file sources). Every run's output is redacted of all of them, not
// only of the ones it was given, so that a value a granted run left in
// the workspace does not come back to another agent through a run that
// never held it. The values stay in the gateway; no run sees them.
type known struct {
	mu sync.Mutex
	m  map[string]string // credential id -> value
	// red redacts every value of m; nil until built, and again whenever m
	// changes.
	red *dlp.Redactor
}

func (k *known) add(secrets ...dlp.Secret) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[string]string{}
	}
	for _, s := range secrets {
		if v, ok := k.m[s.ID]; !ok || v != s.Value {
			k.m[s.ID] = s.Value
			k.red = nil
		}
	}
}

// redactor is the one redactor of a call: every value the gateway knows,
// for the call's output, its audit events and its refused destinations.
// It is built once per change of the known values and shared (it is
// immutable). An error means no call may run or be recorded: a value the
// gateway holds could not be kept out of what it writes.
func (k *known) redactor() (*redactor, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.red == nil {
		list := make([]dlp.Secret, 0, len(k.m))
		for _, id := range slices.Sorted(maps.Keys(k.m)) {
			list = append(list, dlp.Secret{ID: id, Value: k.m[id]})
		}
		r, err := dlp.NewRedactor(list)
		if err != nil {
			return nil, fmt.Errorf("the credential redactor: %w", err)
		}
		k.red = r
	}
	return &redactor{k.red}, nil
}

// scrub takes every known value out of a text the gateway logs. A nil k
// knows none.
func (k *known) scrub(v string) string {
	if k == nil {
		return v
	}
	red, err := k.redactor()
	if err != nil {
		return "[withheld: the redactor could not be built]"
	}
	return red.Scrub(v)
}

// redactor is a dlp.Redactor as the audit's Scrubber.
type redactor struct{ *dlp.Redactor }

func (r *redactor) Scrub(v string) string {
	out, _ := r.Redact([]byte(v))
	return string(out)
}

// readable loads the sources that cost nothing to read (env, file); a
// command source is learnt when a run first fetches it. A source that
// fails is skipped: the run that needs it reports why.
func (k *known) readable(cfg *config.Config) {
	for id, src := range cfg.Credentials {
		if src.Kind() == "command" {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		v, err := src.Fetch(ctx)
		cancel()
		if err == nil {
			k.add(dlp.Secret{ID: id, Value: v})
		}
	}
}
