// Package pipeline decides one call: the stages run in the spec's order —
// the call's own arguments, tool permission, injection, threat intel, command analysis, policy
// rules, hold, DLP on arguments, credential brokering — and any of them can
// stop it with a machine-readable reason. There is no ML stage: the
// product has none, and a stage that always allows would be a check that
// cannot fail.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/config"
	"github.com/mitrity/mitrity/govern/dlp"
	"github.com/mitrity/mitrity/govern/hold"
	"github.com/mitrity/mitrity/govern/inject"
	"github.com/mitrity/mitrity/govern/intel"
	"github.com/mitrity/mitrity/govern/policy"
	"github.com/mitrity/mitrity/govern/rules"
	"github.com/mitrity/mitrity/govern/shell"
	"github.com/mitrity/mitrity/govern/yamlfile"
)

// Intel is the threat-intel check the pipeline needs: matches for the
// judged text, the hosts it names and the pinned scripts' hashes, each a
// short description.
type Intel interface {
	Match(text string, hosts, hashes []string) []string
}

// Pipeline holds what the stages consult. Build it with New; it is safe for
// concurrent use.
type Pipeline struct {
	cfg    *config.Config
	pol    *policy.Policy
	rules  map[string]*rules.Set // per profile name
	dlp    map[string]dlp.Bindings
	holds  *hold.Queue
	intel  Intel // nil: no feed configured
	stages []stage
	// Home is the HOME commands run with (the executor sets it).
	home string
}

// Option configures a Pipeline.
type Option func(*Pipeline)

// WithIntel adds a threat-intel feed.
func WithIntel(i Intel) Option { return func(p *Pipeline) { p.intel = i } }

// WithHolds sets the approval queue held calls wait in.
func WithHolds(q *hold.Queue) Option { return func(p *Pipeline) { p.holds = q } }

// New compiles every profile's rules and DLP bindings: a policy that does
// not compile is refused here, at load, not call by call.
func New(cfg *config.Config, pol *policy.Policy, home string, opts ...Option) (*Pipeline, error) {
	p := &Pipeline{cfg: cfg, pol: pol, rules: map[string]*rules.Set{}, dlp: map[string]dlp.Bindings{}, holds: hold.New(), home: home}
	for _, o := range opts {
		o(p)
	}
	// A grant of a credential the gateway does not define is a policy
	// error, named at its line, not a denial at run time.
	if err := pol.CheckCredentials(func(id string) bool { _, ok := cfg.Credentials[id]; return ok }); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(pol.Profiles))
	for name := range pol.Profiles {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		prof := pol.Profiles[name]
		var rs []rules.Rule
		for _, r := range prof.Rules {
			rs = append(rs, rules.Rule{Name: r.Name, When: r.When, Action: r.Action.String(), Message: r.Message})
		}
		set, err := rules.Compile(rs)
		if err != nil {
			return nil, positioned(prof, err)
		}
		p.rules[name] = set
		b, err := dlp.Bind(prof.DLP.Bindings)
		if err != nil {
			return nil, fmt.Errorf("profile %s: dlp: %w", name, err)
		}
		p.dlp[name] = b
	}
	p.stages = []stage{
		{"arguments", arguments},
		{"tool_permission", toolPermission},
		{"injection", injection},
		{"threat_intel", threatIntel},
		{"command_analysis", commandAnalysis},
		{"policy_rules", policyRules},
		{"hold", holdStage},
		{"dlp_arguments", dlpArguments},
		{"credentials", credentials},
		{"sandbox", sandboxStage},
	}
	return p, nil
}

// Policy is the policy the pipeline decides under.
func (p *Pipeline) Policy() *policy.Policy { return p.pol }

// Bindings are a profile's compiled DLP detectors.
func (p *Pipeline) Bindings(profile string) dlp.Bindings { return p.dlp[profile] }

// Permits reports whether agent's tool permissions let it call a tool of
// actionType at all (allow or ask): what tools/list shows it, so that the
// list and the tool_permission stage never disagree.
func (p *Pipeline) Permits(agent, actionType string) bool {
	_, prof := p.pol.ForAgent(agent)
	if prof.Name == "" {
		return false
	}
	st := &State{Call: govern.Call{Agent: agent, ActionType: actionType}, Profile: prof}
	if toolPermission(context.Background(), p, st).Outcome == govern.Deny {
		return false
	}
	// An upstream whose credentials the agent holds no grant for refuses
	// every call of it (credential_not_granted): its tools are not listed.
	if rest, ok := strings.CutPrefix(actionType, govern.ActionMCPPrefix); ok {
		server, _, _ := strings.Cut(rest, "__")
		a, _ := p.pol.ForAgent(agent)
		return p.missingGrant(a, server) == ""
	}
	return true
}

