package gitleaksrules

import (
	"bytes"
	"errors"
	"fmt"
	"go/format"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/viper"
	"github.com/zricethezav/gitleaks/v8/config"
)

// Module is the module whose config package holds the rule set.
const Module = "github.com/zricethezav/gitleaks/v8"

// Rule is one gitleaks rule, as plain data.
type Rule struct {
	ID          string
	Description string
	Regex       string // the regexp's source
	SecretGroup int
	Entropy     float64
	Keywords    []string // lower-cased, as gitleaks keeps them
	Allowlists  []Allowlist
}

// Allowlist is one gitleaks allowlist, without its paths and commits:
// output has neither.
type Allowlist struct {
	// And is gitleaks' AND condition: every kind of check the list has
	// must pass. Otherwise one passing check allows.
	And bool
	// RegexTarget is "" (the secret), "match" or "line".
	RegexTarget string
	Regexes     []string // sources, OR-ed together as gitleaks joins them
	StopWords   []string // lower-cased, sorted, distinct
}

// Load reads gitleaks' default rule set (compiled into its config package)
// the way gitleaks itself does, and returns the rules that can judge
// output, in the rule set's order, and the global allowlists.
//
// A rule that also needs a file path (path-only rules, or a regex gated on
// a path such as a kubernetes secret manifest), that is never reported on
// its own (skipReport) or that needs other rules to fire (required) is
// left out rather than run without its gate. An AND allowlist with paths
// or commits can never pass on output, and an allowlist with only paths
// or commits allows nothing there: both are dropped.
func Load() (rules []Rule, global []Allowlist, err error) {
	cfg, err := LoadConfig()
	if err != nil {
		return nil, nil, err
	}
	for _, r := range cfg.GetOrderedRules() {
		if !KeepRule(r) {
			continue
		}
		if len(r.Keywords) == 0 {
			// Every default rule has keywords; one without would run on
			// every line, which the throughput budget cannot afford.
			return nil, nil, fmt.Errorf("gitleaks rule %s has no keywords", r.RuleID)
		}
		rule := Rule{
			ID:          r.RuleID,
			Description: r.Description,
			Regex:       r.Regex.String(),
			SecretGroup: r.SecretGroup,
			Entropy:     r.Entropy,
			Keywords:    slices.Clone(r.Keywords),
		}
		if rule.Allowlists, err = allowlists(r.RuleID, r.Allowlists); err != nil {
			return nil, nil, err
		}
		rules = append(rules, rule)
	}
	if global, err = allowlists("global", cfg.Allowlists); err != nil {
		return nil, nil, err
	}
	return rules, global, nil
}

// LoadConfig reads gitleaks' default rule set the way gitleaks does.
func LoadConfig() (config.Config, error) {
	v := viper.New() // not the global one: other code may use it
	v.SetConfigType("toml")
	if err := v.ReadConfig(strings.NewReader(config.DefaultConfig)); err != nil {
		return config.Config{}, fmt.Errorf("gitleaks default rules: %w", err)
	}
	var vc config.ViperConfig
	if err := v.Unmarshal(&vc); err != nil {
		return config.Config{}, fmt.Errorf("gitleaks default rules: %w", err)
	}
	cfg, err := vc.Translate()
	if err != nil {
		return config.Config{}, fmt.Errorf("gitleaks default rules: %w", err)
	}
	return cfg, nil
}

// KeepRule reports whether a rule can judge output on its own.
func KeepRule(r config.Rule) bool {
	return r.Regex != nil && r.Path == nil && !r.SkipReport && len(r.RequiredRules) == 0
}

// KeepAllowlist reports whether an allowlist can allow anything in output.
func KeepAllowlist(a *config.Allowlist) bool {
	if a.MatchCondition == config.AllowlistMatchAnd && (len(a.Paths) > 0 || len(a.Commits) > 0) {
		return false
	}
	return len(a.Regexes) > 0 || len(a.StopWords) > 0 // else path- or commit-only
}

func allowlists(owner string, in []*config.Allowlist) ([]Allowlist, error) {
	var out []Allowlist
	for _, a := range in {
		if !KeepAllowlist(a) {
			continue
		}
		l := Allowlist{And: a.MatchCondition == config.AllowlistMatchAnd, RegexTarget: a.RegexTarget}
		switch a.RegexTarget {
		case "", "match", "line":
		default:
			return nil, fmt.Errorf("gitleaks %s allowlist: regex target %q", owner, a.RegexTarget)
		}
		for _, re := range a.Regexes {
			l.Regexes = append(l.Regexes, re.String())
		}
		for _, w := range a.StopWords {
			w = strings.ToLower(w) // gitleaks already did; keep it certain
			if w == "" {
				return nil, fmt.Errorf("gitleaks %s allowlist: empty stop word", owner)
			}
			l.StopWords = append(l.StopWords, w)
		}
		// gitleaks keeps its stop words in a map: the order is random.
		slices.Sort(l.StopWords)
		l.StopWords = slices.Compact(l.StopWords)
		out = append(out, l)
	}
	return out, nil
}

