package rules

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/ext"
	"cel.dev/cel-go/interpreter"

	"github.com/mitrity/mitrity/govern"
)

// Stage is the pipeline stage name stamped on the decisions of this package.
const Stage = "policy_rules"

// DefaultCostLimit bounds the work one rule may do on one call. CEL charges
// roughly one unit per operation, so a million is far above any sensible
// rule over a 64 KiB command and far below a stall.
const DefaultCostLimit = 1_000_000

// Rule is one operator-written rule: when the CEL expression When is true,
// Action applies. Name is what the decision and the audit event carry.
type Rule struct {
	Name    string `json:"name" yaml:"name"`
	When    string `json:"when" yaml:"when"`
	Action  string `json:"action" yaml:"action"` // deny | hold | ask | allow
	Message string `json:"message,omitempty" yaml:"message,omitempty"`
}

// Match is one rule that applied to a call. A rule whose evaluation failed
// is a match too: it denies, and Err says why.
type Match struct {
	Rule    string
	Outcome govern.Outcome
	Message string
	Err     error
}

// Set is a compiled list of rules. It is immutable and safe for concurrent
// use.
type Set struct {
	rules []compiled
}

type compiled struct {
	Rule
	outcome govern.Outcome
	prg     cel.Program
}

// Option configures Compile.
type Option func(*options)

type options struct {
	costLimit uint64
}

// WithCostLimit replaces DefaultCostLimit.
func WithCostLimit(n uint64) Option { return func(o *options) { o.costLimit = n } }

// CompileError is one rule that did not compile. Err is the problem on one
// line ("when:1:9: undeclared reference to 'user'"); Line and Column
// locate it inside When (1-based, zero when the problem is not in the
// expression: an unknown action, a duplicate name), so a policy loader can
// point at the exact character in its file; Msg is the message alone.
type CompileError struct {
	Index        int // position in the list given to Compile
	Name         string
	Line, Column int
	Msg          string
	Err          error
}

func (e *CompileError) Error() string {
	name := e.Name
	if name == "" {
		name = "(unnamed)"
	}
	return fmt.Sprintf("rules[%d] %q: %v", e.Index, name, e.Err)
}

func (e *CompileError) Unwrap() error { return e.Err }

// celError turns CEL's issues into one line per rule: every issue, each
// with its line:column inside the expression (CEL's own rendering adds a
// multi-line source excerpt, which does not fit a one-line-per-problem
// report).
func celError(i int, r Rule, iss *cel.Issues) *CompileError {
	ce := &CompileError{Index: i, Name: r.Name}
	var parts []string
	for _, e := range iss.Errors() {
		line, col := e.Location.Line(), e.Location.Column()+1
		if ce.Msg == "" {
			ce.Line, ce.Column, ce.Msg = line, col, e.Message
		}
		parts = append(parts, fmt.Sprintf("when:%d:%d: %s", line, col, e.Message))
	}
	if len(parts) == 0 {
		ce.Msg = iss.String()
		parts = append(parts, "when: "+ce.Msg)
	}
	ce.Err = errors.New(strings.Join(parts, "; "))
	return ce
}

// ParseAction maps a rule's action word to an outcome.
func ParseAction(s string) (govern.Outcome, error) {
	if o, ok := govern.ParseOutcome(s); ok {
		return o, nil
	}
	return 0, fmt.Errorf("action %q is not deny, hold, ask or allow", s)
}

