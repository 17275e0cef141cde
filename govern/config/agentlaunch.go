package config

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/mitrity/mitrity/govern/egress"
	"github.com/mitrity/mitrity/govern/yamlfile"
)

// AgentLaunch is agent_launch: what `mitrity-gateway agent` gives the agent
// it launches in the layered sandbox (govern/agentlaunch, docs/agent.md),
// beyond what it derives from the framework and the policy.
type AgentLaunch struct {
	// Env are the variables, by name, the project declares the agent
	// needs: passed through from the launcher's environment on top of the
	// basics and $AGENT_ISO_ALLOW. Every other variable is stripped.
	Env []string
	// Egress is the agent process's own destination allowlist (its model
	// API), in the egress proxy's grammar; the policy's destinations for
	// the agent are added to it. EgressSet false (the key absent): the
	// framework's default model API hosts.
	Egress    []string
	EgressSet bool
	// ReadPaths are host paths the agent may read besides the system
	// runtime, its install and its state (default-deny reads).
	ReadPaths []string
	// WritePaths are host paths the agent may write besides the
	// workspace roots and its state directories: made when missing.
	WritePaths []string
	// Home is the agent's home: $HOME inside its sandbox, where the
	// framework's state directories are found. Empty: the home of the user
	// the agent runs as.
	Home string
}

type wireAgentLaunch struct {
	Env        *[]string `yaml:"env"`
	Egress     *[]string `yaml:"egress"`
	ReadPaths  *[]string `yaml:"read_paths"`
	WritePaths *[]string `yaml:"write_paths"`
	Home       *string   `yaml:"home"`
}

func (a *AgentLaunch) overlay(w *wireAgentLaunch) {
	if w == nil {
		return
	}
	if w.Env != nil {
		a.Env = slices.Clone(*w.Env)
	}
	if w.Egress != nil {
		a.Egress, a.EgressSet = slices.Clone(*w.Egress), true
	}
	if w.ReadPaths != nil {
		a.ReadPaths = slices.Clone(*w.ReadPaths)
	}
	if w.WritePaths != nil {
		a.WritePaths = slices.Clone(*w.WritePaths)
	}
	set(&a.Home, w.Home)
}

// AgentIsoAllow and AgentIsoAllowLegacy name the variables that list
// more names to pass to the agent; the launcher reads them and never
// passes them on.
const (
	AgentIsoAllow       = "AGENT_ISO_ALLOW"
	AgentIsoAllowLegacy = "CLAUDE_ISO_ALLOW"
)

// AgentEnvProblem says why name may not be declared for the agent, or "".
// The agent's environment is its own (not a judged command's), so only
// what the launcher itself sets or reads is refused.
func AgentEnvProblem(name string) string {
	if !validEnvName(name) {
		return "not a variable name (letters, digits and '_', not starting with a digit)"
	}
	switch {
	case strings.HasPrefix(name, "MITRITY_"):
		return "MITRITY_* variables are the gateway's own: the launcher sets the agent's"
	case strings.HasPrefix(name, "LD_"), strings.HasPrefix(name, "DYLD_"):
		return "the dynamic loader reads it"
	}
	switch name {
	case AgentIsoAllow, AgentIsoAllowLegacy:
		return "it lists the names to pass; it is never passed itself"
	case "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy", "no_proxy", "NODE_USE_ENV_PROXY":
		return "it is the sandbox's route to the egress proxy, which the launcher sets"
	}
	return ""
}

func checkAgentLaunch(v *validator) {
	a := v.c.AgentLaunch
	seen := map[string]bool{}
	for i, name := range a.Env {
		p := yamlfile.Index("agent_launch.env", i)
		switch msg := AgentEnvProblem(name); {
		case msg != "":
			v.errorf(p, "%q: %s", name, msg)
		case seen[name]:
			v.errorf(p, "%q: listed twice", name)
		}
		seen[name] = true
	}
	for i, e := range a.Egress {
		if _, err := egress.ParseEntry(e); err != nil {
			v.errorf(yamlfile.Index("agent_launch.egress", i), "%v", err)
		}
	}
	paths := func(key string, ps []string, writable bool) {
		for i, p := range ps {
			at := yamlfile.Index("agent_launch."+key, i)
			switch {
			case !filepath.IsAbs(p):
				v.errorf(at, "%q: must be an absolute path", p)
			case filepath.Clean(p) != p:
				v.errorf(at, "%q: not clean (want %q)", p, filepath.Clean(p))
			case p == "/":
				v.errorf(at, "/ is the whole host: name the paths meant")
			case writable && (within("/etc", p) || within("/usr", p)):
				v.errorf(at, "%q: the system's runtime is read-only to the agent", p)
			}
		}
	}
	paths("read_paths", a.ReadPaths, false)
	paths("write_paths", a.WritePaths, true)
	if h := a.Home; h != "" {
		switch {
		case !filepath.IsAbs(h) || filepath.Clean(h) != h:
			v.errorf("agent_launch.home", "%q: want a clean absolute path", h)
		case h == "/":
			v.errorf("agent_launch.home", "/ is not a home")
		}
	}
}

// within reports whether p is root or below it, lexically.
func within(root, p string) bool {
	return p == root || strings.HasPrefix(p, strings.TrimSuffix(root, "/")+"/")
}
