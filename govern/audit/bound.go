package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"unicode/utf8"
)

// What an event records of a string the agent or an upstream chose (a
// tool, prompt or resource name, an action type, a message quoting one)
// is bounded, so that an event's size is bounded whatever the call: an
// upstream call's one event is written after the call into room reserved
// before it (MaxUpstreamEventBytes), and the room must be enough.
const (
	// MaxTextBytes bounds a name or a message as JSON (its escapes
	// counted): room for a resource URI of the longest the gateway reads
	// (8 KiB) inside an action type.
	MaxTextBytes = 9 << 10
	// MaxMessageBytes bounds a decision's message or error as an event
	// records it (the agent is told the whole of it).
	MaxMessageBytes = 4 << 10
	// MaxWordBytes bounds a word (an agent, a server, a method, a stage,
	// an injection kind, a credential id) as JSON.
	MaxWordBytes = 256
	// MaxInjectionKinds bounds an upstream card's injection list: the
	// kinds of the first 16 findings.
	MaxInjectionKinds = 16
	// MaxCredentialIDs bounds an upstream card's credentials_injected (the
	// first 64 distinct ids, sorted), each at most MaxCredentialIDBytes
	// (the longest id validation accepts).
	MaxCredentialIDs     = 64
	MaxCredentialIDBytes = 128
	// MaxUpstreamEventBytes is the most an upstream event takes as a line
	// of the log, every field at its bound (TestUpstreamEventBounded): the
	// room a forwarded call reserves.
	MaxUpstreamEventBytes = 64 << 10
)

// Bound is v as an event records it: v itself when its JSON takes at most
// max bytes, else as much of it as fits before a marker that says how
// long it was and its SHA-256 (so two long values can still be told
// apart, and one compared with a value known elsewhere).
func Bound(v string, max int) string {
	if jsonLen(v) <= max {
		return v
	}
	sum := sha256.Sum256([]byte(v))
	marker := fmt.Sprintf("…[cut by the gateway: %d bytes, sha256:%s]", len(v), hex.EncodeToString(sum[:]))
	budget := max - jsonLen(marker)
	n, i := 0, 0
	for i < len(v) {
		r, size := utf8.DecodeRuneInString(v[i:])
		l := runeJSONLen(r, size)
		if n+l > budget {
			break
		}
		n += l
		i += size
	}
	return v[:i] + marker
}

// jsonLen is how many bytes encoding/json writes for v, without the
// quotes, or more (escapes counted at their longest).
func jsonLen(v string) int {
	n := 0
	for i := 0; i < len(v); {
		r, size := utf8.DecodeRuneInString(v[i:])
		n += runeJSONLen(r, size)
		i += size
	}
	return n
}

func runeJSONLen(r rune, size int) int {
	switch {
	case r == utf8.RuneError && size == 1:
		return 6 // \ufffd
	case r == '"' || r == '\\':
		return 2
	case r < 0x20 || r == '<' || r == '>' || r == '&' || r == 0x2028 || r == 0x2029:
		return 6 // \u00XX, at most
	}
	return size
}

func boundAll(vs []string, max, most int) []string {
	if vs == nil {
		return nil
	}
	if len(vs) > most {
		vs = vs[:most]
	}
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = Bound(v, max)
	}
	return out
}

// bound bounds what an event says that a caller chose: the call's names,
// the decision's free text; the upstream and definition cards. Command
// and execution cards (shell commands) have bounds of their own.
func (e *Event) bound() {
	d := &e.Data
	e.Subject = Bound(e.Subject, MaxWordBytes)
	d.Agent = Bound(d.Agent, MaxWordBytes)
	d.Session = Bound(d.Session, MaxWordBytes)
	d.Tool = Bound(d.Tool, MaxTextBytes)
	d.ActionType = Bound(d.ActionType, MaxTextBytes)
	d.Decision.Stage = Bound(d.Decision.Stage, MaxWordBytes)
	d.Decision.Rule = Bound(d.Decision.Rule, MaxWordBytes)
	d.Decision.Message = Bound(d.Decision.Message, MaxMessageBytes)
	d.Decision.Error = Bound(d.Decision.Error, MaxMessageBytes)
	if u := d.Upstream; u != nil {
		c := *u
		c.Server = Bound(c.Server, MaxWordBytes)
		c.Method = Bound(c.Method, MaxWordBytes)
		c.Name = Bound(c.Name, MaxTextBytes)
		c.Injection = boundAll(c.Injection, MaxWordBytes, MaxInjectionKinds)
		ids := slices.Compact(slices.Sorted(slices.Values(c.CredentialsInjected)))
		c.CredentialsInjected = boundAll(ids, MaxCredentialIDBytes, MaxCredentialIDs)
		c.InjectionAction = Bound(c.InjectionAction, MaxWordBytes)
		c.ServerSandbox = Bound(c.ServerSandbox, MaxWordBytes)
		d.Upstream = &c
	}
	if t := d.ToolDefinition; t != nil {
		c := *t
		c.Server = Bound(c.Server, MaxWordBytes)
		c.Tool = Bound(c.Tool, MaxTextBytes)
		c.Served = Bound(c.Served, MaxTextBytes)
		c.State = Bound(c.State, MaxWordBytes)
		d.ToolDefinition = &c
	}
}
