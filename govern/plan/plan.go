// Package plan holds the execution plan: everything the executor needs to
// run one judged command, fixed at decision time. A Plan is immutable: it is
// built once by New and read through methods that return copies, so nothing
// between the decision and the execution can change what runs.
package plan

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/shell"
)

// Spec is what New needs to build a plan.
type Spec struct {
	// Argv, when set, is a program the plan runs instead of a shell text:
	// an upstream MCP server the gateway launches (Shell, Dialect and
	// Command are then empty). Argv[0] is absolute.
	Argv    []string
	Shell   string // absolute path of bash or sh
	Dialect shell.Dialect
	// Command is the judged text (after ${credential:<id>} rewriting) and
	// CommandSHA256 its hash, both from the analysis.
	Command       string
	CommandSHA256 string
	Cwd           string // resolved, inside a workspace root
	// WorkspaceRoots are the only host paths writable inside the sandbox.
	WorkspaceRoots []string
	Timeout        time.Duration
	// Env is the constructed environment without credentials.
	Env map[string]string
	// CredentialEnv maps an environment variable to the credential id whose
	// value it receives; CredentialFiles maps a file name under the
	// credential directory to a credential id.
	CredentialEnv   map[string]string
	CredentialFiles map[string]string
	CredentialDir   string
	Pins            []govern.Pin
	// DenyPaths are unreadable inside the sandbox on top of the mandatory
	// deny set and the gateway's own files: the profile's extra_deny_paths.
	DenyPaths       []string
	Stdin           []byte
	Egress          []string // the destination allowlist
	SandboxRequired bool
	OutputMaxBytes  int64
	// RunAs is the unprivileged user the command runs as when the gateway
	// runs as root; nil runs it as the gateway's own user.
	RunAs *User
}

// User is a uid and gid to run as.
type User struct {
	UID, GID uint32
	Name     string
}

// Plan is one immutable execution plan.
type Plan struct{ s Spec }

// New validates spec and returns the plan built from private copies of it.
func New(spec Spec) (*Plan, error) {
	program := len(spec.Argv) > 0
	if program && (!filepath.IsAbs(spec.Argv[0]) || spec.Shell != "" || spec.Command != "") {
		return nil, fmt.Errorf("plan: a program plan needs an absolute argv[0] (%q) and no shell text", spec.Argv[0])
	}
	switch {
	case !program && !filepath.IsAbs(spec.Shell):
		return nil, fmt.Errorf("plan: shell %q is not absolute", spec.Shell)
	case !program && spec.Dialect != shell.DialectBash && spec.Dialect != shell.DialectSh:
		return nil, fmt.Errorf("plan: dialect %q", spec.Dialect)
	case !program && spec.CommandSHA256 == "":
		return nil, fmt.Errorf("plan: no command hash")
	case !filepath.IsAbs(spec.Cwd):
		return nil, fmt.Errorf("plan: cwd %q is not absolute", spec.Cwd)
	case spec.Timeout <= 0:
		return nil, fmt.Errorf("plan: timeout %v", spec.Timeout)
	case spec.OutputMaxBytes <= 0:
		return nil, fmt.Errorf("plan: output cap %d", spec.OutputMaxBytes)
	case (len(spec.CredentialFiles) > 0) && !filepath.IsAbs(spec.CredentialDir):
		return nil, fmt.Errorf("plan: credential files need an absolute credential directory")
	}
	for name := range spec.CredentialFiles {
		if name == "" || filepath.Base(name) != name || name == "." || name == ".." {
			return nil, fmt.Errorf("plan: credential file name %q", name)
		}
	}
	c := spec
	c.Argv = slices.Clone(spec.Argv)
	c.WorkspaceRoots = slices.Clone(spec.WorkspaceRoots)
	c.Env = maps.Clone(spec.Env)
	c.CredentialEnv = maps.Clone(spec.CredentialEnv)
	c.CredentialFiles = maps.Clone(spec.CredentialFiles)
	c.Pins = make([]govern.Pin, len(spec.Pins))
	for i, p := range spec.Pins {
		p.Bytes = slices.Clone(p.Bytes)
		c.Pins[i] = p
	}
	c.Stdin = slices.Clone(spec.Stdin)
	c.DenyPaths = slices.Clone(spec.DenyPaths)
	for _, d := range c.DenyPaths {
		if !filepath.IsAbs(d) {
			return nil, fmt.Errorf("plan: deny path %q is not absolute", d)
		}
	}
	c.Egress = slices.Clone(spec.Egress)
	if spec.RunAs != nil {
		if spec.RunAs.UID == 0 {
			return nil, fmt.Errorf("plan: commands never run as root (run_as %s has uid 0)", spec.RunAs.Name)
		}
		u := *spec.RunAs
		c.RunAs = &u
	}
	return &Plan{s: c}, nil
}

