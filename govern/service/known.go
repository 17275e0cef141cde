package service

import (
	"context"
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
}

func (k *known) add(secrets ...dlp.Secret) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[string]string{}
	}
	for _, s := range secrets {
		k.m[s.ID] = s.Value
	}
}

// with returns secrets and every other known value (the run's own win).
func (k *known) with(secrets []dlp.Secret) []dlp.Secret {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := slices.Clone(secrets)
	have := map[string]bool{}
	for _, s := range secrets {
		have[s.ID] = true
	}
	for _, id := range slices.Sorted(maps.Keys(k.m)) {
		if !have[id] {
			out = append(out, dlp.Secret{ID: id, Value: k.m[id]})
		}
	}
	return out
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