// Holds is the approval queue (the gateway serves it on its admin socket).
func (p *Pipeline) Holds() *hold.Queue { return p.holds }

// State is everything the stages learned about one call.
type State struct {
	Call    govern.Call
	Agent   policy.Agent
	Profile policy.Profile
	// Cwd is the resolved working directory; WorkspaceRoots and
	// InspectionRoots the profile's, resolved against exec.default_cwd.
	Cwd             string
	WorkspaceRoots  []string
	InspectionRoots []string
	Timeout         time.Duration
	Analysis        *shell.Analysis
	// Pending is the strictest hold or ask any stage asked for; the hold
	// stage enacts it.
	Pending govern.Decision
	// Findings are what the stages saw, for the audit event.
	Injection   []inject.Finding
	IntelHits   []string
	RuleHits    []rules.Match
	DLPHits     []dlp.Hit
	WouldDeny   []govern.Decision // monitor mode
	HoldVerdict *hold.Verdict
	// Deferred is set when a hold or ask on a hook surface is left to the
	// framework's own prompt: Decide then returns Ask.
	Deferred bool
	// Credentials are the credential ids the execution injects:
	// CredentialEnv maps variable -> id, CredentialFiles file -> id.
	CredentialEnv   map[string]string
	CredentialFiles map[string]string
	// Env is the constructed environment the command runs with (set by
	// the credentials stage; credentials are in CredentialEnv, never here).
	Env map[string]string
	// Host is what the caller told Decide of the host.
	Host Host
	// ArgumentCredentials are the credential ids an upstream tool call's
	// arguments reference (substituted when the call is forwarded).
	ArgumentCredentials []string
	// texts are what judgedTexts found, once per call.
	texts []string
	// RedactedArguments, when set, are the arguments to forward instead
	// of the call's (dlp.arguments: redact), ArgumentsRedacted the
	// secrets taken out.
	RedactedArguments []byte
	ArgumentsRedacted int
}

// Host is what a decision needs to know of the host it would run on.
type Host struct {
	// SandboxAvailable is whether the kernel sandbox can be used; when it
	// cannot, SandboxReason says why (the probe's reason and remedy).
	SandboxAvailable bool
	SandboxReason    string
}

// sandboxStage: a profile that requires a sandbox is refused on a host
// without one.
func sandboxStage(_ context.Context, _ *Pipeline, st *State) govern.Decision {
	if !st.Call.IsShell() {
		return allow // an upstream's sandbox is its entry's, chosen when it starts
	}
	if st.Call.Surface == govern.SurfaceAgentHook && st.Profile.BuiltinExecRouting != policy.RoutingGovernedShell {
		// The framework runs it, outside any sandbox of ours: not ours
		// to require (the audit event vouches for no sandbox).
		return allow
	}
	return SandboxDecision(st.Profile, st.Host)
}

// SandboxDecision is the sandbox stage's rule, for the caller that must
// apply it again at the moment a decided call starts (a ticket redeemed
// after the sandbox went away): sandbox_unavailable when prof requires a
// sandbox and h has none, else allow.
func SandboxDecision(prof policy.Profile, h Host) govern.Decision {
	if h.SandboxAvailable || !prof.SandboxRequired {
		return allow
	}
	return deny("sandbox", govern.ReasonSandboxUnavailable,
		"no sandbox backend is available on this host ("+h.SandboxReason+") and the policy requires one (sandbox_required: true); nothing ran")
}

type stage struct {
	name string
	run  func(ctx context.Context, p *Pipeline, st *State) govern.Decision
}

// Decide runs every stage in order. A Deny stops the call; the returned
// decision is the final one (Allow when every stage let it through). host
// is what the caller knows of the host the call would run on.
func (p *Pipeline) Decide(ctx context.Context, call govern.Call, host Host) (*State, govern.Decision) {
	agent, prof := p.pol.ForAgent(call.Agent)
	st := &State{Call: call, Agent: agent, Profile: prof, Host: host}
	if prof.Name == "" {
		return st, deny("policy", govern.ReasonToolPermission, fmt.Sprintf("agent %q has no profile in the policy", call.Agent))
	}
	for _, s := range p.stages {
		d := s.run(ctx, p, st)
		if d.Stage == "" {
			d.Stage = s.name
		}
		switch d.Outcome {
		case govern.Deny:
			return st, d
		case govern.Hold, govern.Ask:
			if d.Outcome > st.Pending.Outcome {
				st.Pending = d
			}
		}
	}
	if st.Deferred {
		d := st.Pending
		d.Outcome = govern.Ask
		return st, d
	}
	return st, govern.Decision{Outcome: govern.Allow}
}

