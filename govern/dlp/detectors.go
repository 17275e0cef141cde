package dlp

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// Detector finds one kind of secret by its format.
type Detector struct {
	// Name is the word in [REDACTED:dlp:<name>] and in a Hit: a built-in
	// name (aws_access_key_id) or a gitleaks rule id (aws-access-token).
	Name string
	// Keywords are a cheap pre-filter, matched without regard to case:
	// Pattern runs only on a line that holds one of them.
	Keywords []string
	// Pattern is the regexp (RE2 syntax) that finds the secret within one
	// line. For a block detector (EndPattern set) it finds the block's
	// opening marker. It is compiled the first time a line holds one of
	// the keywords.
	Pattern string
	// SecretGroup is the submatch that is the secret; 0 means the first
	// non-empty submatch, or the whole match when Pattern has none.
	SecretGroup int
	// Entropy, when positive, is the Shannon entropy in bits per character
	// that the secret must exceed: it screens out placeholders.
	Entropy float64
	// EndPattern makes this a block detector: a hit runs from Pattern's
	// match to the end of EndPattern's first match after it, across lines,
	// and is cut at MaxBlockBytes. A block whose end never comes is
	// redacted to the end of the text (or the cap): fail closed.
	EndPattern string
	// Description says what the detector finds.
	Description string
	// Source is SourceMitrity or SourceGitleaks.
	Source string

	// allow are gitleaks allowlists (the rule's, then the global ones): a
	// match one of them allows is not a hit.
	allow []*allowlist
	// lazy holds what is compiled on first need; copies share it.
	lazy *compiledDetector
}

// compiledDetector is a Detector's compiled regexps and prefilters.
type compiledDetector struct {
	once    sync.Once
	re, end *regexp.Regexp
	pre     prefilters // fast necessary conditions for a match of re
}

// compiles counts detector compilations, for tests.
var compiles atomic.Int64

// compiled returns d's regexps and prefilters, compiling them on first
// use. Compiling ~200 regexps and their prefilters costs more than a
// one-shot command's whole run, and most detectors never see their
// keyword, so nothing is compiled before a line needs it.
func (d *Detector) compiled() *compiledDetector {
	c := d.lazy
	c.once.Do(func() {
		compiles.Add(1)
		c.re = mustCompile(d.Pattern)
		if d.EndPattern != "" {
			c.end = mustCompile(d.EndPattern)
			return
		}
		c.pre = newPrefilters(c.re.String(), d.Keywords)
	})
	return c
}

// block reports whether d is a block detector.
func (d *Detector) block() bool { return d.EndPattern != "" }

// Detector sources.
const (
	SourceMitrity  = "mitrity"
	SourceGitleaks = "gitleaks"
)

