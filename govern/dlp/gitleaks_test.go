package dlp

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/zricethezav/gitleaks/v8/config"
	"gotest.tools/v3/assert"

	"github.com/mitrity/mitrity/govern/dlp/internal/gitleaksrules"
)

const regenerate = "the generated rules are stale: run `go generate ./govern/dlp`"

// TestGeneratedRulesCurrent: gitleaks_rules.go is what the generator
// writes for the gitleaks version in go.mod, so a gitleaks upgrade without
// `go generate ./govern/dlp` fails here.
func TestGeneratedRulesCurrent(t *testing.T) {
	t.Parallel()
	rules, global, err := gitleaksrules.Load()
	assert.NilError(t, err)
	want := make([]gitleaksRule, len(rules))
	for i, r := range rules {
		want[i] = gitleaksRule{
			ID: r.ID, Description: r.Description, Regex: r.Regex, SecretGroup: r.SecretGroup,
			Entropy: r.Entropy, Keywords: r.Keywords, Allowlists: convertAllowlists(r.Allowlists),
		}
	}
	assert.Check(t, cmp.Diff(want, gitleaksRules) == "", "%s (-want +got):\n%s", regenerate, cmp.Diff(want, gitleaksRules))
	assert.Check(t, cmp.Diff(convertAllowlists(global), gitleaksGlobalAllowlists) == "", "%s (-want +got):\n%s",
		regenerate, cmp.Diff(convertAllowlists(global), gitleaksGlobalAllowlists))

	version := requiredVersion(t, "../go.mod", gitleaksrules.Module)
	assert.Check(t, version == gitleaksVersion, "%s: go.mod requires gitleaks %s, the table is from %s", regenerate, version, gitleaksVersion)
	src, err := gitleaksrules.Source(version, rules, global)
	assert.NilError(t, err)
	got, err := os.ReadFile("gitleaks_rules.go")
	assert.NilError(t, err)
	assert.Check(t, string(got) == string(src), regenerate)
}

// requiredVersion returns the version of module that go.mod requires. (A
// test binary's build info does not list its dependencies.)
func requiredVersion(t *testing.T, gomod, module string) string {
	t.Helper()
	data, err := os.ReadFile(gomod)
	assert.NilError(t, err)
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(f) >= 2 && f[0] == module {
			return f[1]
		}
	}
	t.Fatalf("%s does not require %s", gomod, module)
	return ""
}

// TestNoGitleaksAtRunTime: the package (not its tests) links neither
// gitleaks nor viper; only the generator and the tests load the rule set.
func TestNoGitleaksAtRunTime(t *testing.T) {
	t.Parallel()
	deps, err := exec.Command("go", "list", "-deps", ".").Output()
	assert.NilError(t, err)
	for _, dep := range strings.Fields(string(deps)) {
		assert.Check(t, !strings.HasPrefix(dep, gitleaksrules.Module) && !strings.HasPrefix(dep, "github.com/spf13/viper") &&
			!strings.HasPrefix(dep, "github.com/mitrity/mitrity/govern/dlp/internal/"), "govern/dlp depends on %s", dep)
	}
}

func convertAllowlists(in []gitleaksrules.Allowlist) []gitleaksAllowlist {
	var out []gitleaksAllowlist
	for _, a := range in {
		out = append(out, gitleaksAllowlist{And: a.And, RegexTarget: a.RegexTarget, Regexes: a.Regexes, StopWords: a.StopWords})
	}
	return out
}

// TestCompileAll: every detector's regexps, prefilters and allowlists
// compile. They are compiled on first need, where a failure would be a
// panic; this is where it fails instead.
func TestCompileAll(t *testing.T) {
	t.Parallel()
	c := mustCatalog()
	for _, d := range c.ds {
		for _, p := range []string{d.Pattern, d.EndPattern} {
			if p != "" {
				_, err := regexp.Compile(p)
				assert.Check(t, err, d.Name)
			}
		}
		for _, a := range d.allow {
			if len(a.spec.Regexes) > 0 {
				_, err := regexp.Compile("(?:" + strings.Join(a.spec.Regexes, "|") + ")")
				assert.Check(t, err, "%s: allowlist", d.Name)
			}
		}
	}
	if t.Failed() {
		return
	}
	for _, d := range c.ds {
		cd := d.compiled()
		assert.Check(t, d.SecretGroup <= cd.re.NumSubexp(), "%s: secret group %d of %d", d.Name, d.SecretGroup, cd.re.NumSubexp())
		assert.Check(t, (cd.end != nil) == d.block(), d.Name)
		for _, a := range d.allow {
			a.compile()
		}
	}
}

