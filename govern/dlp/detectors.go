package dlp

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Detector finds one kind of secret by its format. Keywords are a cheap
// pre-filter: the regexp runs only on text that holds one of them.
type Detector struct {
	Name     string
	Keywords []string
	Re       *regexp.Regexp
}

// detectors is the built-in set, named for DLP bindings. Formats follow the
// issuers' published token shapes.
var detectors = []Detector{
	{"aws_access_key_id", []string{"AKIA", "ASIA", "AGPA", "AIDA", "AROA"}, regexp.MustCompile(`\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[A-Z2-7]{16}\b`)},
	{"github_token", []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"}, regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{82})\b`)},
	{"gitlab_token", []string{"glpat-", "glptt-", "gldt-"}, regexp.MustCompile(`\b(?:glpat|glptt|gldt)-[A-Za-z0-9_\-]{20,}`)},
	{"slack_token", []string{"xox"}, regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}`)},
	{"slack_webhook", []string{"hooks.slack.com"}, regexp.MustCompile(`https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9+/_\-]{20,}`)},
	{"stripe_key", []string{"sk_live_", "rk_live_", "sk_test_"}, regexp.MustCompile(`\b[rs]k_(?:live|test)_[A-Za-z0-9]{20,}`)},
	{"google_api_key", []string{"AIza"}, regexp.MustCompile(`\bAIza[0-9A-Za-z_\-]{35}\b`)},
	{"npm_token", []string{"npm_"}, regexp.MustCompile(`\bnpm_[A-Za-z0-9]{36}\b`)},
	{"openai_api_key", []string{"sk-"}, regexp.MustCompile(`\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_\-]{32,}`)},
	{"anthropic_api_key", []string{"sk-ant-"}, regexp.MustCompile(`\bsk-ant-[A-Za-z0-9_\-]{32,}`)},
	{"private_key", []string{"PRIVATE KEY"}, regexp.MustCompile(`-----BEGIN (?:[A-Z0-9]+ )?PRIVATE KEY-----[\s\S]*?(?:-----END (?:[A-Z0-9]+ )?PRIVATE KEY-----|\z)`)},
	{"jwt", []string{"eyJ"}, regexp.MustCompile(`\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{16,}`)},
	{"connection_string_password", []string{"://"}, regexp.MustCompile(`\b(?:postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?|redis|rediss|amqps?|mssql|sqlserver)://[^\s:/@]+:[^\s@/]{3,}@[^\s/]+`)},
}

// DetectorNames lists the built-in detectors.
func DetectorNames() []string {
	out := make([]string, len(detectors))
	for i, d := range detectors {
		out[i] = d.Name
	}
	sort.Strings(out)
	return out
}

// Hit is one detector match. It never carries the matched text: only where
// and what.
type Hit struct {
	Detector string
	Start    int
	End      int
}

// Bindings is a set of detectors selected by name.
type Bindings struct{ ds []Detector }

// Bind selects detectors by name; "all" selects every one. An unknown
// name is an error.
func Bind(names []string) (Bindings, error) {
	var b Bindings
	for _, n := range names {
		if n == "all" {
			return Bindings{ds: detectors}, nil
		}
		found := false
		for _, d := range detectors {
			if d.Name == n {
				b.ds = append(b.ds, d)
				found = true
			}
		}
		if !found {
			return Bindings{}, fmt.Errorf("unknown DLP detector %q (known: %s)", n, strings.Join(DetectorNames(), ", "))
		}
	}
	return b, nil
}

// Scan returns every hit in text, by position.
func (b Bindings) Scan(text string) []Hit {
	var hits []Hit
	for _, d := range b.ds {
		if !containsAny(text, d.Keywords) {
			continue
		}
		for _, m := range d.Re.FindAllStringIndex(text, -1) {
			hits = append(hits, Hit{Detector: d.Name, Start: m[0], End: m[1]})
		}
	}
	sort.Slice(hits, func(i, j int) bool { return hits[i].Start < hits[j].Start })
	return hits
}

// Redact replaces every hit with [REDACTED:dlp:<detector>].
func (b Bindings) Redact(text string) (string, []Hit) {
	hits := b.Scan(text)
	if len(hits) == 0 {
		return text, nil
	}
	var sb strings.Builder
	pos := 0
	for _, h := range hits {
		if h.Start < pos {
			continue
		}
		sb.WriteString(text[pos:h.Start])
		sb.WriteString("[REDACTED:dlp:" + h.Detector + "]")
		pos = h.End
	}
	sb.WriteString(text[pos:])
	return sb.String(), hits
}

func containsAny(s string, keys []string) bool {
	for _, k := range keys {
		if strings.Contains(s, k) {
			return true
		}
	}
	return false
}