// positioned names each rule that failed to compile at its line in the
// policy file.
func positioned(prof policy.Profile, err error) error {
	errs := &yamlfile.Errors{}
	var joined interface{ Unwrap() []error }
	list := []error{err}
	if errors.As(err, &joined) {
		list = joined.Unwrap()
	}
	for _, e := range list {
		var ce *rules.CompileError
		if errors.As(e, &ce) && ce.Index < len(prof.Rules) {
			errs.Add(prof.Rules[ce.Index].Where.Errorf("rule %q: %v", ce.Name, ce.Err))
			continue
		}
		return fmt.Errorf("profile %s: %w", prof.Name, err)
	}
	return errs
}

func deny(stage string, reason govern.Reason, msg string) govern.Decision {
	return govern.Decision{Outcome: govern.Deny, Reason: reason, Stage: stage, Message: msg}
}

var allow = govern.Decision{Outcome: govern.Allow}

// toolPermission: the first tool_permissions entry whose pattern matches
// the action type decides; none matching allows.
func toolPermission(_ context.Context, _ *Pipeline, st *State) govern.Decision {
	for _, tp := range st.Profile.ToolPermissions {
		if !tp.Matches(st.Call.ActionType) {
			continue
		}
		switch tp.Action {
		case govern.Deny:
			return deny("tool_permission", govern.ReasonToolPermission,
				fmt.Sprintf("profile %s does not permit %s (tool_permissions: %s)", st.Profile.Name, st.Call.ActionType, tp.Pattern))
		case govern.Ask:
			return govern.Decision{Outcome: govern.Ask, Reason: govern.ReasonToolPermission,
				Message: fmt.Sprintf("profile %s asks before %s (tool_permissions: %s)", st.Profile.Name, st.Call.ActionType, tp.Pattern)}
		}
		return allow
	}
	return allow
}

// injection scans the command, the env values and stdin.
func injection(_ context.Context, _ *Pipeline, st *State) govern.Decision {
	if st.Profile.Injection.Mode == policy.InjectionOff {
		return allow
	}
	for _, t := range st.judgedTexts() {
		st.Injection = append(st.Injection, inject.Scan(t)...)
	}
	if len(st.Injection) == 0 {
		return allow
	}
	f := st.Injection[0]
	msg := fmt.Sprintf("the call looks like a prompt injection (%s: %s); it was not run", f.Kind, f.Detail)
	if st.Profile.Injection.Mode == policy.InjectionHold {
		return govern.Decision{Outcome: govern.Hold, Reason: govern.ReasonPromptInjection, Message: msg + " until a person approves it"}
	}
	return deny("injection", govern.ReasonPromptInjection, msg)
}

// threatIntel runs after the analysis is needed for hosts and hashes, so
// it analyses lazily; see commandAnalysis for the analysis itself.
func threatIntel(ctx context.Context, p *Pipeline, st *State) govern.Decision {
	if p.intel == nil {
		return allow
	}
	if !st.Call.IsShell() {
		texts := st.judgedTexts()
		st.IntelHits = p.intel.Match(strings.Join(texts, "\n"), argumentHosts(texts), nil)
		if len(st.IntelHits) > 0 {
			return deny("threat_intel", govern.ReasonThreatIntel, "the call's arguments match the threat-intel feed: "+strings.Join(st.IntelHits, "; "))
		}
		return allow
	}
	a := p.analyse(st)
	if a == nil || a.Denial != nil && (a.Denial.Reason == govern.ReasonParseError || a.Denial.Reason == govern.ReasonInvalidInput) {
		return allow // not judged: command analysis reports it next
	}
	var hashes []string
	for _, pin := range a.Pins {
		hashes = append(hashes, pin.SHA256)
	}
	st.IntelHits = p.intel.Match(a.Text, intel.HostsFrom(a), hashes)
	if len(st.IntelHits) > 0 {
		return deny("threat_intel", govern.ReasonThreatIntel, "the command matches the threat-intel feed: "+strings.Join(st.IntelHits, "; "))
	}
	return allow
}

