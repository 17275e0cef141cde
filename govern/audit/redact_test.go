package audit

import (
	"encoding/json"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/dlp"
	"github.com/mitrity/mitrity/govern/egress"
	"github.com/mitrity/mitrity/govern/shell"
)

const (
	dlpGitHub = "ghp_Lm4nOp5QrSt6UvWx7YzAb8CdEf9GhIj0KlMn"
	dlpAWS    = "AKIAQ7LMNPRS2TUVWX3Y"
	injected  = "Zq8vK2mPx7Rt4LwN9bYc3HdJ6fGs1AeU"
)

func words(vs ...string) []shell.Word {
	out := make([]shell.Word, len(vs))
	for i, v := range vs {
		out[i] = shell.Word{Value: v}
	}
	return out
}

// TestEventStringsRedacted: every string an event records is redacted of
// the DLP detectors' finds (whatever the profile binds) and of the
// credential values, the strings of one event judged as one text, so that
// a value recorded in pieces is redacted piece by piece.
func TestEventStringsRedacted(t *testing.T) {
	pieces := []string{injected[:11], injected[11:22], injected[22:]}
	tests := []struct {
		name   string
		record func() Record
		want   []string // markers the event must hold
	}{
		{"a detected token in an argv word", func() Record {
			r := policyDeniedRecord()
			r.Decision = govern.Decision{Outcome: govern.Deny, Reason: "dlp_argument", Stage: "dlp", Message: "the call's arguments contain a secret (github_token)"}
			r.Analysis = &shell.Analysis{Dialect: shell.DialectBash, SHA256: deployAnalysis().SHA256, Commands: []shell.Command{
				{Argv: words("curl", "-s", "-H", "Authorization: token "+dlpGitHub, "https://api.github.com/"), Kind: "external"}}}
			return r
		}, []string{`"Authorization: token [REDACTED:dlp:github_token]"`}},
		{"literals in an inspected script", func() Record {
			r := completedRecord()
			r.Analysis = &shell.Analysis{Dialect: shell.DialectBash, SHA256: deployAnalysis().SHA256, Commands: []shell.Command{
				{Argv: words("bash", "./deploy2.sh"), Kind: "external"},
				{Argv: words("curl", "-H", "Authorization: token "+dlpGitHub), Kind: "external", Context: "script:/workspace/deploy2.sh"},
				{Argv: words("env", "AWS_ACCESS_KEY_ID="+dlpAWS, "aws", "s3", "ls"), Kind: "external", Context: "script:/workspace/deploy2.sh",
					Redirects: []shell.Redirect{{Op: ">", Path: "/workspace/" + dlpAWS + ".log", Write: true}}},
			}}
			return r
		}, []string{"[REDACTED:dlp:github_token]", "[REDACTED:dlp:aws_access_key_id]"}},
		{"an injected value cut into argv words", func() Record {
			r := completedRecord()
			r.Analysis = &shell.Analysis{Dialect: shell.DialectBash, SHA256: deployAnalysis().SHA256, Commands: []shell.Command{
				{Argv: words("bash", "./x.sh"), Kind: "external"},
				{Argv: words(append([]string{"echo"}, pieces...)...), Kind: "builtin", Context: "script:/workspace/x.sh"},
			}}
			return r
		}, []string{`"echo","[REDACTED:credential:github_token]","[REDACTED:credential:github_token]","[REDACTED:credential:github_token]"`}},
		{"an injected value cut over resolved commands", func() Record {
			r := completedRecord()
			r.Analysis = &shell.Analysis{Dialect: shell.DialectBash, SHA256: deployAnalysis().SHA256, Commands: []shell.Command{
				{Argv: words("echo", pieces[0]), Kind: "builtin"},
				{Argv: words("echo", pieces[1]), Kind: "builtin"},
				{Argv: words("echo", pieces[2]), Kind: "builtin"},
			}}
			return r
		}, []string{"[REDACTED:credential:github_token]"}},
		{"an injected value cut into the names of files written", func() Record {
			r := completedRecord()
			for _, p := range pieces {
				r.Run.CredentialWritten = append(r.Run.CredentialWritten, CredentialWritten{Path: "/workspace/" + p, Credential: "github_token"})
			}
			return r
		}, []string{`"path":"/workspace/[REDACTED:credential:github_token]"`}},
		{"an injected value cut over the protected paths created", func() Record {
			r := completedRecord()
			r.Run.ProtectedCreated = []string{"/workspace/.git/hooks/" + pieces[0], "/workspace/.git/hooks/" + pieces[1], "/workspace/.git/hooks/" + pieces[2]}
			return r
		}, []string{"[REDACTED:credential:github_token]"}},
		{"an injected value cut without separators (printf %s%s%s)", func() Record {
			r := completedRecord()
			r.Decision.Message = "killed: " + pieces[0]
			r.Run.MaskReplaced = []string{pieces[1], pieces[2]}
			return r
		}, []string{"[REDACTED:credential:github_token]"}},
		{"hosts that differ only by a secret", func() Record {
			r := completedRecord()
			r.Run.DeniedHosts = []string{injected + ".evil.example:443", dlpAWS + ".evil.example:443", "AKIAQ7LMNPRS2TUVWX3Z.evil.example:443"}
			return r
		}, []string{`"denied_hosts":["[REDACTED:credential:github_token].evil.example:443","[REDACTED:dlp:aws_access_key_id].evil.example:443"]`}},
		{"a detected token in a flag's detail and a cwd", func() Record {
			r := completedRecord()
			r.Call.Cwd = "/workspace/" + dlpAWS
			a := deployAnalysis()
			a.Flags = []shell.Flag{{Kind: shell.FlagOpaque, Detail: "eval of " + dlpGitHub}}
			r.Analysis = a
			return r
		}, []string{"[REDACTED:dlp:github_token]", "/workspace/[REDACTED:dlp:aws_access_key_id]"}},
	}
	scrub := scrubOf(t, map[string]string{"github_token": injected})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.record()
			r.Scrub = scrub
			ev := mustBuild(t, testBuilder(), r)
			raw, err := json.Marshal(ev)
			assert.NilError(t, err)
			for _, w := range tc.want {
				assert.Check(t, is.Contains(string(raw), w))
			}
			assertNoSecretForm(t, raw, pieces)
		})
	}
}

