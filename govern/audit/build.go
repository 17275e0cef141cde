package audit

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/shell"
)

// Record is everything the caller has once a call is decided (and, when
// something was attempted, run). Some of it is sensitive — the command's
// stdin, the agent's env values, pinned script bodies, the output, the
// credential values — and Build keeps none of it: it records hashes, sizes,
// names and paths, and redacts the free text it does record: the
// credential values with the caller's redactor (it never sees a value),
// the strings of one event judged as one text, and every DLP detector's
// finds (redact.go).
type Record struct {
	Call      govern.Call
	Decision  govern.Decision
	WouldDeny bool
	// Err is a pipeline failure, recorded as decision.error.
	Err error
	// Analysis is the analyzer's result; nil when analysis never ran.
	Analysis *shell.Analysis
	// LinkedEventID links the execution event of a routed hook call to the
	// decision event written at admit time.
	LinkedEventID string
	// Run is what the executor attempted; nil when nothing was.
	Run *Run
	// Scrub takes every form of every credential value the gateway knows
	// out of the free-text strings recorded (a literal token typed into
	// the command would otherwise land in argv): the same redactor that
	// cleans the call's output, so the record never holds a value to
	// match against. A Scrub that is a SpanFinder (the gateway's is) has
	// the strings of one event judged as a whole, so a value cut into
	// pieces recorded apart is redacted too (redact.go); any other
	// scrubs each string alone. nil: no credential is known.
	Scrub Scrubber
}

// Scrubber replaces credential values in text with their markers.
type Scrubber interface {
	Scrub(string) string
}

// Run is the executor's account of one execution.
type Run struct {
	Status         govern.Status
	Reason         govern.Reason
	SandboxMode    *govern.SandboxMode // nil when no sandbox was chosen
	ExitCode       int                 // recorded only when Status is completed
	Duration       time.Duration
	TimeoutSeconds int
	Stdout, Stderr Output
	RedactionCount int
	// Pins are the scripts the executor pinned; their Bytes are never read.
	Pins      []govern.Pin
	PinMethod PinMethod
	// CredentialsInjected are the ids injected as env or files.
	CredentialsInjected []string
	EgressAllowed       int
	EgressDenied        int
	// DeniedHosts are refused host:port pairs in order; the first 16
	// distinct ones are kept.
	DeniedHosts []string
	// Limits says which bounds held; a missing limit is recorded as not
	// enforced.
	Limits map[Limit]LimitEnforcement
	// ProtectedCreated are protected paths (git hooks and config, rc files,
	// agent and editor settings) that did not exist before the run and do
	// after it: the sandbox holds existing ones read-only, but cannot hold
	// a missing one without creating it on the host.
	ProtectedCreated []string
	// ProtectedModified are protected paths whose content changed.
	ProtectedModified []string
	// ArgvRefused are the program starts the sandbox's exec guard refused:
	// an argument carried an injected credential.
	ArgvRefused []ArgvRefusal
	// CredentialWritten are files in the workspace the run changed that
	// hold a credential it was given.
	CredentialWritten []CredentialWritten
	// MaskReplaced are the masked paths the host replaced during the run,
	// by what they are (the sandbox's labels).
	MaskReplaced []string
}

// Output is one stream as the executor saw it.
type Output struct {
	// Redacted is the stream exactly as returned to the agent. It is hashed
	// and measured, never stored.
	Redacted []byte
	// Produced counts every byte the process wrote, including Discarded.
	Produced  int64
	Discarded int64
	Truncated bool
}

// Builder turns Records into Events. The zero Builder is ready: nil fields
// fall back to the host's name, the wall clock and crypto/rand.
type Builder struct {
	Source string           // default SourcePrefix + os.Hostname()
	Now    func() time.Time // default time.Now
	Rand   io.Reader        // default crypto/rand.Reader
}

// DefaultSource is the event source for this host.
func DefaultSource() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		h = "localhost"
	}
	return SourcePrefix + h
}

// NewID returns a random (version 4) UUID read from r.
func NewID(r io.Reader) (string, error) {
	var b [16]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", fmt.Errorf("event id: %w", err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], nil
}