// commandAnalysis is mandatory for shell:execute; its denials
// (credential_in_argv, parse_error, invalid_input, cwd_outside_workspace)
// are hard. The one knob is the profile's opaque_with_credentials: it
// decides whether code the analyzer cannot see through, in a run that
// carries a credential, is denied (credential_in_argv) or allowed and
// flagged; a credential seen on a command line is denied either way.
func commandAnalysis(_ context.Context, p *Pipeline, st *State) govern.Decision {
	if !st.Call.IsShell() {
		return allow // no shell text to analyse
	}
	if st.Profile.CommandAnalysisMode == policy.AnalysisOff {
		return deny("command_analysis", govern.ReasonCommandAnalysisOff,
			"the governed shell needs command analysis, and profile "+st.Profile.Name+" turns it off (command_analysis_mode: off)")
	}
	if d, ok := p.resolveCwd(st); !ok {
		return d
	}
	a := p.analyse(st)
	if a.Denial != nil {
		return govern.Decision{Outcome: govern.Deny, Reason: a.Denial.Reason, Stage: "command_analysis", Message: a.Denial.Message}
	}
	return allow
}

// resolveCwd resolves the call's cwd against exec.default_cwd; after
// symlinks it must be a directory inside a workspace root.
func (p *Pipeline) resolveCwd(st *State) (govern.Decision, bool) {
	if st.Cwd != "" {
		return allow, true
	}
	def := p.cfg.Exec.DefaultCwd
	st.WorkspaceRoots = st.Profile.WorkspaceRoots.Resolve(def)
	st.InspectionRoots = st.Profile.ScriptInspectionRoots.Resolve(def)
	cwd := st.Call.Cwd
	if cwd == "" {
		cwd = def
	} else if !filepath.IsAbs(cwd) {
		cwd = filepath.Join(def, cwd)
	}
	real, err := filepath.EvalSymlinks(cwd)
	if err != nil {
		return deny("command_analysis", govern.ReasonCwdOutsideWorkspace, fmt.Sprintf("cwd %s: %v", cwd, err)), false
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return deny("command_analysis", govern.ReasonCwdOutsideWorkspace, fmt.Sprintf("cwd %s is not a directory", cwd)), false
	}
	for _, root := range st.WorkspaceRoots {
		rr, err := filepath.EvalSymlinks(root)
		if err != nil {
			continue
		}
		if rel, err := filepath.Rel(rr, real); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			st.Cwd = real
			return allow, true
		}
	}
	return deny("command_analysis", govern.ReasonCwdOutsideWorkspace,
		fmt.Sprintf("cwd %s resolves to %s, which is outside every workspace root (%s); use a directory inside one", cwd, real, strings.Join(st.WorkspaceRoots, ", "))), false
}

// analyse runs the analyzer once per call.
func (p *Pipeline) analyse(st *State) *shell.Analysis {
	if st.Analysis != nil {
		return st.Analysis
	}
	if _, ok := p.resolveCwd(st); !ok {
		return nil
	}
	credVars := slices.Sorted(mapsKeys(p.cfg.Exec.Credentials.Env))
	st.Analysis = shell.Analyze(shell.Input{
		Text:            st.Call.Command,
		Dialect:         shell.Dialect(p.cfg.Exec.Dialect()),
		Cwd:             st.Cwd,
		Path:            filepath.SplitList(DefaultPath),
		Home:            p.home,
		InspectionRoots: st.InspectionRoots,
		WritableRoots:   st.WorkspaceRoots,
		CredentialVars:  credVars,
		CredentialDir:   govern.CredentialDir,
		Stdin:           st.Call.Stdin,
		Env:             st.Call.Env,
		// A run that carries a credential has what the analyzer cannot
		// see through denied, unless the profile allows it.
		CredentialsInjected:        p.injects(st.Agent),
		AllowOpaqueWithCredentials: st.Profile.OpaqueWithCredentials == policy.OpaqueAllow,
	})
	return st.Analysis
}

// injects reports whether an execution by agent carries an operator-mapped
// credential: an exec.credentials env or file mapping of an id it holds.
// (The ids a call names itself are the analyzer's to see.)
func (p *Pipeline) injects(agent policy.Agent) bool {
	for _, id := range agent.Credentials {
		for _, ref := range p.cfg.Exec.Credentials.Env {
			if ref.ID() == id {
				return true
			}
		}
		for _, ref := range p.cfg.Exec.Credentials.Files {
			if ref.ID() == id {
				return true
			}
		}
	}
	return false
}

// DefaultPath is the PATH commands run with.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// policyRules evaluates every rule of the profile. In monitor mode their
// holds and denials are recorded as would_deny and the call goes on.
func policyRules(_ context.Context, p *Pipeline, st *State) govern.Decision {
	in := rules.InputFrom(st.Call, st.Analysis)
	if !st.Call.IsShell() {
		in.Command = ""
	}
	in.Cwd = st.Cwd
	in.Home = p.home
	d, matches := p.rules[st.Profile.Name].Evaluate(in)
	st.RuleHits = matches
	d.Stage = "policy_rules"
	if st.Profile.CommandAnalysisMode == policy.AnalysisMonitor && d.Outcome != govern.Allow {
		st.WouldDeny = append(st.WouldDeny, d)
		return allow
	}
	return d
}

