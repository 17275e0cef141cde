package policy

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestUpstreamSettings(t *testing.T) {
	t.Parallel()
	p, err := Load("testdata/good/upstreams.yaml")
	assert.NilError(t, err)
	assert.DeepEqual(t, p.ToolPins, map[string]string{
		"github__create_issue": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		"fs__read-file_v2":     "0000000000000000000000000000000000000000000000000000000000000000",
	})
	tests := []struct {
		profile string
		inj     Injection
		dlp     DLP
	}{
		// Absent: an injected result is refused, a secret in the
		// arguments denies the call.
		{"default", Injection{Mode: InjectionDeny, Results: ResultInjectionDeny}, DLP{Arguments: DLPArgumentsDeny}},
		{"proxy", Injection{Mode: InjectionDeny, Results: ResultInjectionFlag}, DLP{Bindings: []string{"github_token"}, Arguments: DLPArgumentsRedact}},
		{"strict", Injection{Mode: InjectionHold, Results: ResultInjectionDeny}, DLP{Arguments: DLPArgumentsDeny}},
		// "off" for results leaves the mode of what the agent sends alone.
		{"quiet", Injection{Mode: InjectionDeny, Results: ResultInjectionOff}, DLP{Arguments: DLPArgumentsDeny}},
	}
	for _, tt := range tests {
		prof := p.Profiles[tt.profile]
		assert.Check(t, is.DeepEqual(prof.Injection, tt.inj), tt.profile)
		assert.Check(t, is.DeepEqual(prof.DLP, tt.dlp, cmpPolicy...), tt.profile)
	}

	// No tool_pins: none.
	q, err := Parse("p.yaml", []byte("profiles:\n  default: {}\n"))
	assert.NilError(t, err)
	assert.Check(t, is.Len(q.ToolPins, 0))
	// The embedded default pins nothing and refuses what it cannot redact.
	d := Default()
	assert.Check(t, is.Len(d.ToolPins, 0))
	assert.Equal(t, d.Profiles["default"].Injection.Results, ResultInjectionDeny)
	assert.Equal(t, d.Profiles["default"].DLP.Arguments, DLPArgumentsDeny)
}
