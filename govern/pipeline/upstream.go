package pipeline

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

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
// call's JSON arguments, depth first, in a stable order.
func argumentStrings(raw []byte) []string {
	var v any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return nil
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

// judgedTexts are what the injection and DLP stages read of a call.
func judgedTexts(call govern.Call) []string {
	if !call.IsShell() {
		return argumentStrings(call.Arguments)
	}
	texts := []string{call.Command, string(call.Stdin)}
	for _, k := range sortedKeys(call.Env) {
		texts = append(texts, call.Env[k])
	}
	return texts
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
	for _, id := range u.CredentialIDs() {
		if !granted[id] {
			return deny("credentials", govern.ReasonCredentialNotGranted,
				fmt.Sprintf("upstream %s uses credential %s, and agent %s holds no grant for it", u.Name, id, st.Call.Agent))
		}
	}
	var refs []string
	for _, s := range argumentStrings(st.Call.Arguments) {
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
	var v any
	if err := json.Unmarshal(st.Call.Arguments, &v); err != nil {
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
		args = args[:2048] + "..."
	}
	return strings.TrimSpace(call.Tool + " " + args)
}
