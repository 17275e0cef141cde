package policy

import (
	_ "embed"
	"fmt"
	"github.com/mitrity/mitrity/govern/egress"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/yamlfile"
)

// EmbeddedName stands for the embedded default policy in error messages.
const EmbeddedName = "embedded default policy"

// DefaultProfile is the profile an agent without one gets.
const DefaultProfile = "default"

// Bounds and defaults of a profile, named for docs and tests.
const (
	DefaultExecTimeoutSeconds = 120
	MaxExecTimeoutSeconds     = 3600
	MaxWorkspaceRoots         = 32
	DefaultHoldTimeoutSeconds = 600
	MaxHoldTimeoutSeconds     = 86400
)

//go:embed default.yaml
var defaultYAML []byte

// DefaultYAML is the embedded default policy, byte for byte.
func DefaultYAML() []byte { return append([]byte(nil), defaultYAML...) }

// The wire structs mirror the file; pointers keep "absent" apart from "zero"
// (sandbox_required above all: absent reads as true).

type wirePolicy struct {
	DefaultAgent *wireAgent              `yaml:"default_agent"`
	Agents       map[string]*wireAgent   `yaml:"agents"`
	Profiles     map[string]*wireProfile `yaml:"profiles"`
	ToolPins     map[string]string       `yaml:"tool_pins"`
}

type wireAgent struct {
	Profile      *string   `yaml:"profile"`
	Destinations *[]string `yaml:"destinations"`
	Credentials  *[]string `yaml:"credentials"`
}

type wireProfile struct {
	SandboxRequired       *bool                 `yaml:"sandbox_required"`
	ExecTimeoutSeconds    *int                  `yaml:"exec_timeout_seconds"`
	BuiltinExecRouting    *string               `yaml:"builtin_exec_routing"`
	WorkspaceRoots        *[]string             `yaml:"workspace_roots"`
	ScriptInspectionRoots *[]string             `yaml:"script_inspection_roots"`
	CommandAnalysisMode   *string               `yaml:"command_analysis_mode"`
	OpaqueWithCredentials *string               `yaml:"opaque_with_credentials"`
	ToolPermissions       *[]wireToolPermission `yaml:"tool_permissions"`
	Rules                 *[]wireRule           `yaml:"rules"`
	Injection             *wireInjection        `yaml:"injection"`
	DLP                   *wireDLP              `yaml:"dlp"`
	Hold                  *wireHold             `yaml:"hold"`
	ExtraDenyPaths        *[]string             `yaml:"extra_deny_paths"`
}

type wireToolPermission struct {
	Pattern *string `yaml:"pattern"`
	Action  *string `yaml:"action"`
}

type wireRule struct {
	Name    *string `yaml:"name"`
	When    *string `yaml:"when"`
	Action  *string `yaml:"action"`
	Message *string `yaml:"message"`
}

type wireInjection struct {
	Mode    *string `yaml:"mode"`
	Results *string `yaml:"results"`
}

type wireDLP struct {
	Bindings  *[]string `yaml:"bindings"`
	Arguments *string   `yaml:"arguments"`
}

type wireHold struct {
	TimeoutSeconds *int    `yaml:"timeout_seconds"`
	OnHook         *string `yaml:"on_hook"`
}

// Load reads and validates the policy file at path.
func Load(path string) (*Policy, error) {
	var w wirePolicy
	doc, err := yamlfile.ReadFile(path, &w)
	if err != nil {
		return nil, err
	}
	return build(path, &w, doc)
}

// Parse is Load on data already read; name stands for the file in errors.
func Parse(name string, data []byte) (*Policy, error) {
	var w wirePolicy
	doc, err := yamlfile.Decode(name, data, &w)
	if err != nil {
		return nil, err
	}
	return build(name, &w, doc)
}

// Default is the embedded default policy: every agent gets the default
// profile, no destinations and no credentials. Each call returns a fresh
// copy the caller may change.
func Default() *Policy {
	p, err := Parse(EmbeddedName, defaultYAML)
	if err != nil {
		panic("policy: the embedded default policy is invalid: " + err.Error())
	}
	return p
}

type builder struct {
	doc  *yamlfile.Doc
	errs *yamlfile.Errors
}

