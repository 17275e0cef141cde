package config

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// The agent_launch block as read; an absent egress keeps the framework's
// default hosts, an empty one means none beyond the policy's.
func TestAgentLaunchBlock(t *testing.T) {
	t.Parallel()
	c, err := fakeHost(stagedFiles).Load("testdata/good/agent-launch.yaml")
	assert.NilError(t, err)
	assert.DeepEqual(t, c.AgentLaunch, AgentLaunch{
		Env: []string{"ANTHROPIC_BASE_URL", "ANTHROPIC_MODEL"}, Egress: []string{"api.anthropic.com:443", "10.200.1.2:8080"}, EgressSet: true,
		ReadPaths: []string{"/opt/tools"}, WritePaths: []string{"/srv/cache/agent"}, Home: "/srv/agent-home",
	})
	for _, tc := range []struct {
		yaml string
		set  bool
	}{{"agent_launch: {env: []}\n", false}, {"agent_launch: {egress: []}\n", true}, {"{}\n", false}} {
		c, err := fakeHost(stagedFiles).Parse("inline.yaml", []byte(tc.yaml))
		assert.NilError(t, err, tc.yaml)
		assert.Check(t, is.Equal(c.AgentLaunch.EgressSet, tc.set), tc.yaml)
		assert.Check(t, is.Len(c.AgentLaunch.Egress, 0), tc.yaml)
	}
}
