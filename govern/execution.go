package govern

import "fmt"

// SandboxMode is the isolation actually in force for one execution the
// gateway ran itself. The set is closed: String returns the spec's word and
// UnmarshalText refuses any other, so a typo can never reach an audit event.
// The zero value is not a mode; an event for an execution the gateway did not
// run carries no mode at all (a nil *SandboxMode), never "none".
type SandboxMode uint8

const (
	_ SandboxMode = iota // the zero value is deliberately invalid
	// SandboxBubblewrap: Linux namespaces, read-only root, writable
	// workspace roots only, seccomp installed. Full strength.
	SandboxBubblewrap
	// SandboxBubblewrapNoSeccomp: as bubblewrap without the seccomp stage;
	// host Unix sockets are reachable. Degraded; notifies.
	SandboxBubblewrapNoSeccomp
	// SandboxSeatbelt: macOS sandbox-exec with a generated profile. Full
	// strength for the platform.
	SandboxSeatbelt
	// SandboxNone: the command ran with no kernel isolation. Degraded;
	// notifies.
	SandboxNone
	// SandboxUnavailableDenied: no backend and sandbox_required: nothing
	// ran. Notifies.
	SandboxUnavailableDenied
)

var sandboxModeWords = [...]string{
	SandboxBubblewrap:          "bubblewrap",
	SandboxBubblewrapNoSeccomp: "bubblewrap_no_seccomp",
	SandboxSeatbelt:            "seatbelt",
	SandboxNone:                "none",
	SandboxUnavailableDenied:   "unavailable_denied",
}

// SandboxModes lists every mode in the spec's order.
func SandboxModes() []SandboxMode {
	return []SandboxMode{SandboxBubblewrap, SandboxBubblewrapNoSeccomp, SandboxSeatbelt, SandboxNone, SandboxUnavailableDenied}
}

func (m SandboxMode) String() string {
	if m.Valid() {
		return sandboxModeWords[m]
	}
	return fmt.Sprintf("invalid_sandbox_mode(%d)", uint8(m))
}

// Valid reports whether m is one of the closed set.
func (m SandboxMode) Valid() bool { return m > 0 && int(m) < len(sandboxModeWords) }

// FullStrength reports whether m is the platform's full isolation. Every
// other mode fires execution.sandbox_degraded.
func (m SandboxMode) FullStrength() bool { return m == SandboxBubblewrap || m == SandboxSeatbelt }

// Ran reports whether a command can have run under m: unavailable_denied
// means the call was refused before anything started.
func (m SandboxMode) Ran() bool { return m.Valid() && m != SandboxUnavailableDenied }

// ParseSandboxMode returns the mode named by the spec's word.
func ParseSandboxMode(s string) (SandboxMode, error) {
	for i, w := range sandboxModeWords {
		if i > 0 && w == s {
			return SandboxMode(i), nil
		}
	}
	return 0, fmt.Errorf("unknown sandbox_mode %q: want bubblewrap, bubblewrap_no_seccomp, seatbelt, none or unavailable_denied", s)
}

// MarshalText refuses an invalid mode rather than writing a word that is
// not in the vocabulary.
func (m SandboxMode) MarshalText() ([]byte, error) {
	if !m.Valid() {
		return nil, fmt.Errorf("invalid sandbox_mode %d", uint8(m))
	}
	return []byte(sandboxModeWords[m]), nil
}

// UnmarshalText refuses any word outside the closed set.
func (m *SandboxMode) UnmarshalText(b []byte) error {
	v, err := ParseSandboxMode(string(b))
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// Status is how an execution the gateway attempted ended. The set is closed;
// the spec's prose "never ran" is the machine word never_ran. The zero value
// is not a status, so a card nobody filled in cannot be written.
type Status uint8

const (
	_                   Status = iota
	StatusCompleted            // the process exited on its own; its exit code is a result
	StatusTimedOut             // the wall-clock timeout expired (SIGTERM, then SIGKILL)
	StatusKilled               // the process died of a signal it did not send itself
	StatusFailedToStart        // the execution was attempted and could not start
	StatusNeverRan             // nothing was started (sandbox unavailable, ticket expired)
)

var statusWords = [...]string{
	StatusCompleted:     "completed",
	StatusTimedOut:      "timed_out",
	StatusKilled:        "killed",
	StatusFailedToStart: "failed_to_start",
	StatusNeverRan:      "never_ran",
}

// Statuses lists every status in the spec's order.
func Statuses() []Status {
	return []Status{StatusCompleted, StatusTimedOut, StatusKilled, StatusFailedToStart, StatusNeverRan}
}

func (s Status) String() string {
	if s.Valid() {
		return statusWords[s]
	}
	return fmt.Sprintf("invalid_status(%d)", uint8(s))
}

// Valid reports whether s is one of the closed set.
func (s Status) Valid() bool { return s > 0 && int(s) < len(statusWords) }

// Started reports whether a process was started: its output, duration and
// egress are then real.
func (s Status) Started() bool {
	return s == StatusCompleted || s == StatusTimedOut || s == StatusKilled
}

// ParseStatus returns the status named by the machine word.
func ParseStatus(s string) (Status, error) {
	for i, w := range statusWords {
		if i > 0 && w == s {
			return Status(i), nil
		}
	}
	return 0, fmt.Errorf("unknown status %q: want completed, timed_out, killed, failed_to_start or never_ran", s)
}

// MarshalText refuses an invalid status.
func (s Status) MarshalText() ([]byte, error) {
	if !s.Valid() {
		return nil, fmt.Errorf("invalid status %d", uint8(s))
	}
	return []byte(statusWords[s]), nil
}

// UnmarshalText refuses any word outside the closed set.
func (s *Status) UnmarshalText(b []byte) error {
	v, err := ParseStatus(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// IsExecutionReason reports whether r may explain a non-completed status on
// an execution card: pin_mismatch, concurrency_limit, spawn_error,
// sandbox_unavailable, or, for a routed hook call's ticket, ticket_expired
// and ticket_refused. No other reason belongs there.
func IsExecutionReason(r Reason) bool {
	switch r {
	case ReasonPinMismatch, ReasonConcurrencyLimit, ReasonSpawnError, ReasonSandboxUnavailable, ReasonTicketExpired, ReasonTicketRefused:
		return true
	}
	return false
}