// build returns the event for r as the call has it: not redacted, not
// bounded, not validated.
func (b Builder) build(r Record) (*Event, error) {
	src, now, rnd := b.Source, b.Now, b.Rand
	if src == "" {
		src = DefaultSource()
	}
	if now == nil {
		now = time.Now
	}
	if rnd == nil {
		rnd = rand.Reader
	}
	id, err := NewID(rnd)
	if err != nil {
		return nil, err
	}
	ev := &Event{
		SpecVersion:     SpecVersion,
		ID:              id,
		Source:          src,
		Type:            TypeDecision,
		Time:            now().UTC(),
		Subject:         r.Call.Agent,
		DataContentType: ContentType,
		Data: Data{
			Agent:      r.Call.Agent,
			Surface:    Surface(r.Call.Surface),
			Tool:       r.Call.Tool,
			ActionType: r.Call.ActionType,
			Session:    r.Call.Session,
			Decision: Decision{
				Outcome:   OutcomeOf(r.Decision.Outcome),
				Reason:    r.Decision.Reason,
				Stage:     r.Decision.Stage,
				Rule:      r.Decision.Rule,
				Message:   r.Decision.Message,
				WouldDeny: r.WouldDeny,
			},
			BlockedBy:     BlockedBy(r.Decision),
			LinkedEventID: r.LinkedEventID,
		},
	}
	if r.Err != nil {
		ev.Data.Decision.Error = r.Err.Error()
	}
	if r.Analysis != nil {
		ev.Data.Command = commandOf(r.Analysis, r.Call)
	}
	if r.Run != nil {
		ev.Type = TypeExecution
		ev.Data.Execution = executionOf(r.Run)
	}
	return ev, nil
}

// Build returns the validated event for r, every string it records
// redacted (redactStrings) and bounded.
func (b Builder) Build(r Record) (*Event, error) {
	ev, err := b.build(r)
	if err != nil {
		return nil, err
	}
	redactStrings(r.Scrub, ev.texts())
	if x := ev.Data.Execution; x != nil {
		// Two hosts that differ only by a secret are one host now.
		seen := map[string]bool{}
		x.Egress.DeniedHosts = slices.DeleteFunc(x.Egress.DeniedHosts, func(h string) bool {
			dup := seen[h]
			seen[h] = true
			return dup
		})
	}
	ev.bound()
	if err := ev.Validate(); err != nil {
		return nil, err
	}
	return ev, nil
}

// BlockedBy names what stopped a denied call: "command" for the hard
// denials of the analyzer and the executor, which no policy knob relaxes,
// else the stage that denied. It is empty for anything but a denial.
func BlockedBy(d govern.Decision) string {
	if d.Outcome != govern.Deny {
		return ""
	}
	switch d.Reason {
	case govern.ReasonSandboxUnavailable, govern.ReasonModifiedOutsideGovernance,
		govern.ReasonCredentialInArgv, govern.ReasonCwdOutsideWorkspace,
		govern.ReasonCommandAnalysisOff, govern.ReasonInvalidInput, govern.ReasonParseError:
		return BlockedByCommand
	}
	return d.Stage
}

func commandOf(a *shell.Analysis, c govern.Call) *Command {
	cmd := &Command{
		SHA256:                a.SHA256,
		Dialect:               string(a.Dialect),
		Cwd:                   c.Cwd,
		Resolved:              make([]Resolved, 0, len(a.Commands)),
		Opaque:                a.Opaque(),
		CredentialsReferenced: slices.Clone(a.Credentials),
	}
	if c.Stdin != nil {
		sum := sha256.Sum256(c.Stdin)
		cmd.StdinSHA256, cmd.StdinBytes = hex.EncodeToString(sum[:]), len(c.Stdin)
	}
	for _, sc := range a.Commands {
		r := Resolved{
			Argv:     make([]string, len(sc.Argv)),
			Kind:     sc.Kind,
			Context:  sc.Context,
			Wrappers: slices.Clone(sc.Wrappers),
			Opaque:   sc.Opaque,
		}
		for i, w := range sc.Argv {
			r.Argv[i] = w.Value
			if w.Dynamic {
				r.Dynamic = append(r.Dynamic, i)
			}
		}
		for _, rd := range sc.Redirects {
			r.Redirects = append(r.Redirects, Redirect{Op: rd.Op, Path: rd.Path, Write: rd.Write, Dynamic: rd.Dynamic, Network: rd.Network})
		}
		cmd.Resolved = append(cmd.Resolved, r)
	}
	for _, f := range a.Flags {
		cmd.Flags = append(cmd.Flags, Flag{Kind: string(f.Kind), Detail: f.Detail})
	}
	for _, p := range a.Pins {
		cmd.Scripts = append(cmd.Scripts, Script{Path: p.Path, SHA256: p.SHA256, Size: p.Size})
	}
	return cmd
}

