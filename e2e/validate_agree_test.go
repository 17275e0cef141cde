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
// restart got an outage. An upstream's tls.ca_file that holds no
// certificate is refused by both too.
func TestValidateAgreesWithServe(t *testing.T) {
	t.Parallel()
	w := newWorld(t, false, e2ePolicy)
	good, err := os.ReadFile(w.cfg)
	must(t, err)
	feed := filepath.Join(w.dir, "feed.yaml")
	must(t, os.WriteFile(feed, []byte("this is not a feed\n"), 0o644))
	settingsFile := filepath.Join(w.dir, "settings.json")
	must(t, os.WriteFile(settingsFile, []byte(`{"filesystem": 12}`), 0o644))
	notPEM := filepath.Join(w.dir, "ca.pem")
	must(t, os.WriteFile(notPEM, []byte("not a certificate\n"), 0o644))
	for _, tc := range []struct{ name, add, want string }{
		{"feed", "threat_intel:\n  feed: " + feed + "\n", "threat_intel.feed"},
		// Before, a start went on and the upstream never connected.
		// Before: `exec.run_as "": user: unknown user`, at no place.
		{"no run_as without the shell", "", "exec.run_as: required when the gateway runs as root"},
		{"ca file", "upstreams:\n  remote:\n    url: https://127.0.0.1:1/mcp\n    tls:\n      ca_file: " + notPEM + "\n", "upstreams.remote.tls.ca_file"},
		{"settings file", "", "exec.sandbox.settings_file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := string(good) + "admission:\n  enabled: false\n" + tc.add
			switch tc.name {
			case "settings file":
				cfg = strings.Replace(cfg, "  sandbox:\n", "  sandbox:\n    settings_file: "+settingsFile+"\n", 1)
			case "no run_as without the shell":
				if os.Geteuid() != 0 {
					t.Skip("run_as is a root gateway's")
				}
				cfg = strings.Replace(strings.Replace(cfg, "  run_as: "+testUser+"\n", "", 1), "enabled: true", "enabled: false", 1)
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
