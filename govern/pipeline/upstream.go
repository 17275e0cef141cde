package pipeline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/dlp"
	"github.com/mitrity/mitrity/govern/policy"
	"github.com/mitrity/mitrity/govern/shell"
)

// An upstream tool call (mcp:<server>__<tool>) takes the same stages as a
// shell command; those that judge a shell text (arguments' shell bounds,
// command analysis, the sandbox) have nothing to judge, and the others
// read the string values of its JSON arguments where they read the
// command, stdin and env of a shell call.

// argumentStrings are the string values (and object keys) of a tool
// call's JSON arguments, depth first, in a stable order. Arguments that
// are not JSON are one string, the bytes as they are: what the injection,
// threat-intel and DLP stages cannot read as JSON they still read as
// text, rather than judging nothing and letting it through.
func argumentStrings(raw []byte) []string {
	var v any
	if len(raw) == 0 {
		return nil
	}
	if json.Unmarshal(raw, &v) != nil {
		return []string{string(raw)}
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, k := range sortedKeys(x) {
				out = append(out, k)
				walk(x[k])
			}
		}
	}
	walk(v)
	return out
}

// DecodeArguments decodes a tool call's JSON arguments to be walked and
// encoded again (redacted, credentials substituted): numbers are kept as
// written (json.Number), not rounded through a float64, so that what is
// encoded again is what the agent sent but for what the walk changed.
func DecodeArguments(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the arguments")
	}
	return v, nil
}

