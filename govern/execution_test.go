package govern

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestSandboxModeWords(t *testing.T) {
	t.Parallel()
	want := []string{"bubblewrap", "bubblewrap_no_seccomp", "seatbelt", "none", "unavailable_denied"}
	modes := SandboxModes()
	if len(modes) != len(want) {
		t.Fatalf("%d modes, want %d", len(modes), len(want))
	}
	for i, m := range modes {
		if m.String() != want[i] {
			t.Errorf("mode %d: String %q, want %q", i, m, want[i])
		}
		b, err := json.Marshal(m)
		if err != nil || string(b) != `"`+want[i]+`"` {
			t.Errorf("marshal %s: %s, %v", want[i], b, err)
		}
		var back SandboxMode
		if err := json.Unmarshal(b, &back); err != nil || back != m {
			t.Errorf("unmarshal %s: %v, %v", b, back, err)
		}
	}
	full := map[SandboxMode]bool{SandboxBubblewrap: true, SandboxSeatbelt: true}
	for _, m := range modes {
		if m.FullStrength() != full[m] {
			t.Errorf("%s: FullStrength %t", m, m.FullStrength())
		}
		if m.Ran() == (m == SandboxUnavailableDenied) {
			t.Errorf("%s: Ran %t", m, m.Ran())
		}
	}
}

func TestStatusWords(t *testing.T) {
	t.Parallel()
	want := []string{"completed", "timed_out", "killed", "failed_to_start", "never_ran"}
	for i, s := range Statuses() {
		if s.String() != want[i] {
			t.Errorf("status %d: String %q, want %q", i, s, want[i])
		}
		b, err := json.Marshal(s)
		if err != nil || string(b) != `"`+want[i]+`"` {
			t.Errorf("marshal %s: %s, %v", want[i], b, err)
		}
		var back Status
		if err := json.Unmarshal(b, &back); err != nil || back != s {
			t.Errorf("unmarshal %s: %v, %v", b, back, err)
		}
		if s.Started() != (s == StatusCompleted || s == StatusTimedOut || s == StatusKilled) {
			t.Errorf("%s: Started %t", s, s.Started())
		}
	}
}

func TestClosedVocabulariesRefuse(t *testing.T) {
	t.Parallel()
	for _, w := range []string{`"Bubblewrap"`, `"bwrap"`, `"no_sandbox"`, `""`, `"none "`, `3`, `null`} {
		var m SandboxMode = SandboxSeatbelt
		err := json.Unmarshal([]byte(w), &m)
		if w == "null" {
			// JSON null leaves a value untouched; an absent mode is a nil
			// pointer on the event, never a zero value.
			if err != nil || m != SandboxSeatbelt {
				t.Errorf("null: %v, %v", m, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("sandbox_mode %s accepted as %v", w, m)
		}
	}
	for _, w := range []string{`"never ran"`, `"timeout"`, `"Completed"`, `""`, `"ok"`} {
		var s Status
		if err := json.Unmarshal([]byte(w), &s); err == nil {
			t.Errorf("status %s accepted as %v", w, s)
		}
	}
	// The zero values are not words and cannot be written.
	if _, err := json.Marshal(SandboxMode(0)); err == nil || !strings.Contains(err.Error(), "invalid sandbox_mode") {
		t.Errorf("zero SandboxMode marshalled: %v", err)
	}
	if _, err := json.Marshal(Status(0)); err == nil || !strings.Contains(err.Error(), "invalid status") {
		t.Errorf("zero Status marshalled: %v", err)
	}
	if _, err := json.Marshal(SandboxMode(99)); err == nil {
		t.Error("out-of-range SandboxMode marshalled")
	}
	if _, err := ParseSandboxMode("none"); err != nil {
		t.Error(err)
	}
	if _, err := ParseStatus("never_ran"); err != nil {
		t.Error(err)
	}
}

func TestExecutionReasons(t *testing.T) {
	t.Parallel()
	for _, r := range []Reason{ReasonPinMismatch, ReasonConcurrencyLimit, ReasonSpawnError, ReasonSandboxUnavailable} {
		if !IsExecutionReason(r) {
			t.Errorf("%s is an execution reason", r)
		}
	}
	for _, r := range []Reason{ReasonCredentialInArgv, ReasonModifiedOutsideGovernance, "", "timeout"} {
		if IsExecutionReason(r) {
			t.Errorf("%q is not an execution reason", r)
		}
	}
}
