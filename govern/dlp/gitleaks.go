package dlp

import (
	"regexp"
	"strings"
	"sync"
)

// gitleaks' default rule set (MIT) is not loaded at run time: parsing its
// TOML and compiling its ~200 regexps took ~150 ms, which every one-shot
// exec paid. The generator loads it the way gitleaks does and writes the
// rules that can judge output as plain data; TestGeneratedRulesCurrent
// fails when the table and the gitleaks version in go.mod disagree.
//
//go:generate go run ./internal/gengitleaks -o gitleaks_rules.go

// gitleaksRule is one rule of the generated table.
type gitleaksRule struct {
	ID          string
	Description string
	Regex       string
	SecretGroup int
	Entropy     float64
	Keywords    []string
	Allowlists  []gitleaksAllowlist
}

// gitleaksAllowlist is one allowlist of the generated table: the parts of a
// gitleaks allowlist that output can satisfy.
type gitleaksAllowlist struct {
	// And is gitleaks' AND condition: every kind of check the list has
	// must pass. Otherwise one passing check allows.
	And bool
	// RegexTarget is what Regexes test: "" the secret, "match" the
	// rule's whole match, "line" the line.
	RegexTarget string
	Regexes     []string
	// StopWords allow a secret that contains one, ignoring case.
	StopWords []string
}

// gitleaksDetectors returns the generated rules as detectors. Nothing is
// compiled here: a rule's regexps are compiled the first time a line
// holds one of its keywords.
func gitleaksDetectors() []Detector {
	global := make([]*allowlist, len(gitleaksGlobalAllowlists))
	for i := range gitleaksGlobalAllowlists {
		global[i] = &allowlist{spec: &gitleaksGlobalAllowlists[i]}
	}
	out := make([]Detector, len(gitleaksRules))
	for i := range gitleaksRules {
		r := &gitleaksRules[i]
		allow := make([]*allowlist, 0, len(r.Allowlists)+len(global))
		for j := range r.Allowlists {
			allow = append(allow, &allowlist{spec: &r.Allowlists[j]})
		}
		out[i] = Detector{
			Name:        r.ID,
			Description: r.Description,
			Keywords:    r.Keywords,
			Pattern:     r.Regex,
			SecretGroup: r.SecretGroup,
			Entropy:     r.Entropy,
			Source:      SourceGitleaks,
			allow:       append(allow, global...),
		}
	}
	return out
}

// allowlist is a gitleaksAllowlist with its checks compiled on first use.
type allowlist struct {
	spec *gitleaksAllowlist
	once sync.Once
	re   *regexp.Regexp // the Regexes OR-ed, as gitleaks joins them
	stop *stopWords     // nil when there are none
}

func (a *allowlist) compile() {
	a.once.Do(func() {
		if len(a.spec.Regexes) > 0 {
			a.re = mustCompile("(?:" + strings.Join(a.spec.Regexes, "|") + ")")
		}
		if len(a.spec.StopWords) > 0 {
			a.stop = newStopWords(a.spec.StopWords)
		}
	})
}

// allows reports whether the allowlist excuses a match, the way gitleaks
// reads it (Allowlist.RegexAllowed and ContainsStopWord).
func (a *allowlist) allows(secret, match, line string) bool {
	a.compile()
	target := secret
	switch a.spec.RegexTarget {
	case "match":
		target = match
	case "line":
		target = line
	}
	re := func() bool { return a.re != nil && target != "" && a.re.MatchString(target) }
	stop := func() bool { return a.stop != nil && secret != "" && a.stop.in(strings.ToLower(secret)) }
	if a.spec.And {
		return (a.re == nil || re()) && (a.stop == nil || stop())
	}
	return re() || stop()
}

// stopWords finds whether a string contains one of a set of words. It is
// checked only on a match that passed its rule's regexp and entropy, so it
// is built to be cheap to build (gitleaks' generic-api-key rule has ~1500
// stop words) rather than to search: words are indexed by their first two
// bytes, and each position of the string looks up its own two.
type stopWords struct {
	short []string            // words of one byte
	by2   map[uint16][]string // the others, by their first two bytes
}

func newStopWords(words []string) *stopWords {
	w := &stopWords{by2: make(map[uint16][]string, len(words))}
	for _, x := range words {
		if len(x) < 2 {
			w.short = append(w.short, x)
			continue
		}
		k := uint16(x[0])<<8 | uint16(x[1])
		w.by2[k] = append(w.by2[k], x)
	}
	return w
}

// in reports whether s contains one of the words.
func (w *stopWords) in(s string) bool {
	for _, x := range w.short {
		if strings.Contains(s, x) {
			return true
		}
	}
	for i := 0; i+1 < len(s); i++ {
		for _, x := range w.by2[uint16(s[i])<<8|uint16(s[i+1])] {
			if strings.HasPrefix(s[i:], x) {
				return true
			}
		}
	}
	return false
}

// mustCompile compiles a regexp of a detector or an allowlist. They are
// all constants of this package, and TestCompileAll compiles every one:
// a failure is a build defect, not a condition to handle.
func mustCompile(expr string) *regexp.Regexp {
	re, err := regexp.Compile(expr)
	if err != nil {
		panic("dlp: " + err.Error())
	}
	return re
}