// holdStage enacts the strictest hold or ask an earlier stage asked for:
// the call waits in the approval queue until a person answers or the
// profile's hold timeout expires (a denial).
func holdStage(ctx context.Context, p *Pipeline, st *State) govern.Decision {
	if st.Pending.Outcome != govern.Hold && st.Pending.Outcome != govern.Ask {
		return allow
	}
	// On a hook surface an ask, and a hold under hold.on_hook: ask, go
	// to the person at the framework's own prompt instead of the queue.
	if st.Call.Surface == govern.SurfaceAgentHook && (st.Pending.Outcome == govern.Ask || st.Profile.Hold.OnHook == policy.HookAsk) {
		st.Deferred = true
		return allow
	}
	timeout := time.Duration(st.Profile.Hold.TimeoutSeconds) * time.Second
	pend := hold.Pending{
		Agent: st.Call.Agent, Command: holdText(st.Call), Cwd: st.Cwd,
		Rule: st.Pending.Rule, Reason: string(st.Pending.Reason), Message: st.Pending.Message,
	}
	if !st.Call.IsShell() {
		pend.Arguments = string(st.Call.Arguments)
	}
	v := p.holds.Wait(ctx, pend, timeout)
	st.HoldVerdict = &v
	switch {
	case v.Outcome == govern.Allow:
		return allow
	case v.Expired:
		return deny("hold", govern.ReasonHoldExpired, fmt.Sprintf("held (%s) and not approved within %s; it did not run", st.Pending.Message, timeout))
	default:
		return deny("hold", govern.ReasonHoldDenied, fmt.Sprintf("held (%s) and denied by %s; it did not run", st.Pending.Message, v.By))
	}
}

// dlpArguments runs the agent's DLP bindings over the command, env values
// and stdin: a secret written into the arguments is refused.
func dlpArguments(_ context.Context, p *Pipeline, st *State) govern.Decision {
	b := p.dlp[st.Profile.Name]
	for _, t := range st.judgedTexts() {
		st.DLPHits = append(st.DLPHits, b.Scan(t)...)
	}
	if len(st.DLPHits) == 0 {
		return allow
	}
	if !st.Call.IsShell() {
		return upstreamDLP(b, st)
	}
	return deny("dlp_arguments", govern.ReasonDLPArgument,
		fmt.Sprintf("the call's arguments contain a secret (%s); reference a granted credential as ${credential:<id>} instead of writing its value", st.DLPHits[0].Detector))
}

// credentials checks grants: every credential the call references must be
// configured and granted to the agent (a denial names the id, never a
// value). Operator mappings apply only for granted credentials. Values are
// fetched later, at execution.
func credentials(_ context.Context, p *Pipeline, st *State) govern.Decision {
	granted := map[string]bool{}
	for _, id := range st.Agent.Credentials {
		granted[id] = true
	}
	if !st.Call.IsShell() {
		return upstreamCredentials(p, st, granted)
	}
	st.CredentialEnv, st.CredentialFiles = map[string]string{}, map[string]string{}
	var refs []string
	if st.Analysis != nil {
		refs = append(refs, st.Analysis.Credentials...)
	}
	for _, k := range sortedKeys(st.Call.Env) {
		_, ids := shell.RewriteCredentials(st.Call.Env[k])
		refs = append(refs, ids...)
	}
	for _, id := range refs {
		if _, ok := p.cfg.Credentials[id]; !ok {
			return deny("credentials", govern.ReasonCredentialNotGranted, fmt.Sprintf("credential %s is not configured on this gateway", id))
		}
		if !granted[id] {
			return deny("credentials", govern.ReasonCredentialNotGranted, fmt.Sprintf("agent %s holds no grant for credential %s", st.Call.Agent, id))
		}
		st.CredentialEnv[shell.CredentialVar(id)] = id
	}
	for name, ref := range p.cfg.Exec.Credentials.Env {
		if id := ref.ID(); granted[id] {
			st.CredentialEnv[name] = id
		}
	}
	for name, ref := range p.cfg.Exec.Credentials.Files {
		if id := ref.ID(); granted[id] {
			st.CredentialFiles[name] = id
		}
	}
	if st.Analysis != nil {
		st.Env = p.environment(st)
	}
	return allow
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(mapsKeys(m))
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}