// TestAllowlistsAsGitleaks: the allowlists of the generated table allow
// exactly what gitleaks' own allowlists allow: on what each rule matches
// in its fixtures, on every fixture line, and on stop words and
// placeholders.
func TestAllowlistsAsGitleaks(t *testing.T) {
	t.Parallel()
	cfg, err := gitleaksrules.LoadConfig()
	assert.NilError(t, err)
	type probe struct{ secret, match, line string }
	var lines []string
	byRule := map[string][]string{} // a rule's fixtures
	for _, fx := range readFixtures(t) {
		in, _, _ := unmark(fx.text, fx.label)
		lines = append(lines, in)
		byRule[fx.binding] = append(byRule[fx.binding], in)
	}
	var common []probe
	for _, s := range append(slices.Clone(lines), "${TOKEN}", "true", "null", "xxxxxx", "{{ secrets.TOKEN }}", "%API_KEY%", "/usr/local/bin/x", "") {
		common = append(common, probe{s, "token=" + s, "export token=" + s})
	}
	// Each allowlist once, with the rules it belongs to.
	type pair struct {
		theirs *config.Allowlist
		rules  []*config.Rule
	}
	pairs := map[*allowlist]*pair{}
	var order []*allowlist
	c := mustCatalog()
	for _, r := range cfg.GetOrderedRules() {
		if !gitleaksrules.KeepRule(r) {
			continue
		}
		var theirs []*config.Allowlist
		for _, a := range append(slices.Clone(r.Allowlists), cfg.Allowlists...) {
			if gitleaksrules.KeepAllowlist(a) {
				theirs = append(theirs, a)
			}
		}
		ix := slices.IndexFunc(c.ds, func(d *Detector) bool { return d.Name == r.RuleID && d.Source == SourceGitleaks })
		assert.Assert(t, ix >= 0, r.RuleID)
		d := c.ds[ix]
		assert.Assert(t, len(d.allow) == len(theirs), r.RuleID)
		for i, a := range d.allow {
			p := pairs[a]
			if p == nil {
				p = &pair{theirs: theirs[i]}
				pairs[a] = p
				order = append(order, a)
			}
			assert.Assert(t, p.theirs == theirs[i], "%s: allowlist %d", r.RuleID, i)
			p.rules = append(p.rules, &r)
		}
	}
	checked := 0
	for _, a := range order {
		p := pairs[a]
		probes := slices.Clone(common)
		for _, w := range p.theirs.StopWords {
			for _, s := range []string{w, strings.ToUpper(w), "Zx9q" + w + "8w7e"} {
				probes = append(probes, probe{s, "key=" + s, "export key=" + s})
			}
		}
		for _, r := range p.rules {
			d := &Detector{SecretGroup: r.SecretGroup}
			for _, line := range byRule[r.RuleID] {
				for _, loc := range r.Regex.FindAllStringSubmatchIndex(line, -1) {
					if s, e, _ := d.secret(loc); s >= 0 && e > s {
						probes = append(probes, probe{line[s:e], line[loc[0]:loc[1]], line})
					}
				}
			}
		}
		for _, pr := range probes {
			want := gitleaksAllowed([]*config.Allowlist{p.theirs}, pr.secret, pr.match, pr.line)
			assert.Check(t, a.allows(pr.secret, pr.match, pr.line) == want, "%s on %+v: gitleaks says %v", p.rules[0].RuleID, pr, want)
			checked++
		}
	}
	t.Logf("%d allowlists, %d probes", len(order), checked)
}

// gitleaksAllowed is how dlp read gitleaks' allowlists when it loaded
// them at run time: the reference for the generated ones.
func gitleaksAllowed(allow []*config.Allowlist, secret, match, line string) bool {
	for _, a := range allow {
		target := secret
		switch a.RegexTarget {
		case "match":
			target = match
		case "line":
			target = line
		}
		re := a.RegexAllowed(target)
		stop, _ := a.ContainsStopWord(secret)
		if a.MatchCondition == config.AllowlistMatchAnd {
			if (len(a.Regexes) == 0 || re) && (len(a.StopWords) == 0 || stop) {
				return true
			}
			continue
		}
		if re || stop {
			return true
		}
	}
	return false
}

func TestStopWords(t *testing.T) {
	t.Parallel()
	w := newStopWords([]string{"x", "abc", "abd", "zz"})
	for _, tc := range []struct {
		s    string
		want bool
	}{
		{"", false}, {"a", false}, {"ab", false}, {"abc", true}, {"qqabd", true}, {"abzz", true},
		{"x", true}, {"qxq", true}, {"ab-c", false}, {"z", false},
	} {
		assert.Check(t, w.in(tc.s) == tc.want, "%q", tc.s)
	}
	assert.Check(t, !newStopWords([]string{"ab"}).in("b"))
}