func (b *builder) errorf(path, format string, args ...any) {
	b.errs.Add(b.doc.Loc(path).Errorf(format, args...))
}

func (b *builder) keyErrorf(path, format string, args ...any) {
	b.errs.Add(b.doc.KeyLoc(path).Errorf(format, args...))
}

// pinNameRE is a served name: an upstream's name (letters, digits and
// '-', 1 to 32, as the gateway config allows), "__", the tool's name.
var pinNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{0,31}__[A-Za-z0-9_-]+$`)

// maxServedName is the longest tool name model APIs accept.
const maxServedName = 64

// build turns the wire form into a Policy, checking every field as it goes.
func build(name string, w *wirePolicy, doc *yamlfile.Doc) (*Policy, error) {
	b := &builder{doc: doc, errs: &yamlfile.Errors{}}
	p := &Policy{File: name, doc: doc, Agents: map[string]Agent{}, Profiles: map[string]Profile{}}
	for _, n := range slices.Sorted(maps.Keys(w.Profiles)) {
		path := yamlfile.Key("profiles", n)
		if !validName(n, 64) {
			b.keyErrorf(path, "a profile name is 1 to 64 letters, digits, '_', '-' or '.'")
		}
		p.Profiles[n] = b.profile(path, n, w.Profiles[n])
	}
	p.DefaultAgent = b.agent("default_agent", "", w.DefaultAgent, p.Profiles)
	for _, id := range slices.Sorted(maps.Keys(w.Agents)) {
		path := yamlfile.Key("agents", id)
		if !ValidAgentID(id) {
			b.keyErrorf(path, "an agent id is 1 to 128 letters, digits, '_', '-', '.', '@' or ':'")
		}
		p.Agents[id] = b.agent(path, id, w.Agents[id], p.Profiles)
	}
	for _, served := range slices.Sorted(maps.Keys(w.ToolPins)) {
		path := yamlfile.Key("tool_pins", served)
		h := w.ToolPins[served]
		switch {
		// The served name's whole grammar, not only its "__": a pin
		// under a name no tool can be served as ("srv__", "__x", a
		// space) pins nothing, and a host locked down by it would not be.
		case !pinNameRE.MatchString(served) || len(served) > maxServedName || strings.HasPrefix(served, "shell__"):
			b.keyErrorf(path, "want an upstream tool's served name, <server>__<tool> (at most %d letters, digits, '_' and '-', as tools/list shows it)", maxServedName)
		case len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "":
			b.errorf(path, "%q: want the definition's hex SHA-256 (64 lower-case hex digits, as the audit log's tool_definition events show it)", h)
		}
		if p.ToolPins == nil {
			p.ToolPins = map[string]string{}
		}
		p.ToolPins[served] = h
	}
	if err := b.errs.Err(); err != nil {
		return nil, err
	}
	return p, nil
}

func (b *builder) agent(path, id string, w *wireAgent, profiles map[string]Profile) Agent {
	a := Agent{ID: id, Profile: DefaultProfile}
	if w == nil {
		w = &wireAgent{}
	}
	if w.Profile != nil {
		a.Profile = *w.Profile
	}
	if _, ok := profiles[a.Profile]; !ok {
		if w.Profile == nil {
			// Nothing in the file names a profile here: point at where the
			// missing one belongs.
			loc := b.doc.Loc(path + ".profile")
			if loc.Line == 0 {
				at := b.doc.KeyLoc("profiles")
				loc.Line, loc.Col = at.Line, at.Col
			}
			b.errs.Add(loc.Errorf("no profile named, and there is no profile %q to default to", DefaultProfile))
		} else {
			b.errorf(path+".profile", "%q: no such profile under profiles", a.Profile)
		}
	}
	if w.Destinations != nil {
		a.Destinations = make([]string, 0, len(*w.Destinations))
		for i, s := range *w.Destinations {
			// The proxy's own grammar: what validates here is what it
			// enforces.
			e, err := egress.ParseEntry(s)
			if err != nil {
				b.errorf(yamlfile.Index(path+".destinations", i), "%v", err)
				continue
			}
			a.Destinations = append(a.Destinations, e.String())
		}
	}
	if w.Credentials != nil {
		seen := map[string]bool{}
		for i, c := range *w.Credentials {
			p := yamlfile.Index(path+".credentials", i)
			switch {
			case !validCredentialID(c):
				b.errorf(p, "%q: a credential id is 1 to 128 letters, digits, '_', '-' or '.'", c)
			case seen[c]:
				b.errorf(p, "%q: granted twice", c)
			}
			seen[c] = true
			a.Credentials = append(a.Credentials, c)
		}
	}
	return a
}

func (b *builder) profile(path, name string, w *wireProfile) Profile {
	p := Profile{
		Name:                name,
		SandboxRequired:     true, // absent reads as true: isolation is never off by omission
		ExecTimeoutSeconds:  DefaultExecTimeoutSeconds,
		BuiltinExecRouting:  RoutingFramework,
		CommandAnalysisMode: AnalysisEnforce,
		// Absent reads as deny: what the analyzer cannot see is never let
		// through by omission while a credential is in reach.
		OpaqueWithCredentials: OpaqueDeny,
		Injection:             Injection{Mode: InjectionDeny, Results: ResultInjectionDeny},
		DLP:                   DLP{Arguments: DLPArgumentsDeny},
		Hold:                  Hold{TimeoutSeconds: DefaultHoldTimeoutSeconds, OnHook: HookQueue},
	}
	if w == nil {
		return p
	}
	if w.SandboxRequired != nil {
		p.SandboxRequired = *w.SandboxRequired
	}
	if w.ExecTimeoutSeconds != nil {
		p.ExecTimeoutSeconds = *w.ExecTimeoutSeconds
		if t := p.ExecTimeoutSeconds; t < 1 || t > MaxExecTimeoutSeconds {
			b.errorf(path+".exec_timeout_seconds", "%d: must be between 1 and %d", t, MaxExecTimeoutSeconds)
		}
	}
	if w.BuiltinExecRouting != nil {
		p.BuiltinExecRouting = Routing(*w.BuiltinExecRouting)
		if r := p.BuiltinExecRouting; r != RoutingFramework && r != RoutingGovernedShell {
			b.errorf(path+".builtin_exec_routing", "%q: want framework or governed_shell", r)
		}
	}
	if w.WorkspaceRoots != nil {
		p.WorkspaceRoots = WorkspaceRoots(b.roots(path+".workspace_roots", *w.WorkspaceRoots, true))
	}
	if w.ScriptInspectionRoots != nil {
		p.ScriptInspectionRoots = InspectionRoots(b.roots(path+".script_inspection_roots", *w.ScriptInspectionRoots, false))
	}
	if w.CommandAnalysisMode != nil {
		p.CommandAnalysisMode = AnalysisMode(*w.CommandAnalysisMode)
		if m := p.CommandAnalysisMode; m != AnalysisEnforce && m != AnalysisMonitor && m != AnalysisOff {
			b.errorf(path+".command_analysis_mode", "%q: want enforce, monitor or off", m)
		}
	}
	if w.OpaqueWithCredentials != nil {
		p.OpaqueWithCredentials = OpaqueMode(*w.OpaqueWithCredentials)
		if m := p.OpaqueWithCredentials; m != OpaqueDeny && m != OpaqueAllow {
			b.errorf(path+".opaque_with_credentials", "%q: want deny or allow", m)
		}
	}
	if w.ToolPermissions != nil {
		for i, tp := range *w.ToolPermissions {
			p.ToolPermissions = append(p.ToolPermissions, b.toolPermission(yamlfile.Index(path+".tool_permissions", i), tp))
		}
	}
	if w.Rules != nil {
		names := map[string]bool{}
		for i, r := range *w.Rules {
			rule := b.rule(yamlfile.Index(path+".rules", i), r)
			if rule.Name != "" && names[rule.Name] {
				b.errorf(yamlfile.Index(path+".rules", i)+".name", "%q: another rule of this profile has this name", rule.Name)
			}
			names[rule.Name] = true
			p.Rules = append(p.Rules, rule)
		}
	}
	if w.Injection != nil && w.Injection.Results != nil {
		p.Injection.Results = ResultInjection(*w.Injection.Results)
		if m := p.Injection.Results; m != ResultInjectionOff && m != ResultInjectionFlag && m != ResultInjectionDeny {
			b.errorf(path+".injection.results", "%q: want deny, flag or off", m)
		}
	}
	if w.DLP != nil && w.DLP.Arguments != nil {
		p.DLP.Arguments = DLPArguments(*w.DLP.Arguments)
		if m := p.DLP.Arguments; m != DLPArgumentsDeny && m != DLPArgumentsRedact {
			b.errorf(path+".dlp.arguments", "%q: want deny or redact (redact applies to upstream tool calls; a shell command is always refused)", m)
		}
	}
	if w.Injection != nil && w.Injection.Mode != nil {
		p.Injection.Mode = InjectionMode(*w.Injection.Mode)
		if m := p.Injection.Mode; m != InjectionOff && m != InjectionHold && m != InjectionDeny {
			b.errorf(path+".injection.mode", "%q: want off, hold or deny", m)
		}
	}
	if w.DLP != nil && w.DLP.Bindings != nil {
		seen := map[string]bool{}
		for i, d := range *w.DLP.Bindings {
			bp := yamlfile.Index(path+".dlp.bindings", i)
			switch {
			case !validName(d, 128):
				b.errorf(bp, "%q: a detector name is 1 to 128 letters, digits, '_', '-' or '.'", d)
			case seen[d]:
				b.errorf(bp, "%q: listed twice", d)
			}
			seen[d] = true
			p.DLP.Bindings = append(p.DLP.Bindings, d)
		}
	}
	if w.Hold != nil && w.Hold.OnHook != nil {
		p.Hold.OnHook = HookHold(*w.Hold.OnHook)
		if h := p.Hold.OnHook; h != HookQueue && h != HookAsk {
			b.errorf(path+".hold.on_hook", "%q: want queue or ask", h)
		}
	}
	if w.Hold != nil && w.Hold.TimeoutSeconds != nil {
		p.Hold.TimeoutSeconds = *w.Hold.TimeoutSeconds
		if t := p.Hold.TimeoutSeconds; t < 1 || t > MaxHoldTimeoutSeconds {
			b.errorf(path+".hold.timeout_seconds", "%d: must be between 1 and %d", t, MaxHoldTimeoutSeconds)
		}
	}
	if w.ExtraDenyPaths != nil {
		for i, d := range *w.ExtraDenyPaths {
			if !filepath.IsAbs(d) {
				b.errorf(yamlfile.Index(path+".extra_deny_paths", i), "%q: must be an absolute path", d)
				continue
			}
			p.ExtraDenyPaths = append(p.ExtraDenyPaths, filepath.Clean(d))
		}
	}
	return p
}

// roots checks a root list: absolute paths or the workspace placeholder, and
// for writable roots, at most MaxWorkspaceRoots and never "/".
func (b *builder) roots(path string, in []string, writable bool) []string {
	if writable && len(in) > MaxWorkspaceRoots {
		b.errorf(path, "%d roots: at most %d", len(in), MaxWorkspaceRoots)
	}
	out := make([]string, 0, len(in))
	for i, r := range in {
		p := yamlfile.Index(path, i)
		rest, placeholder := strings.CutPrefix(r, WorkspacePlaceholder)
		switch {
		case placeholder && rest != "" && !strings.HasPrefix(rest, "/"):
			b.errorf(p, "%q: %s is followed by '/' or nothing", r, WorkspacePlaceholder)
		case placeholder && slices.Contains(strings.Split(rest, "/"), ".."):
			b.errorf(p, "%q: '..' cannot climb out of %s", r, WorkspacePlaceholder)
		case strings.Contains(rest, "${"):
			b.errorf(p, "%q: the only placeholder is %s, at the start", r, WorkspacePlaceholder)
		case !placeholder && !filepath.IsAbs(r):
			b.errorf(p, "%q: must be an absolute path or start with %s", r, WorkspacePlaceholder)
		case writable && !placeholder && filepath.Clean(r) == "/":
			b.errorf(p, "\"/\": a / workspace root would make the whole host writable")
		default:
			switch {
			case !placeholder:
				out = append(out, filepath.Clean(r))
			case rest == "" || filepath.Clean(rest) == "/":
				out = append(out, WorkspacePlaceholder)
			default:
				out = append(out, WorkspacePlaceholder+filepath.Clean(rest))
			}
		}
	}
	return out
}

func (b *builder) toolPermission(path string, w wireToolPermission) ToolPermission {
	tp := ToolPermission{Where: b.doc.Loc(path)}
	switch {
	case w.Pattern == nil || *w.Pattern == "":
		b.errorf(path+".pattern", "required: an action type such as shell:execute, shell:* or mcp:github__*")
	default:
		tp.Pattern = *w.Pattern
		if msg := patternProblem(tp.Pattern); msg != "" {
			b.errorf(path+".pattern", "%q: %s", tp.Pattern, msg)
		}
	}
	if w.Action == nil {
		b.errorf(path+".action", "required: allow, deny or ask")
		return tp
	}
	// A tool permission cannot hold: holds come from rules and injection.
	if o, ok := govern.ParseOutcome(*w.Action); ok && o != govern.Hold {
		tp.Action = o
	} else {
		b.errorf(path+".action", "%q: want allow, deny or ask", *w.Action)
	}
	return tp
}

// patternProblem: an action type is <kind>:<name>; '*' is the only
// wildcard, so '?' and '[' never mean more than they say.
func patternProblem(p string) string {
	if p == "*" {
		return ""
	}
	kind, name, ok := strings.Cut(p, ":")
	switch {
	case len(p) > 256:
		return "at most 256 characters"
	case !ok || kind == "" || name == "":
		return "want kind:name, e.g. shell:execute, shell:* or mcp:github__*"
	}
	for _, r := range kind {
		if !(r >= 'a' && r <= 'z' || r == '*' || r == '_') {
			return "the kind before ':' is lower-case letters, '_' or '*'"
		}
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-.*:/", r)) {
			return fmt.Sprintf("%q is not allowed; '*' is the only wildcard", r)
		}
	}
	return ""
}

func (b *builder) rule(path string, w wireRule) Rule {
	r := Rule{Where: b.doc.Loc(path + ".when")}
	if w.Name != nil {
		r.Name = *w.Name
	}
	if !validName(r.Name, 128) {
		if r.Name == "" {
			b.errorf(path+".name", "required: names the rule in audit events and denials")
		} else {
			b.errorf(path+".name", "%q: a rule name is 1 to 128 letters, digits, '_', '-' or '.'", r.Name)
		}
	}
	if w.When != nil {
		r.When = *w.When
	}
	if strings.TrimSpace(r.When) == "" {
		b.errorf(path+".when", "required: the CEL condition")
	}
	if w.Message != nil {
		r.Message = *w.Message
	}
	if w.Action == nil {
		b.errorf(path+".action", "required: deny, hold, ask or allow")
		return r
	}
	if o, ok := govern.ParseOutcome(*w.Action); ok {
		r.Action = o
	} else {
		b.errorf(path+".action", "%q: want deny, hold, ask or allow", *w.Action)
	}
	return r
}

// CheckCredentials reports every grant of a credential id that defined says
// does not exist (the gateway passes its config's credentials), each at its
// line: a grant of nothing is a typo the operator should see at boot.
func (p *Policy) CheckCredentials(defined func(id string) bool) error {
	errs := &yamlfile.Errors{}
	check := func(path string, a Agent) {
		for i, c := range a.Credentials {
			if !defined(c) {
				errs.Add(p.doc.Loc(yamlfile.Index(path+".credentials", i)).Errorf("credential %q is not defined in the gateway config", c))
			}
		}
	}
	check("default_agent", p.DefaultAgent)
	for _, id := range slices.Sorted(maps.Keys(p.Agents)) {
		check(yamlfile.Key("agents", id), p.Agents[id])
	}
	return errs.Err()
}

func validName(s string, max int) bool {
	if s == "" || len(s) > max {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}

// validCredentialID is config.ValidCredentialID's grammar; the test keeps
// the two equal without the policy importing the host config.
func validCredentialID(id string) bool { return govern.ValidCredentialID(id) }

// ValidAgentID reports whether id is an agent id: 1 to 128 letters, digits,
// '_', '-', '.', '@' or ':'.
func ValidAgentID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-.@:", r)) {
			return false
		}
	}
	return true
}