// builtins are the hand-written detectors. Their names predate the
// gitleaks rules and stay valid in policies; formats follow the issuers'
// published token shapes.
func builtins() []Detector {
	d := func(name, desc string, kw []string, re string) Detector {
		return Detector{Name: name, Description: desc, Keywords: kw, Pattern: re, Source: SourceMitrity}
	}
	pk := d("private_key", "PEM or OpenSSH private key block, to its END line", []string{"private key"},
		`-----BEGIN[ A-Z0-9_-]{0,40}PRIVATE KEY(?: BLOCK)?-----`)
	pk.EndPattern = `-----END[ A-Z0-9_-]{0,40}PRIVATE KEY(?: BLOCK)?-----`
	azure := d("azure_storage_key", "Azure storage account key or Service Bus/Event Hubs shared access key in a connection string",
		[]string{"accountkey=", "sharedaccesskey="}, `\b(?:AccountKey|SharedAccessKey)=([A-Za-z0-9+/]{42,86}={0,2})`)
	azure.SecretGroup = 1
	// Bot API URLs put the token right after "bot": /bot<token>/getMe.
	telegram := d("telegram_bot_token", "Telegram bot token", []string{":AA"},
		`(?:\b|\bbot)([0-9]{8,10}:AA[0-9A-Za-z_\-]{33})\b`)
	telegram.SecretGroup = 1
	return []Detector{
		d("aws_access_key_id", "AWS access key id", []string{"AKIA", "ASIA", "AGPA", "AIDA", "AROA"},
			`\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[A-Z2-7]{16}\b`),
		d("github_token", "GitHub personal, OAuth, app and fine-grained tokens", []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"},
			`\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{82})\b`),
		d("gitlab_token", "GitLab personal, pipeline trigger and deploy tokens", []string{"glpat-", "glptt-", "gldt-"},
			`\b(?:glpat|glptt|gldt)-[A-Za-z0-9_\-]{20,}`),
		d("slack_token", "Slack bot, user and app tokens", []string{"xox"},
			`\bxox[abposr]-[A-Za-z0-9-]{10,}`),
		d("slack_webhook", "Slack incoming webhook URL", []string{"hooks.slack.com"},
			`https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9+/_\-]{20,}`),
		d("stripe_key", "Stripe secret and restricted keys", []string{"sk_live_", "rk_live_", "sk_test_"},
			`\b[rs]k_(?:live|test)_[A-Za-z0-9]{20,}`),
		d("google_api_key", "Google API key", []string{"AIza"},
			`\bAIza[0-9A-Za-z_\-]{35}\b`),
		d("npm_token", "npm access token", []string{"npm_"},
			`\bnpm_[A-Za-z0-9]{36}\b`),
		// Anthropic's keys also fit OpenAI's shape: the specific one goes
		// first, as a tie goes to the earlier detector.
		d("anthropic_api_key", "Anthropic API key", []string{"sk-ant-"},
			`\bsk-ant-[A-Za-z0-9_\-]{32,}`),
		d("openai_api_key", "OpenAI API key", []string{"sk-"},
			`\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_\-]{32,}`),
		pk,
		d("jwt", "JSON Web Token", []string{"eyJ"},
			`\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{16,}`),
		// The scheme names, not "://", are the keywords: URLs are everywhere
		// in build output, database URLs are not.
		d("connection_string_password", "database or broker URL with a password", []string{"postgres", "mysql", "mariadb", "mongodb", "redis", "amqp", "mssql", "sqlserver"},
			`\b(?:postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?|redis|rediss|amqps?|mssql|sqlserver)://[^\s:/@]+:[^\s@/]{3,}@[^\s/]+`),
		d("circleci_token", "CircleCI personal and project API tokens", []string{"ccipat_", "cciprj_"},
			`\bCCI(?:PAT|PRJ)_[A-Za-z0-9]{20,}_[0-9a-f]{40}\b`),
		d("discord_webhook", "Discord webhook URL", []string{"/api/webhooks/"},
			`https://(?:(?:canary|ptb)\.)?discord(?:app)?\.com/api/webhooks/[0-9]{17,20}/[A-Za-z0-9_\-]{60,68}`),
		telegram,
		azure,
	}
}

// groups widen a built-in name to the gitleaks rules for the same issuer,
// so a policy that names the kind gets every format gitleaks knows for it.
var groups = map[string][]string{
	"aws_access_key_id": {"aws-access-token"},
	"github_token":      {"github-pat", "github-oauth", "github-app-token", "github-refresh-token", "github-fine-grained-pat"},
	"gitlab_token": {"gitlab-pat", "gitlab-pat-routable", "gitlab-ptt", "gitlab-deploy-token", "gitlab-rrt", "gitlab-cicd-job-token",
		"gitlab-feed-token", "gitlab-incoming-mail-token", "gitlab-kubernetes-agent-token", "gitlab-oauth-app-secret",
		"gitlab-runner-authentication-token", "gitlab-runner-authentication-token-routable", "gitlab-scim-token",
		"gitlab-session-cookie", "gitlab-feature-flag-client-token"},
	"slack_token": {"slack-bot-token", "slack-user-token", "slack-app-token", "slack-config-access-token", "slack-config-refresh-token",
		"slack-legacy-bot-token", "slack-legacy-token", "slack-legacy-workspace-token"},
	"slack_webhook":     {"slack-webhook-url"},
	"stripe_key":        {"stripe-access-token"},
	"google_api_key":    {"gcp-api-key"},
	"npm_token":         {"npm-access-token"},
	"openai_api_key":    {"openai-api-key"},
	"anthropic_api_key": {"anthropic-api-key", "anthropic-admin-api-key"},
	"private_key":       {"private-key"},
	"jwt":               {"jwt", "jwt-base64"},
}

