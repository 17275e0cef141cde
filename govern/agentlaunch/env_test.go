package agentlaunch

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// valueOf is a distinctive value per name, so that a log line that holds
// one is found.
func valueOf(name string) string { return "VAL-" + name + "-d41d8cd98f00" }

func environOf(names ...string) []string {
	var out []string
	for _, n := range names {
		out = append(out, n+"="+valueOf(n))
	}
	return out
}

// hostEnv is a launcher's environment: the basics, credentials of every
// shape, and things an agent does not need.
var hostEnv = []string{"HOME", "PATH", "TERM", "LANG", "LC_ALL", "LC_TIME", "LC_TOKEN", "LC_OPENAI_KEY", "LC_GH_PAT", "LC_X", "USER", "GH_TOKEN", "GITHUB_TOKEN",
	"AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "SSH_AUTH_SOCK",
	"ANTHROPIC_BASE_URL", "DISABLE_TELEMETRY", "XDG_RUNTIME_DIR", "LD_PRELOAD", "MITRITY_ADMISSION_SOCKET", "DBUS_SESSION_BUS_ADDRESS"}

// Only the locale's own categories pass as LC_*: a name such as
// LC_OPENAI_KEY or LC_GH_PAT (ssh's SendEnv LC_* forwards any) has no
// credential word CredentialShaped knows, and is not a locale either.
var basicsPassed = []string{"HOME", "LANG", "LC_ALL", "LC_TIME", "PATH", "TERM", "USER"}

func TestFilterEnv(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		extra    []string // NAME=VALUE added to hostEnv, first
		declared []string
		passed   []string // beyond the basics
		from     string
	}{
		{name: "the basics only; credential-shaped names never, LC_TOKEN neither"},
		{name: "declared names", declared: []string{"ANTHROPIC_BASE_URL", "DISABLE_TELEMETRY"}, passed: []string{"ANTHROPIC_BASE_URL", "DISABLE_TELEMETRY"}},
		{name: "AGENT_ISO_ALLOW adds names", extra: []string{"AGENT_ISO_ALLOW=ANTHROPIC_API_KEY"}, passed: []string{"ANTHROPIC_API_KEY"}, from: "AGENT_ISO_ALLOW"},
		{name: "AGENT_ISO_ALLOW replaces the legacy name", extra: []string{"AGENT_ISO_ALLOW=ANTHROPIC_API_KEY", "CLAUDE_ISO_ALLOW=GH_TOKEN"}, passed: []string{"ANTHROPIC_API_KEY"}, from: "AGENT_ISO_ALLOW"},
		{name: "AGENT_ISO_ALLOW empty still replaces it", extra: []string{"AGENT_ISO_ALLOW=", "CLAUDE_ISO_ALLOW=GH_TOKEN"}, from: "AGENT_ISO_ALLOW"},
		{name: "the legacy name alone is honoured", extra: []string{"CLAUDE_ISO_ALLOW=GH_TOKEN"}, passed: []string{"GH_TOKEN"}, from: "CLAUDE_ISO_ALLOW"},
		{name: "separators: commas, colons, blanks", extra: []string{"AGENT_ISO_ALLOW=GH_TOKEN,OPENAI_API_KEY:AWS_ACCESS_KEY_ID \tANTHROPIC_API_KEY"},
			passed: []string{"ANTHROPIC_API_KEY", "AWS_ACCESS_KEY_ID", "GH_TOKEN", "OPENAI_API_KEY"}, from: "AGENT_ISO_ALLOW"},
		{name: "what the launcher owns cannot be allowed", extra: []string{"AGENT_ISO_ALLOW=LD_PRELOAD,MITRITY_ADMISSION_SOCKET,HTTPS_PROXY,9x,CLAUDE_ISO_ALLOW,BOGUS-ENTRY"}, from: "AGENT_ISO_ALLOW"},
		{name: "an allowed name that is not set is not made up", extra: []string{"AGENT_ISO_ALLOW=NOT_SET_ANYWHERE"}, from: "AGENT_ISO_ALLOW"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var logs bytes.Buffer
			log := zerolog.New(&logs).Level(zerolog.DebugLevel)
			env := append(append([]string(nil), tc.extra...), environOf(hostEnv...)...)
			f := FilterEnv(env, tc.declared, log)
			want := append(append([]string(nil), basicsPassed...), tc.passed...)
			assert.Check(t, is.DeepEqual(f.Passed, sorted(want)))
			assert.Check(t, is.Equal(f.AllowFrom, tc.from))
			for _, kv := range f.Env {
				name, val, _ := strings.Cut(kv, "=")
				assert.Check(t, is.Equal(val, valueOf(name)), "the value passed is the launcher's own")
			}
			assert.Check(t, is.Len(f.Env, len(f.Passed)))
			for _, n := range hostEnv {
				if !contains(want, n) {
					assert.Check(t, contains(f.Stripped, n), "%s is neither passed nor stripped", n)
				}
			}
			for _, n := range []string{"AGENT_ISO_ALLOW", "CLAUDE_ISO_ALLOW"} {
				for _, kv := range tc.extra {
					if strings.HasPrefix(kv, n+"=") {
						assert.Check(t, contains(f.Stripped, n), "the list itself is never passed")
					}
				}
			}
			// Values are never logged, not even at debug.
			out := logs.String()
			assert.Assert(t, strings.Contains(out, `"name":"HOME"`), "debug logging was not captured: %s", out)
			for _, kv := range env {
				_, val, _ := strings.Cut(kv, "=")
				if strings.HasPrefix(val, "VAL-") {
					assert.Check(t, !strings.Contains(out, val), "a value is in the log: %s", val)
				}
			}
			assert.Check(t, !strings.Contains(out, "BOGUS-ENTRY"), "an ignored entry is shown: %s", out)
		})
	}
}