func executionOf(r *Run) *Execution {
	x := &Execution{
		Status:              r.Status,
		Reason:              r.Reason,
		DurationMS:          r.Duration.Milliseconds(),
		TimeoutSeconds:      r.TimeoutSeconds,
		Stdout:              Stream{Bytes: r.Stdout.Produced, DiscardedBytes: r.Stdout.Discarded, Truncated: r.Stdout.Truncated},
		Stderr:              Stream{Bytes: r.Stderr.Produced, DiscardedBytes: r.Stderr.Discarded, Truncated: r.Stderr.Truncated},
		RedactionCount:      r.RedactionCount,
		PinnedScripts:       []PinnedScript{},
		CredentialsInjected: []string{},
		Egress:              Egress{Allowed: r.EgressAllowed, Denied: r.EgressDenied, DeniedHosts: []string{}},
		LimitsEnforced:      map[Limit]LimitEnforcement{},
		ProtectedCreated:    []string{},
		ProtectedModified:   []string{},
		ArgvRefused:         []ArgvRefusal{},
		CredentialWritten:   []CredentialWritten{},
		MaskReplaced:        []string{},
	}
	if r.SandboxMode != nil {
		m := *r.SandboxMode
		x.SandboxMode = &m
	}
	if r.Status == govern.StatusCompleted {
		code := r.ExitCode
		x.ExitCode = &code
	}
	if r.Status.Started() {
		h := sha256.New()
		h.Write(r.Stdout.Redacted)
		h.Write(r.Stderr.Redacted)
		x.OutputSHA256 = hex.EncodeToString(h.Sum(nil))
		x.OutputBytes = int64(len(r.Stdout.Redacted) + len(r.Stderr.Redacted))
	}
	for _, p := range r.Pins {
		x.PinnedScripts = append(x.PinnedScripts, PinnedScript{Path: p.Path, SHA256: p.SHA256, Size: p.Size, PinMethod: r.PinMethod})
	}
	x.CredentialsInjected = append(x.CredentialsInjected, r.CredentialsInjected...)
	slices.Sort(x.CredentialsInjected)
	x.CredentialsInjected = slices.Compact(x.CredentialsInjected)
	seen := map[string]bool{}
	for _, h := range r.DeniedHosts {
		if len(x.Egress.DeniedHosts) == MaxDeniedHosts {
			break
		}
		if !seen[h] {
			seen[h] = true
			x.Egress.DeniedHosts = append(x.Egress.DeniedHosts, h)
		}
	}
	// A denied count below the hosts listed would be a lie in the other
	// direction; the proxy's count is authoritative otherwise.
	x.Egress.Denied = max(x.Egress.Denied, len(x.Egress.DeniedHosts))
	for _, l := range Limits() {
		x.LimitsEnforced[l] = r.Limits[l] // missing: {false, ""}
	}
	x.ProtectedCreated = append(x.ProtectedCreated, r.ProtectedCreated...)
	x.ProtectedModified = append(x.ProtectedModified, r.ProtectedModified...)
	x.ArgvRefused = append(x.ArgvRefused, r.ArgvRefused...)
	x.MaskReplaced = append(x.MaskReplaced, r.MaskReplaced...)
	x.CredentialWritten = append(x.CredentialWritten, r.CredentialWritten...)
	return x
}