// catalog is every detector, built-ins first (they win a tie), and what
// each binding name selects.
type catalog struct {
	ds    []*Detector
	names map[string][]int // binding name -> indexes into ds
	hit   []string         // sorted distinct detector names
}

var (
	catalogOnce sync.Once
	catalogVal  *catalog
	catalogErr  error
)

func loadCatalog() (*catalog, error) {
	catalogOnce.Do(func() { catalogVal, catalogErr = buildCatalog() })
	return catalogVal, catalogErr
}

func buildCatalog() (*catalog, error) {
	// Every one-shot exec builds this: few allocations, nothing compiled.
	builtin := builtins()
	all := append(builtin, gitleaksDetectors()...)
	lazy := make([]compiledDetector, len(all))
	one := make([]int, len(all)) // backs the one-detector name lists
	c := &catalog{
		ds:    make([]*Detector, len(all)),
		names: make(map[string][]int, len(all)+1),
		hit:   make([]string, 0, len(all)),
	}
	byID := make(map[string]int, len(all)-len(builtin))
	for i := range all {
		d := &all[i]
		d.lazy = &lazy[i]
		c.ds[i] = d
		if i >= len(builtin) {
			byID[d.Name] = i
		}
		if ix, clash := c.names[d.Name]; clash {
			// gitleaks "jwt" against the built-in "jwt": one name, both
			// patterns, one label.
			c.names[d.Name] = append(ix, i)
			continue
		}
		one[i] = i
		c.names[d.Name] = one[i : i+1 : i+1] // an append copies
		c.hit = append(c.hit, d.Name)
	}
	for name, ids := range groups {
		for _, id := range ids {
			i, ok := byID[id]
			if !ok {
				return nil, fmt.Errorf("dlp: group %s names gitleaks rule %q, which the default rule set does not have", name, id)
			}
			if !slices.Contains(c.names[name], i) {
				c.names[name] = append(c.names[name], i)
			}
		}
	}
	// gitleaks' private-key rule sees one line; the block detector sees a
	// key printed over many, so naming either selects both.
	c.names["private-key"] = append(c.names["private-key"], c.names["private_key"][0])
	sort.Strings(c.hit)
	for _, ix := range c.names {
		slices.Sort(ix)
	}
	return c, nil
}

func mustCatalog() *catalog {
	c, err := loadCatalog()
	if err != nil {
		// The rule set is compiled in: a failure is a build defect that
		// every test shows, not a runtime condition.
		panic(err)
	}
	return c
}

// DetectorNames lists every name a hit can carry: the built-in detectors
// and the gitleaks rule ids, sorted.
func DetectorNames() []string { return slices.Clone(mustCatalog().hit) }