// Version returns the version of gitleaks this program was built with.
func Version() (string, error) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "", errors.New("no build info")
	}
	for _, m := range bi.Deps {
		if m.Path == Module {
			if m.Replace != nil {
				m = m.Replace
			}
			return m.Version, nil
		}
	}
	return "", fmt.Errorf("build info does not list %s", Module)
}

// Source returns the Go source of package dlp's gitleaks_rules.go for the
// rules and global allowlists of gitleaks version.
func Source(version string, rules []Rule, global []Allowlist) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by internal/gengitleaks from %s@%s; DO NOT EDIT.\n\n", Module, version)
	b.WriteString("package dlp\n\n")
	b.WriteString("// gitleaksVersion is the version of gitleaks' default rule set below.\n")
	fmt.Fprintf(&b, "const gitleaksVersion = %s\n\n", strconv.Quote(version))
	b.WriteString("// gitleaksRules are the rules of gitleaks' default rule set that can\n")
	b.WriteString("// judge output, in the rule set's order (MIT, Copyright (c) 2019 Zachary Rice).\n")
	b.WriteString("var gitleaksRules = []gitleaksRule{\n")
	for _, r := range rules {
		b.WriteString("{\n")
		fmt.Fprintf(&b, "ID: %s,\n", strconv.Quote(r.ID))
		fmt.Fprintf(&b, "Description: %s,\n", strconv.Quote(r.Description))
		fmt.Fprintf(&b, "Regex: %s,\n", raw(r.Regex))
		if r.SecretGroup != 0 {
			fmt.Fprintf(&b, "SecretGroup: %d,\n", r.SecretGroup)
		}
		if r.Entropy != 0 {
			fmt.Fprintf(&b, "Entropy: %s,\n", strconv.FormatFloat(r.Entropy, 'g', -1, 64))
		}
		fmt.Fprintf(&b, "Keywords: %s,\n", strs(r.Keywords, false))
		if len(r.Allowlists) > 0 {
			fmt.Fprintf(&b, "Allowlists: %s,\n", lists(r.Allowlists))
		}
		b.WriteString("},\n")
	}
	b.WriteString("}\n\n")
	b.WriteString("// gitleaksGlobalAllowlists apply to every rule, after its own.\n")
	fmt.Fprintf(&b, "var gitleaksGlobalAllowlists = %s\n", lists(global))
	src, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("gofmt generated source: %w", err)
	}
	return src, nil
}

func lists(ls []Allowlist) string {
	var b strings.Builder
	b.WriteString("[]gitleaksAllowlist{\n")
	for _, a := range ls {
		b.WriteString("{\n")
		if a.And {
			b.WriteString("And: true,\n")
		}
		if a.RegexTarget != "" {
			fmt.Fprintf(&b, "RegexTarget: %s,\n", strconv.Quote(a.RegexTarget))
		}
		if len(a.Regexes) > 0 {
			fmt.Fprintf(&b, "Regexes: %s,\n", strs(a.Regexes, true))
		}
		if len(a.StopWords) > 0 {
			fmt.Fprintf(&b, "StopWords: %s,\n", strs(a.StopWords, false))
		}
		b.WriteString("},\n")
	}
	b.WriteString("}")
	return b.String()
}

// strs writes a []string literal; long lists get a line per element.
func strs(ss []string, regexps bool) string {
	q := strconv.Quote
	if regexps {
		q = raw
	}
	var b strings.Builder
	b.WriteString("[]string{")
	long := len(ss) > 4
	for i, s := range ss {
		switch {
		case long:
			b.WriteString("\n")
		case i > 0:
			b.WriteString(", ")
		}
		b.WriteString(q(s))
		if long {
			b.WriteString(",")
		}
	}
	if long {
		b.WriteString("\n")
	}
	b.WriteString("}")
	return b.String()
}

// raw writes s as a raw string when it can be one, so that a regexp reads
// as it does in gitleaks.toml.
func raw(s string) string {
	if strconv.CanBackquote(s) && !strings.Contains(s, "\t") {
		return "`" + s + "`"
	}
	return strconv.Quote(s)
}