// The first of a repeated name is the one passed, as getenv reads it.
func TestFilterEnvFirstWins(t *testing.T) {
	t.Parallel()
	f := FilterEnv([]string{"TERM=first", "TERM=second", "noequals", "=x"}, nil, zerolog.Nop())
	assert.DeepEqual(t, f.Env, []string{"TERM=first"})
}

func TestCredentialShaped(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"GH_TOKEN": true, "AWS_SECRET_ACCESS_KEY": true, "ANTHROPIC_API_KEY": true, "DB_PASSWORD": true, "npm_config__authToken": true,
		"LC_TOKEN": true, "HOME": false, "LANG": false, "LC_ALL": false, "TERM": false, "ANTHROPIC_BASE_URL": false,
	} {
		assert.Check(t, is.Equal(CredentialShaped(name), want), name)
	}
	for _, b := range append(append([]string(nil), Basics...), Locale...) {
		assert.Check(t, !CredentialShaped(b), "a basic is credential-shaped: %s", b)
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// The session's proxy log is scrubbed of every value the agent is given
// beyond the basics, in any case the proxy writes a host in, then of what
// the gateway knows; a basic's value and a value too short to tell from
// text are left.
func TestFilteredEnvScrubber(t *testing.T) {
	const key = "sk-ant-api03-scrubberUnitKey0123456789"
	f := FilterEnv([]string{"HOME=/home/agentuser", "ANTHROPIC_API_KEY=" + key, "MODE=fast", "AGENT_ISO_ALLOW=ANTHROPIC_API_KEY,MODE"}, nil, zerolog.Nop())
	known := func(s string) string {
		return strings.ReplaceAll(s, "gatewayknownvalue", "[REDACTED:credential:known]")
	}
	scrub, err := f.Scrubber(known)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ in, want string }{
		{key + ".leak.invalid:443", "[REDACTED:credential:ANTHROPIC_API_KEY].leak.invalid:443"},
		{strings.ToLower(key) + ".leak.invalid:443", "[REDACTED:credential:ANTHROPIC_API_KEY].leak.invalid:443"},
		{"gatewayknownvalue.leak.invalid:443", "[REDACTED:credential:known].leak.invalid:443"},
		{"home.agentuser.fast.example:443", "home.agentuser.fast.example:443"},
	} {
		if got := scrub(tc.in); got != tc.want {
			t.Errorf("scrub(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
