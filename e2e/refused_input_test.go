package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"
)

// TestRefusedInputAudited: a command refused before it is parsed (a control
// character the parser and the shell could read differently) leaves its
// event, naming the text by its hash, on the CLI and on MCP. Before, the
// refusal's event lacked the hash, could not be written, and the call went
// unaudited.
func TestRefusedInputAudited(t *testing.T) {
	w := newWorld(t, false, e2ePolicy)
	if r := w.exec(t, "--", "true"); r.code != 0 { // the audit file exists from here on
		t.Fatalf("control: %+v", r)
	}
	texts := []string{"ls \r x", "ls\x1b[2K", "echo a\x7f", "echo \x07"}
	check := func(t *testing.T, before int, text string) {
		t.Helper()
		evs := w.events(t)
		if len(evs) != before+1 {
			t.Fatalf("%q: %d events after the refusal, want %d", text, len(evs), before+1)
		}
		ev := evs[len(evs)-1]
		sum := sha256.Sum256([]byte(text))
		if field(ev, "data", "decision", "outcome") != "deny" || field(ev, "data", "decision", "reason") != "invalid_input" ||
			field(ev, "data", "command", "sha256") != hex.EncodeToString(sum[:]) {
			t.Errorf("%q: event %v", text, ev)
		}
	}
	for _, text := range texts {
		before := len(w.events(t))
		if r := w.exec(t, "--", text); r.code == 0 {
			t.Errorf("exec %q ran: %+v", text, r)
		}
		check(t, before, text)
	}
	cs := w.mcpStdio(t, "ci")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, text := range texts {
		before := len(w.events(t))
		r, err := callShell(t, ctx, cs, map[string]any{"command": text})
		must(t, err)
		if !r.isError || r.structured["reason"] != "invalid_input" || r.structured["event_id"] == nil {
			t.Errorf("shell__execute %q: %+v", text, r)
		}
		check(t, before, text)
	}
}