// Compile parses and type-checks every rule against the declared variables
// and functions, so a typo is refused at load rather than denying calls at
// run time. All problems are returned at once (errors.Join of
// *CompileError), one per rule.
func Compile(rules []Rule, opts ...Option) (*Set, error) {
	o := options{costLimit: DefaultCostLimit}
	for _, opt := range opts {
		opt(&o)
	}
	env, err := newEnv()
	if err != nil {
		return nil, fmt.Errorf("rules: building the CEL environment: %w", err)
	}
	var errs []error
	fail := func(i int, r Rule, err error) {
		errs = append(errs, &CompileError{Index: i, Name: r.Name, Msg: err.Error(), Err: err})
	}
	seen := map[string]bool{}
	s := &Set{}
	for i, r := range rules {
		switch {
		case strings.TrimSpace(r.Name) == "":
			fail(i, r, errors.New("name is empty"))
			continue
		case seen[r.Name]:
			fail(i, r, errors.New("another rule has the same name"))
			continue
		case strings.TrimSpace(r.When) == "":
			fail(i, r, errors.New("when is empty"))
			continue
		}
		seen[r.Name] = true
		outcome, err := ParseAction(r.Action)
		if err != nil {
			fail(i, r, err)
			continue
		}
		ast, iss := env.Compile(r.When)
		if iss.Err() != nil {
			errs = append(errs, celError(i, r, iss))
			continue
		}
		if !ast.OutputType().IsExactType(cel.BoolType) {
			fail(i, r, fmt.Errorf("when: must return bool, returns %s", ast.OutputType()))
			continue
		}
		prg, err := env.Program(ast,
			cel.CostLimit(o.costLimit),
			cel.CostTrackerOptions(argvHasCost...),
			cel.OptimizeRegex(interpreter.MatchesRegexOptimization),
			cel.EvalOptions(cel.OptOptimize),
		)
		if err != nil {
			fail(i, r, fmt.Errorf("when: %w", err))
			continue
		}
		s.rules = append(s.rules, compiled{Rule: r, outcome: outcome, prg: prg})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return s, nil
}

// Len is the number of rules.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.rules)
}

// Evaluate runs every rule against in; none is skipped because an earlier
// one matched, so the audit trail shows every rule that applied. The
// strictest outcome wins (deny > hold > ask > allow); among equals the first
// rule in the list decides. No match is an allow with no rule and no reason.
// A rule that fails to evaluate (cost limit, runtime error) denies.
func (s *Set) Evaluate(in Input) (govern.Decision, []Match) {
	d := govern.Decision{Outcome: govern.Allow, Stage: Stage}
	if s.Len() == 0 {
		return d, nil
	}
	act, err := activation(&in)
	if err != nil {
		// Unreachable with the fixed variable set; fail closed anyway.
		return govern.Decision{Outcome: govern.Deny, Reason: govern.ReasonPolicyRule, Stage: Stage,
			Message: fmt.Sprintf("policy rules could not be evaluated: %v", err)}, nil
	}
	var matches []Match
	decided := false
	for _, r := range s.rules {
		m, ok := r.eval(act)
		if !ok {
			continue
		}
		matches = append(matches, m)
		if !decided || m.Outcome > d.Outcome {
			decided = true
			d = govern.Decision{Outcome: m.Outcome, Reason: govern.ReasonPolicyRule, Stage: Stage, Rule: m.Rule, Message: m.Message}
		}
	}
	return d, matches
}

func (r *compiled) eval(act interpreter.Activation) (Match, bool) {
	out, _, err := r.prg.Eval(act)
	if err == nil {
		if b, ok := out.(types.Bool); ok {
			if !b {
				return Match{}, false
			}
			msg := r.Message
			if msg == "" {
				msg = fmt.Sprintf("%s by policy rule %q", pastTense(r.outcome), r.Name)
			}
			return Match{Rule: r.Name, Outcome: r.outcome, Message: msg}, true
		}
		err = fmt.Errorf("returned %s, not bool", out.Type())
	}
	return Match{Rule: r.Name, Outcome: govern.Deny, Err: err,
		Message: fmt.Sprintf("denied: policy rule %q could not be evaluated, and a rule that cannot be evaluated denies: %v", r.Name, err)}, true
}

func pastTense(o govern.Outcome) string {
	switch o {
	case govern.Deny:
		return "denied"
	case govern.Hold:
		return "held for approval"
	case govern.Ask:
		return "sent to the user for confirmation"
	}
	return "allowed"
}

// commandType is the CEL name ext.NativeTypes gives Command: the Go package
// name and the type name.
var (
	commandType = cel.ObjectType("rules.Command")
	pinType     = cel.ObjectType("rules.Pin")
)