// BindingNames lists every name Bind accepts besides "all": the detector
// names and the built-in names that also select gitleaks rules.
func BindingNames() []string {
	c := mustCatalog()
	out := make([]string, 0, len(c.names))
	for n := range c.names {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Detectors returns the detectors a binding name selects, built-ins first.
func Detectors(name string) ([]Detector, error) {
	c, err := loadCatalog()
	if err != nil {
		return nil, err
	}
	var ix []int
	if name == "all" {
		for i := range c.ds {
			ix = append(ix, i)
		}
	} else if ix = c.names[name]; ix == nil {
		return nil, unknown(name)
	}
	out := make([]Detector, len(ix))
	for i, j := range ix {
		out[i] = *c.ds[j]
	}
	return out, nil
}

func unknown(name string) error {
	return fmt.Errorf("unknown DLP detector %q (known: all, the built-in names %s, or a gitleaks rule id such as aws-access-token; see docs/dlp.md)",
		name, strings.Join(builtinNames(), ", "))
}

// BuiltinNames lists the built-in detectors' names (the table of
// docs/dlp.md): bound, each also selects the gitleaks rules for its
// issuer.
func BuiltinNames() []string { return builtinNames() }

func builtinNames() []string {
	var out []string
	for _, d := range builtins() {
		out = append(out, d.Name)
	}
	return out
}

// Hit is one detector match. It never carries the matched text: only where
// and what.
type Hit struct {
	Detector string
	Start    int
	End      int
}

// Bindings is a set of detectors selected by name. The zero value selects
// none: Scan finds nothing and Redact returns its input.
type Bindings struct{ m *matcher }

// Bind selects detectors by name; "all" selects every one. An unknown
// name is an error.
func Bind(names []string) (Bindings, error) {
	c, err := loadCatalog()
	if err != nil {
		return Bindings{}, err
	}
	var sel []int
	for _, n := range names {
		if n == "all" {
			for i := range c.ds {
				sel = append(sel, i)
			}
			continue // the other names are still checked
		}
		ix, ok := c.names[n]
		if !ok {
			return Bindings{}, unknown(n)
		}
		sel = append(sel, ix...)
	}
	if len(sel) == 0 {
		return Bindings{}, nil
	}
	slices.Sort(sel)
	sel = slices.Compact(sel)
	m, err := compiled(c, sel)
	if err != nil {
		return Bindings{}, err
	}
	return Bindings{m: m}, nil
}

// Names returns the names of the bound detectors, in priority order.
func (b Bindings) Names() []string {
	if b.m == nil {
		return nil
	}
	out := make([]string, len(b.m.ds))
	for i, d := range b.m.ds {
		out[i] = d.Name
	}
	return out
}

// Scan returns the hits in text by position: the spans Redact replaces.
// Overlapping matches resolve to the leftmost, then the longest, then the
// built-in detector.
func (b Bindings) Scan(text string) []Hit {
	if b.m == nil || text == "" {
		return nil
	}
	var hits []Hit
	b.m.oneShot(func(sc *scratch) {
		b.m.advance([]byte(text), true, sc, func(_ []byte, h *Hit) {
			if h != nil {
				hits = append(hits, *h)
			}
		})
	})
	return hits
}

// Redact replaces every hit with [REDACTED:dlp:<detector>] and returns
// the hits it replaced.
func (b Bindings) Redact(text string) (string, []Hit) {
	if b.m == nil || text == "" {
		return text, nil
	}
	var hits []Hit
	var sb strings.Builder
	b.m.oneShot(func(sc *scratch) {
		b.m.advance([]byte(text), true, sc, func(verbatim []byte, h *Hit) {
			if h == nil {
				if sb.Len() == 0 && len(hits) == 0 {
					return // nothing replaced yet: text is the answer so far
				}
				sb.Write(verbatim)
				return
			}
			if len(hits) == 0 {
				// The first hit: what came before it is verbatim.
				sb.Grow(len(text))
				sb.Write([]byte(text[:h.Start]))
			}
			hits = append(hits, *h)
			sb.WriteString(marker(h.Detector))
		})
	})
	if len(hits) == 0 {
		return text, nil
	}
	return sb.String(), hits
}

func marker(detector string) string { return "[REDACTED:dlp:" + detector + "]" }

// Marker is what replaces a hit of the named detector:
// [REDACTED:dlp:<detector>].
func Marker(detector string) string { return marker(detector) }
