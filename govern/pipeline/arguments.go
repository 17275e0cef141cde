package pipeline

import (
	"context"
	"fmt"
	"strings"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/policy"
	"github.com/mitrity/mitrity/govern/shell"
)

// MaxEnvKeys bounds a call's env argument.
const MaxEnvKeys = 32

// arguments is the first stage: the call's own bounds (the tool's
// documented limits, what the agent may set), and the rules only a
// framework's hook call has. Everything a later stage reads is within them.
func arguments(_ context.Context, p *Pipeline, st *State) govern.Decision {
	bad := func(msg string) govern.Decision { return deny("arguments", govern.ReasonInvalidArgument, msg) }
	call := st.Call
	if !call.IsShell() {
		// An upstream tool's arguments are the upstream's to validate
		// against its schema; the edge has bounded their size and shape.
		// A member named twice is not: the stages and the rules read its
		// last value, the upstream gets the bytes as sent and may keep
		// the first.
		if name, ok := repeatedMember(call.Arguments); ok {
			return bad(fmt.Sprintf("the arguments name the member %q twice in one object; decoders differ on which one wins, "+
				"so the gateway cannot judge what the upstream would read. Send each member once; nothing was sent", name))
		}
		// So is a number decoders read differently: the rules see a
		// float64, the upstream gets the bytes, and a JavaScript server
		// rounds 9007199254740993 as the rules do while a Python or Go
		// one reads it exactly; no single value is what the upstream
		// would read.
		if n, ok := ambiguousNumber(call.Arguments); ok {
			return bad(fmt.Sprintf("the arguments hold the number %s, which a float64 cannot hold exactly (an integer past 2^53, or past the float64 range); "+
				"decoders differ on its value, so the gateway cannot judge what the upstream would read. Send it as a string; nothing was sent", n))
		}
		return allow
	}
	if call.Surface == govern.SurfaceAgentHook {
		if strings.Contains(call.Command, "mitrity-hook") {
			// Tickets and the relay are the gateway's to hand out; a
			// model running the hook itself is looking for a way around
			// it (and Claude Code runs the relay's pattern outside its
			// sandbox).
			return bad("a framework's shell call may not run mitrity-hook itself; run the command you need directly")
		}
		if st.Profile.BuiltinExecRouting == policy.RoutingGovernedShell && !p.cfg.Exec.Enabled {
			return bad("the profile routes shell calls to the governed shell (builtin_exec_routing: governed_shell), which is disabled on this gateway (exec.enabled: false)")
		}
	} else if !p.cfg.Exec.Enabled {
		return bad("the governed shell is disabled on this gateway (exec.enabled: false)")
	}
	if int64(len(call.Stdin)) > p.cfg.Exec.Limits.StdinMaxBytes {
		return bad(fmt.Sprintf("stdin is %d bytes; the limit is %d (exec.limits.stdin_max_bytes)", len(call.Stdin), p.cfg.Exec.Limits.StdinMaxBytes))
	}
	if len(call.Env) > MaxEnvKeys {
		return bad(fmt.Sprintf("env has %d keys; at most %d", len(call.Env), MaxEnvKeys))
	}
	settable := map[string]bool{}
	for _, k := range p.cfg.Exec.Env.AgentSettable {
		settable[k] = true
	}
	for _, k := range sortedKeys(call.Env) {
		if !settable[k] {
			return bad(fmt.Sprintf("env key %s is not in exec.env.agent_settable; the agent may set only %s", k, listOr(p.cfg.Exec.Env.AgentSettable, "no variables")))
		}
		v := call.Env[k]
		if strings.Contains(v, "${credential:") {
			if _, ids := shell.RewriteCredentials(v); len(ids) != 1 || "${credential:"+ids[0]+"}" != v {
				return bad(fmt.Sprintf("env %s: a value is either plain text or exactly one ${credential:<id>} reference", k))
			}
		}
	}
	if call.TimeoutSeconds < 0 {
		return bad("timeout_seconds must be at least 1")
	}
	return allow
}

func listOr(list []string, none string) string {
	if len(list) == 0 {
		return none
	}
	return strings.Join(list, ", ")
}

// environment is the constructed environment a call's command runs with:
// nothing of the gateway's own, the agent's settable variables that the
// analysis was given, and each ${credential:<id>} value as an injection
// (CredentialEnv), never as text.
func (p *Pipeline) environment(st *State) map[string]string {
	env := map[string]string{
		"PATH": DefaultPath, "HOME": p.home, "LANG": "C.UTF-8", "TERM": "dumb", "PWD": st.Cwd,
	}
	for k, v := range st.Call.Env {
		// CDPATH, PWD, OLDPWD, HOME and POSIXLY_CORRECT pick the directory
		// cd goes to: one the analysis was not given stays out.
		if !st.Analysis.Started(k, v) {
			continue
		}
		if _, ids := shell.RewriteCredentials(v); len(ids) == 1 {
			st.CredentialEnv[k] = ids[0]
			continue
		}
		env[k] = v
	}
	return env
}