// repeatedMember names a member that appears twice in one object of the
// JSON value raw, at any depth, with the name decoded (escapes and all),
// as every decoder compares names. Input that is not JSON has none: it is
// judged as text.
func repeatedMember(raw []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	// One frame per open object (its names so far, and whether a name
	// comes next) or array (names nil).
	type frame struct {
		names map[string]bool
		name  bool
	}
	var stack []frame
	// valueDone: the member's value is complete; the next token of its
	// object is a name (or the end).
	valueDone := func() {
		if n := len(stack); n > 0 && stack[n-1].names != nil {
			stack[n-1].name = true
		}
	}
	for {
		t, err := dec.Token()
		if err != nil {
			return "", false
		}
		if n := len(stack); n > 0 && stack[n-1].name {
			if k, ok := t.(string); ok {
				if stack[n-1].names[k] {
					return k, true
				}
				stack[n-1].names[k], stack[n-1].name = true, false
				continue
			}
		}
		switch t {
		case json.Delim('{'):
			stack = append(stack, frame{names: map[string]bool{}, name: true})
			continue
		case json.Delim('['):
			stack = append(stack, frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		valueDone()
	}
}

// ambiguousNumber returns a number of the JSON value raw whose value
// depends on the decoder: an integer (written without a fraction or
// exponent) that a float64 does not hold exactly, which a decoder of
// integers (Python, Go's int64, the rules' view if it were exact) and a
// decoder of doubles (JavaScript, the rules' float64) read as different
// values, and a number outside the float64 range, which one decoder
// refuses and another reads as infinity. Any other number is read as the
// same double by every decoder that reads doubles, and that double is what
// the rules see. Input that is not JSON has none: it is judged as text.
func ambiguousNumber(raw []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	for {
		t, err := dec.Token()
		if err != nil {
			return "", false
		}
		n, ok := t.(json.Number)
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(string(n), 64)
		if err != nil {
			return string(n), true
		}
		if strings.ContainsAny(string(n), ".eE") {
			continue
		}
		exact, _ := new(big.Int).SetString(string(n), 10)
		if exact == nil {
			return string(n), true
		}
		if got, _ := big.NewFloat(f).Int(nil); got.Cmp(exact) != 0 {
			return string(n), true
		}
	}
}

// judgedTexts are what the injection, threat-intel and DLP stages read of
// a call: a tool call's argument strings (its JSON decoded once per call),
// a shell call's command, stdin and env values.
func (st *State) judgedTexts() []string {
	if st.texts != nil {
		return st.texts
	}
	call := st.Call
	if !call.IsShell() {
		st.texts = argumentStrings(call.Arguments)
	} else {
		st.texts = []string{call.Command, string(call.Stdin)}
		for _, k := range sortedKeys(call.Env) {
			st.texts = append(st.texts, call.Env[k])
		}
	}
	if st.texts == nil {
		st.texts = []string{}
	}
	return st.texts
}

// missingGrant is the first credential the upstream server's entry sends
// it that agent holds no grant for ("" when it holds them all): every
// call of that server is refused for it, and none of its tools is listed
// to it.
func (p *Pipeline) missingGrant(agent policy.Agent, server string) string {
	for _, id := range p.cfg.Upstreams[server].CredentialIDs() {
		if !slices.Contains(agent.Credentials, id) {
			return id
		}
	}
	return ""
}

// argumentHosts are the hosts a tool call's argument strings name, for
// the threat-intel feed's host entries (a fetch or browser tool's URL, a
// host to connect to): the host of every URL, and every word that could
// be a host (a dotted name or an IP literal, after a user@ and before a
// :port or :path). Like intel.HostsFrom for a command, it errs towards
// listing too much: a spurious candidate costs a lookup, a missing one is
// a miss.
func argumentHosts(texts []string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(h string) {
		h = strings.TrimSuffix(strings.TrimSpace(h), ".")
		if h != "" && !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	sep := func(r rune) bool { return unicode.IsSpace(r) || strings.ContainsRune("\"'`<>(){},;|=", r) }
	for _, t := range texts {
		for _, w := range strings.FieldsFunc(t, sep) {
			if i := strings.Index(w, "://"); i > 0 {
				if u, err := url.Parse(w); err == nil && u.Hostname() != "" {
					add(u.Hostname())
				}
				continue
			}
			if at := strings.LastIndexByte(w, '@'); at >= 0 {
				w = w[at+1:]
			}
			if strings.HasPrefix(w, "[") {
				if end := strings.IndexByte(w, ']'); end > 0 {
					add(w[1:end])
				}
				continue
			}
			if c := strings.IndexAny(w, ":/"); c >= 0 {
				w = w[:c]
			}
			if _, err := netip.ParseAddr(w); err == nil || strings.Contains(strings.Trim(w, "."), ".") {
				add(w)
			}
		}
	}
	return out
}

// upstreamCredentials is the credentials stage of an upstream tool call:
// the agent must hold a grant for every credential the upstream's entry
// sends it (its env or headers), and for every ${credential:<id>} the
// arguments name (substituted by the gateway when it forwards the call, so
// the model never sees the value).
func upstreamCredentials(p *Pipeline, st *State, granted map[string]bool) govern.Decision {
	u, ok := p.cfg.Upstreams[st.Call.Server]
	if !ok {
		return deny("credentials", govern.ReasonToolPermission, fmt.Sprintf("no upstream server %q is configured on this gateway", st.Call.Server))
	}
	if id := p.missingGrant(st.Agent, u.Name); id != "" {
		return deny("credentials", govern.ReasonCredentialNotGranted,
			fmt.Sprintf("upstream %s uses credential %s, and agent %s holds no grant for it", u.Name, id, st.Call.Agent))
	}
	var refs []string
	for _, s := range st.judgedTexts() {
		_, ids := shell.RewriteCredentials(s)
		refs = append(refs, ids...)
	}
	slices.Sort(refs)
	for _, id := range slices.Compact(refs) {
		if _, ok := p.cfg.Credentials[id]; !ok {
			return deny("credentials", govern.ReasonCredentialNotGranted, fmt.Sprintf("credential %s is not configured on this gateway", id))
		}
		if !granted[id] {
			return deny("credentials", govern.ReasonCredentialNotGranted, fmt.Sprintf("agent %s holds no grant for credential %s", st.Call.Agent, id))
		}
		st.ArgumentCredentials = append(st.ArgumentCredentials, id)
	}
	return allow
}

// upstreamDLP is the DLP stage of an upstream tool call: a secret in the
// arguments is refused (dlp.arguments: deny, the default) or, under
// dlp.arguments: redact, replaced by its marker before the call is
// forwarded — the proxied case, where the gateway holds the bytes that
// go on.
func upstreamDLP(b dlp.Bindings, st *State) govern.Decision {
	if st.Profile.DLP.Arguments != policy.DLPArgumentsRedact {
		return dlpDeny(st)
	}
	v, err := DecodeArguments(st.Call.Arguments)
	if err != nil {
		return dlpDeny(st)
	}
	n := 0
	v = redactValue(b, v, &n)
	out, err := json.Marshal(v)
	if err != nil {
		return dlpDeny(st)
	}
	st.RedactedArguments, st.ArgumentsRedacted = out, n
	return allow
}

func dlpDeny(st *State) govern.Decision {
	return deny("dlp_arguments", govern.ReasonDLPArgument,
		fmt.Sprintf("the call's arguments contain a secret (%s); reference a granted credential as ${credential:<id>} instead of writing its value", st.DLPHits[0].Detector))
}

// redactValue replaces every detector hit in the string values and keys of
// v with its marker, counting them in n.
func redactValue(b dlp.Bindings, v any, n *int) any {
	switch x := v.(type) {
	case string:
		r, hits := b.Redact(x)
		*n += len(hits)
		return r
	case []any:
		for i, e := range x {
			x[i] = redactValue(b, e, n)
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			rk, hits := b.Redact(k)
			*n += len(hits)
			out[rk] = redactValue(b, e, n)
		}
		return out
	}
	return v
}

// holdText is how a held call is shown to the person who approves it.
func holdText(call govern.Call) string {
	if call.IsShell() {
		return call.Command
	}
	args := string(call.Arguments)
	if len(args) > 2048 {
		// The person sees that there is more, and where: the queue
		// holds the arguments in full (Pending.Arguments).
		args = args[:2048] + fmt.Sprintf("... (%d bytes more: mitrity-gateway approvals show ID)", len(args)-2048)
	}
	return strings.TrimSpace(call.Tool + " " + args)
}
