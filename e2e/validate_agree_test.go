package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestValidateAgreesWithServe: `validate` refuses what `serve` refuses,
// naming the same field. Before, validate stopped after the policy and the
// placement of the gateway's own files, and said "ok" for a config whose
// threat-intel feed or sandbox settings file does not parse, which serve
// then refused to start on (exit 126): an operator who validated before a
// restart got an outage.
func TestValidateAgreesWithServe(t *testing.T) {
	t.Parallel()
	w := newWorld(t, false, e2ePolicy)
	good, err := os.ReadFile(w.cfg)
	must(t, err)
	feed := filepath.Join(w.dir, "feed.yaml")
	must(t, os.WriteFile(feed, []byte("this is not a feed\n"), 0o644))
	settingsFile := filepath.Join(w.dir, "settings.json")
	must(t, os.WriteFile(settingsFile, []byte(`{"filesystem": 12}`), 0o644))
	for _, tc := range []struct{ name, add, want string }{
		{"feed", "threat_intel:\n  feed: " + feed + "\n", "threat_intel.feed"},
		{"settings file", "", "exec.sandbox.settings_file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := string(good) + "admission:\n  enabled: false\n" + tc.add
			if tc.add == "" {
				cfg = strings.Replace(cfg, "  sandbox:\n", "  sandbox:\n    settings_file: "+settingsFile+"\n", 1)
			}
			p := filepath.Join(w.dir, strings.ReplaceAll(tc.name, " ", "-")+".yaml")
			must(t, os.WriteFile(p, []byte(cfg), 0o644))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s := w.gw(t, ctx, "", "--log-level", "error", "serve", "--stdio", "--config", p, "--admin-dir", w.admin)
			if s.code == 0 || !strings.Contains(s.stderr, tc.want) {
				t.Fatalf("serve: want a refusal naming %s: %+v", tc.want, s)
			}
			v := w.gw(t, ctx, "", "validate", "--config", p)
			if v.code == 0 || !strings.Contains(v.stderr, tc.want) {
				t.Errorf("validate: want a refusal naming %s, as serve's: %+v", tc.want, v)
			}
		})
	}
}
