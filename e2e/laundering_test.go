package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLaundering: a granted run writes its credential into the workspace;
// another agent, which holds no grant, prints the file. The second run's
// output is redacted all the same (the gateway redacts every value it
// has, not only the run's own), and the first run's audit event names the
// file it left the value in.
func TestLaundering(t *testing.T) {
	forGatewayIdentities(t, func(t *testing.T, asUser bool) {
		w := newWorldBackend(t, asUser, e2ePolicy, "auto")
		r := w.exec(t, "--agent", "ci", "--json", "--", `printf 'token=%s\n' "${credential:github_token}" > leak.txt; echo wrote`)
		ev := eventOf(t, w, r)
		written, _ := field(ev, "data", "execution", "credential_written").([]any)
		leak := filepath.Join(w.ws, "leak.txt")
		if len(written) != 1 || field(written[0].(map[string]any), "path") != leak || field(written[0].(map[string]any), "credential") != "github_token" {
			t.Errorf("the granted run's event does not name the file it left the credential in: %v", field(ev, "data", "execution"))
		}
		if b, err := os.ReadFile(leak); err != nil || !strings.Contains(string(b), secretToken) {
			t.Fatalf("control: the value is not in %s, the attack proves nothing: %v", leak, err)
		}
		// Another agent, no grant: its output is redacted anyway.
		r2 := w.exec(t, "--agent", "local", "--", "cat leak.txt; base64 -w0 leak.txt; echo")
		if strings.Contains(r2.stdout+r2.stderr, secretToken) || !strings.Contains(r2.stdout, "[REDACTED:credential:github_token]") {
			t.Errorf("the value came back through an agent that holds no grant: %+v", r2)
		}
	})
}

// eventOf is the execution event of an exec --json result.
func eventOf(t *testing.T, w *world, r result) map[string]any {
	t.Helper()
	var res struct {
		Struct struct {
			EventID string `json:"event_id"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.Struct.EventID == "" {
		t.Fatalf("exec --json: %v: %+v", err, r)
	}
	for _, ev := range w.events(t) {
		if ev["id"] == res.Struct.EventID {
			return ev
		}
	}
	t.Fatalf("no audit event %s", res.Struct.EventID)
	return nil
}