func newEnv() (*cel.Env, error) {
	str, strList := cel.StringType, cel.ListType(cel.StringType)
	return cel.NewEnv(
		ext.NativeTypes(ext.ParseStructTags(true), reflect.TypeFor[Command](), reflect.TypeFor[Pin]()),
		cel.Variable("agent", str),
		cel.Variable("tool", str),
		cel.Variable("action", str),
		cel.Variable("surface", str),
		cel.Variable("cwd", str),
		cel.Variable("command", str),
		cel.Variable("commands", cel.ListType(commandType)),
		cel.Variable("reads", strList),
		cel.Variable("writes", strList),
		cel.Variable("flags", strList),
		cel.Variable("opaque", cel.BoolType),
		cel.Variable("pins", cel.ListType(pinType)),
		cel.Variable("network", cel.BoolType),
		cel.Variable("credentials", strList),
		// An upstream MCP tool call: the server, its own tool name and the
		// arguments as data (empty for a shell command).
		cel.Variable("server", str),
		cel.Variable("upstream_tool", str),
		cel.Variable("arguments", cel.MapType(str, cel.DynType)),
		// under needs the call's HOME and cwd, which are not arguments: it is
		// bound per evaluation (see activation).
		cel.Function("under",
			cel.Overload("under_string_string", []*cel.Type{str, str}, cel.BoolType, cel.LateFunctionBinding())),
		cel.Function("argv_has",
			cel.Overload("argv_has_command_string", []*cel.Type{commandType, str}, cel.BoolType,
				cel.BinaryBinding(func(c, flag ref.Val) ref.Val {
					cmd, ok := c.Value().(Command)
					f, ok2 := flag.(types.String)
					if !ok || !ok2 {
						return types.NewErr("argv_has: unexpected argument types %s, %s", c.Type(), flag.Type())
					}
					return types.Bool(argvHas(cmd.Argv, string(f)))
				}))),
		ext.Strings(),
		ext.Sets(),
		ext.TwoVarComprehensions(),
	)
}

// argvHasCost charges argv_has by the length of the argv it scans, so the
// cost limit still bounds a rule that calls it in a loop.
var argvHasCost = []cost.TrackerOption{
	cost.OverloadTracker("argv_has_command_string", func(args []ref.Val, _ ref.Val) *uint64 {
		n := uint64(1)
		if len(args) > 0 {
			if c, ok := args[0].Value().(Command); ok {
				n += uint64(len(c.Argv))
			}
		}
		return &n
	}),
}

// vars resolves the CEL variables straight from an Input: no map is built
// per call.
type vars struct{ in *Input }

func (v vars) ResolveName(name string) (any, bool) {
	in := v.in
	switch name {
	case "agent":
		return in.Agent, true
	case "tool":
		return in.Tool, true
	case "action":
		return in.Action, true
	case "surface":
		return in.Surface, true
	case "cwd":
		return in.Cwd, true
	case "command":
		return in.Command, true
	case "commands":
		return nonNil(in.Commands), true
	case "reads":
		return nonNil(in.Reads), true
	case "writes":
		return nonNil(in.Writes), true
	case "flags":
		return nonNil(in.Flags), true
	case "opaque":
		return in.Opaque, true
	case "pins":
		return nonNil(in.Pins), true
	case "network":
		return in.Network, true
	case "credentials":
		return nonNil(in.Credentials), true
	case "server":
		return in.Server, true
	case "upstream_tool":
		return in.UpstreamTool, true
	case "arguments":
		if in.Arguments == nil {
			return map[string]any{}, true
		}
		return in.Arguments, true
	}
	return nil, false
}

func (vars) Parent() interpreter.Activation { return nil }

func activation(in *Input) (interpreter.Activation, error) {
	home, cwd := in.Home, in.Cwd
	return cel.FunctionVars(vars{in}, map[string]cel.LateBoundFunction{
		"under": func(_ string, args ...ref.Val) ref.Val {
			if len(args) != 2 {
				return types.NewErr("under: want 2 arguments, got %d", len(args))
			}
			p, ok1 := args[0].(types.String)
			dir, ok2 := args[1].(types.String)
			if !ok1 || !ok2 {
				return types.NewErr("under: arguments must be strings")
			}
			return types.Bool(under(string(p), string(dir), home, cwd))
		},
	})
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