func (p *Plan) Shell() string            { return p.s.Shell }
func (p *Plan) Argv() []string           { return slices.Clone(p.s.Argv) }
func (p *Plan) Dialect() shell.Dialect   { return p.s.Dialect }
func (p *Plan) Command() string          { return p.s.Command }
func (p *Plan) CommandSHA256() string    { return p.s.CommandSHA256 }
func (p *Plan) Cwd() string              { return p.s.Cwd }
func (p *Plan) WorkspaceRoots() []string { return slices.Clone(p.s.WorkspaceRoots) }
func (p *Plan) Timeout() time.Duration   { return p.s.Timeout }
func (p *Plan) Env() map[string]string   { return maps.Clone(p.s.Env) }
func (p *Plan) CredentialEnv() map[string]string {
	return maps.Clone(p.s.CredentialEnv)
}
func (p *Plan) CredentialFiles() map[string]string { return maps.Clone(p.s.CredentialFiles) }
func (p *Plan) CredentialDir() string              { return p.s.CredentialDir }
func (p *Plan) Stdin() []byte                      { return slices.Clone(p.s.Stdin) }
func (p *Plan) DenyPaths() []string                { return slices.Clone(p.s.DenyPaths) }
func (p *Plan) Egress() []string                   { return slices.Clone(p.s.Egress) }
func (p *Plan) SandboxRequired() bool              { return p.s.SandboxRequired }
func (p *Plan) OutputMaxBytes() int64              { return p.s.OutputMaxBytes }

// RunAs is the user the command runs as; nil for the gateway's own user.
func (p *Plan) RunAs() *User {
	if p.s.RunAs == nil {
		return nil
	}
	u := *p.s.RunAs
	return &u
}

// Pins returns copies of the pinned scripts, bytes included.
func (p *Plan) Pins() []govern.Pin {
	out := make([]govern.Pin, len(p.s.Pins))
	for i, pin := range p.s.Pins {
		pin.Bytes = slices.Clone(pin.Bytes)
		out[i] = pin
	}
	return out
}

// CredentialIDs lists every credential id the plan injects, sorted.
func (p *Plan) CredentialIDs() []string {
	seen := map[string]bool{}
	for _, id := range p.s.CredentialEnv {
		seen[id] = true
	}
	for _, id := range p.s.CredentialFiles {
		seen[id] = true
	}
	ids := make([]string, 0, len(seen))
	for id := range seen {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Hash is the SHA-256 the plan is known by (tickets bind to it): the
// command hash, cwd and every pinned script's hash.
func (p *Plan) Hash() string {
	b, _ := json.Marshal(struct {
		Cmd, Cwd string
		Pins     []string
		Timeout  time.Duration
	}{p.s.CommandSHA256, p.s.Cwd, pinHashes(p.s.Pins), p.s.Timeout})
	return sha256Hex(b)
}

func pinHashes(pins []govern.Pin) []string {
	out := make([]string, len(pins))
	for i, p := range pins {
		out[i] = p.Path + "@" + p.SHA256
	}
	return out
}
