package pipeline

import (
	"context"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/config"
	"github.com/mitrity/mitrity/govern/policy"
)

// The arguments stage is the first decision: the call's own bounds, and
// what only a framework's hook call may not do.
func TestArguments(t *testing.T) {
	t.Parallel()
	p, _ := newPipeline(t)
	ws := t.TempDir()
	off, err := config.Loader{}.Parse("off.yaml", []byte("exec:\n  enabled: false\n  default_cwd: "+ws+"\n  run_as: nobody\n"))
	assert.NilError(t, err)
	pol, err := policy.Parse("p.yaml", []byte("default_agent:\n  profile: fw\nagents:\n  routed:\n    profile: routed\nprofiles:\n  fw:\n    builtin_exec_routing: framework\n  routed:\n    builtin_exec_routing: governed_shell\n"))
	assert.NilError(t, err)
	disabled, err := New(off, pol, "/home/agent")
	assert.NilError(t, err)
	with := func(c govern.Call, f func(*govern.Call)) govern.Call { f(&c); return c }
	hook := func(agent, cmd string) govern.Call {
		return with(call(agent, cmd), func(c *govern.Call) { c.Surface = govern.SurfaceAgentHook })
	}
	many := map[string]string{}
	for i := range MaxEnvKeys + 1 {
		many[strings.Repeat("K", i+1)] = "v"
	}
	for _, tc := range []struct {
		name string
		p    *Pipeline
		call govern.Call
		want string // the message's words; "" for no refusal by this stage
	}{
		{"ordinary", p, call("ci", "true"), ""},
		{"stdin over the limit", p, with(call("ci", "cat"), func(c *govern.Call) { c.Stdin = make([]byte, p.cfg.Exec.Limits.StdinMaxBytes+1) }), "exec.limits.stdin_max_bytes"},
		{"too many env keys", p, with(call("ci", "true"), func(c *govern.Call) { c.Env = many }), "at most 32"},
		{"env key not settable", p, with(call("ci", "true"), func(c *govern.Call) { c.Env = map[string]string{"LD_PRELOAD": "/x.so"} }), "not in exec.env.agent_settable"},
		{"env value mixing text and a reference", p, with(call("ci", "true"), func(c *govern.Call) { c.Env = map[string]string{"X": "a${credential:gh}"} }), "exactly one ${credential:<id>}"},
		{"negative timeout", p, with(call("ci", "true"), func(c *govern.Call) { c.TimeoutSeconds = -1 }), "at least 1"},
		{"the hook runs the hook", p, hook("ci", "mitrity-hook exec abc"), "may not run mitrity-hook"},
		{"the hook's own command elsewhere is fine", p, call("ci", "echo mitrity-hook"), ""},
		{"exec disabled", disabled, call("someone", "true"), "exec.enabled: false"},
		{"exec disabled, the framework runs it", disabled, hook("someone", "true"), ""},
		{"exec disabled, routed to the governed shell", disabled, hook("routed", "true"), "builtin_exec_routing: governed_shell"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, d := tc.p.Decide(context.Background(), tc.call, sandboxed)
			if tc.want == "" {
				assert.Assert(t, d.Stage != "arguments", "%+v", d)
				return
			}
			assert.Equal(t, d.Outcome, govern.Deny)
			assert.Equal(t, d.Reason, govern.ReasonInvalidArgument)
			assert.Equal(t, d.Stage, "arguments")
			assert.Assert(t, strings.Contains(d.Message, tc.want), d.Message)
		})
	}
}

// The environment is built by the decision, not after it.
func TestEnvironment(t *testing.T) {
	t.Parallel()
	p, ws := newPipeline(t)
	st, d := p.Decide(context.Background(), with2(call("ci", "env"), map[string]string{"X": "plain", "Y": "${credential:gh}"}, ws), sandboxed)
	assert.Equal(t, d.Outcome, govern.Allow, "%+v", d)
	assert.Equal(t, st.Env["X"], "plain")
	assert.Equal(t, st.Env["HOME"], "/home/agent")
	_, leaked := st.Env["Y"]
	assert.Assert(t, !leaked, "a credential reference is an injection, never text")
	assert.Equal(t, st.CredentialEnv["Y"], "gh")
}

func with2(c govern.Call, env map[string]string, cwd string) govern.Call {
	c.Env, c.Cwd = env, cwd
	return c
}