// assertNoSecretForm: no form of a secret, whole or cut, in raw.
func assertNoSecretForm(t *testing.T, raw []byte, pieces []string) {
	t.Helper()
	for _, s := range append([]string{dlpGitHub, dlpGitHub[4:20], dlpAWS, injected}, pieces...) {
		assert.Check(t, !strings.Contains(string(raw), s), "the event holds %q: %s", s, raw)
	}
	r, err := dlp.NewRedactor([]dlp.Secret{{ID: "github_token", Value: injected}, {ID: "gh", Value: dlpGitHub}, {ID: "aws", Value: dlpAWS}})
	assert.NilError(t, err)
	assert.Check(t, is.Len(r.Matches(raw), 0), "%s", raw)
	b, err := dlp.Bind([]string{"all"})
	assert.NilError(t, err)
	assert.Check(t, is.Len(b.Scan(string(raw)), 0), "%s", raw)
}

// TestUpstreamEventRedacted: an upstream's names (a resource URI) and a
// refused destination are redacted by every detector, bound or not.
func TestUpstreamEventRedacted(t *testing.T) {
	r := Record{Call: govern.Call{Agent: "a", Surface: "mcp", Tool: "gh__fetch", ActionType: "mcp:gh__resource:https://x.example/?t=" + dlpGitHub},
		Decision: govern.Decision{Outcome: govern.Allow}}
	card := &UpstreamCall{Server: "gh", Method: "resources/read", Name: "https://x.example/?t=" + dlpGitHub, Status: govern.StatusCompleted}
	ev, err := testBuilder().BuildUpstream(r, card, nil)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(card.Name, "https://x.example/?t="+dlpGitHub), "the caller's card is not written")
	raw, err := json.Marshal(ev)
	assert.NilError(t, err)
	assertNoSecretForm(t, raw, nil)

	exec := mustBuild(t, testBuilder(), completedRecord())
	dests, err := testBuilder().DestinationDenials(exec, []egress.DeniedDestination{{Target: dlpAWS + ".evil.example:443", Reason: "not_allowlisted", Method: "CONNECT"}}, nil)
	assert.NilError(t, err)
	raw, err = json.Marshal(dests)
	assert.NilError(t, err)
	assertNoSecretForm(t, raw, nil)
	assert.Check(t, is.Contains(dests[0].Data.Destination.Target, "[REDACTED:dlp:aws_access_key_id].evil.example"))
}

func TestScrubJoined(t *testing.T) {
	scrub := scrubOf(t, map[string]string{"github_token": injected})
	in := []string{"/w/" + injected[:11], "/w/" + injected[11:22], "/w/" + injected[22:], "/w/ordinary"}
	got := ScrubJoined(scrub, in)
	m := "[REDACTED:credential:github_token]"
	assert.DeepEqual(t, got, []string{"/w/" + m, "/w/" + m, "/w/" + m, "/w/ordinary"})
	assert.Check(t, is.Equal(in[0], "/w/"+injected[:11]), "the input is not changed")
	assert.DeepEqual(t, ScrubJoined(nil, in), in)
}
