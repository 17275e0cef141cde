package inject

import (
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Every pattern runs on the lowered fold text (see folded), so it is
// written in lower case and needs no Unicode classes.
//
// Go's regexp has no DFA: one pass of a pattern full of alternations and
// \b over a megabyte of stdin takes tens of milliseconds, and there are
// twenty patterns. Each pattern therefore names anchors, literals at least
// one of which every match contains, and runs only on windows around the
// anchors it finds (strings.Index is memchr-fast). Ordinary text has few
// anchors, so a clean megabyte costs little more than the fold.

// pattern is a regexp with the literals that gate it.
type pattern struct {
	re      func() *regexp.Regexp
	anchors []string
	// prefix, when set, is a pattern whose every match starts at one of
	// its anchors, preceded by a byte prefix accepts (or by nothing). It is
	// then tried, anchored, at those positions only: an attempt dies within
	// a few bytes, which keeps a megabyte full of anchor words cheap.
	prefix   func(prev byte) bool
	anchored func() *regexp.Regexp
}

// compiled is expr's regexp, compiled at its first use: compiling every
// pattern costs a few milliseconds, and most processes (a one-shot
// `mitrity-gateway exec`, the hook) never scan text at all.
func compiled(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// rx is a pattern tried on windows around its anchors.
func rx(expr string, anchors ...string) pattern {
	return pattern{re: compiled(expr), anchors: anchors}
}

// word is a pattern whose matches start with one of its anchor words.
func word(expr string, anchors ...string) pattern {
	return at(expr, func(c byte) bool { return !isWordByte(c) }, anchors...)
}

// at is a pattern whose matches start with one of its anchors, preceded by
// a byte prefix accepts.
func at(expr string, prefix func(byte) bool, anchors ...string) pattern {
	p := rx(expr, anchors...)
	p.prefix = prefix
	p.anchored = compiled(`^(?:` + expr + `)`)
	return p
}

func anyByte(byte) bool { return true }

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c >= 0x80
}

// detector is one family of patterns with the kind it reports.
type detector struct {
	kind Kind
	what string // the noun the Detail starts with
	pattern
	// keep, when set, vets a match (text is the whole lowered layer, m the
	// match indexes); it is where context that RE2 cannot express (no
	// look-behind) is checked.
	keep func(text string, m []int) bool
}

// Role and delimiter markers: the tokens chat formats use to separate the
// system prompt from the user's turn. Text that carries them is trying to
// start a new turn inside a tool result.
var roleMarkers = []detector{
	{KindRoleMarker, "chat template token", rx(`<\|[a-z_]{2,32}\|>`, "<|"), nil},
	{KindRoleMarker, "instruction delimiter", rx(`\[/?inst\]|<</?sys>>|</?(?:start|end)_of_turn>`, "inst]", "sys>>", "_of_turn>"), nil},
	{KindRoleMarker, "role header", roleHeader, nil},
	{KindRoleMarker, "role tag", rx(`</(?:system|system_prompt|instructions|important)>|<(?:system_prompt|important)>`,
		"</system", "</instructions>", "important>", "<system_prompt>"), notXMLElement},
	{KindRoleMarker, "turn prefix", rx(`(?m)(?:^|\\n)[ \t]*(?:human|assistant)[ \t]*:[ \t]*\S`, "human", "assistant"), nil},
	{KindRoleMarker, "agent context tag", rx(`</?system-reminder>|</(?:user_query|user_input|user_message|tool_result|function_results|tool_output)>`,
		"system-reminder>", "</user_", "</tool_", "</function_results>"), nil},
	{KindRoleMarker, "system code fence", rx("```[ \\t]*(?:system|instructions)\\b", "```"), nil},
}

// roleHeader is "### System:" and the like, at a line start or after a
// space or a quote (echo "### System: ...").
var roleHeader = func() pattern {
	p := word(`#{2,}[ \t]*(?:system|instructions?|assistant|human|developer)[ \t]*:`, "##")
	p.prefix = func(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\'' || c == '"' || c == '`' }
	return p
}()

// Instruction overrides: the phrases that ask a model to drop what it was
// told. Each needs the words that make it about instructions, so "ignore
// case", "forget the last commit", "ignore everything before the first _"
// or "override previous CSS rules" stay clean.
var overrides = []detector{
	{KindOverride, "instruction override", word(
		`(?:ignore|disregard|forget|overlook)[\s,]+(?:(?:all|any|every|each|of|the|my|these|those|and|or)[\s,]+)*`+
			`(?:(?:previous|previously|prior|above|earlier|preceding|foregoing|former|original|initial|system|developer|safety|your)[\s,]+)+`+
			`(?:(?:and|or|all|any|the|given|stated|provided|following|subsequent)[\s,]+)*`+
			`(?:instructions?|prompts?|directions|directives|guidelines|guidance|rules|constraints|restrictions|guardrails|programming|orders)\b`,
		"ignore", "disregard", "forget", "overlook"), nil},
	{KindOverride, "instruction override", word(
		`(?:ignore|disregard|forget|overlook)\s+(?:all\s+|any\s+)?(?:of\s+)?(?:the|these|those|your|my|all)\s+`+
			`(?:instructions?|prompts?|directions|directives|guidelines|guidance|rules|programming)\s+`+
			`(?:(?:above|before|earlier)(?:\s*(?:[.,;:!"')]|$)|\s+(?:and|instead)\b)|given\s+(?:above|before|earlier|to\s+you)|you\s+(?:were|have\s+been|'ve\s+been)\s+given)|`+
			`(?:ignore|disregard|forget|overlook)\s+(?:all\s+)?(?:of\s+)?your\s+(?:instructions|prompts?|directives|guidelines|guidance|rules|programming)\b|`+
			`(?:stop|quit|cease)\s+(?:following|obeying)\s+(?:your|the|all|any|previous|prior)\s+(?:[a-z]+\s+)?(?:instructions|rules|guidelines|directives|prompts?|programming)\b`,
		"ignore", "disregard", "forget", "overlook", "stop", "quit", "cease"), nil},
	{KindOverride, "instruction override", word(
		`(?:override|bypass)\s+(?:all\s+|any\s+|the\s+)?(?:previous|prior|above|your|original|system)\s+(?:instructions?|prompts?|directives|guardrails|safety\s+guidelines)\b`,
		"override", "bypass"), nil},
	{KindOverride, "instruction override", word(
		`(?:ignore|disregard|forget)[\s,]+(?:all[\s,]+|about[\s,]+)?(?:everything|all(?:\s+of)?\s+the)[\s,]+`+
			`(?:(?:above|before\s+this(?:\s+(?:line|message|point))?)(?:\s*(?:[.,;:!"']|$)|\s+and\b)|you\s+(?:were|have\s+been|'ve\s+been)\s+told\b)`,
		"ignore", "disregard", "forget"), nil},
	{KindOverride, "role reassignment", word(
		`you\s+are\s+now\s+(?:dan|jailbroken|unrestricted|unfiltered|uncensored|evil|in\s+(?:developer|dan|god|jailbreak)\s+mode)\b|`+
			`you\s+are\s+now\s+(?:a|an|my|acting\s+as|operating\s+as)\s+(?:[a-z-]+\s+){0,2}?(?:assistant|ai|model|bot|hacker|character|persona|agent)\b|`+
			`you\s+are\s+(?:now\s+)?no\s+longer\s+(?:bound|restricted|limited|constrained|an?\s+ai|required\s+to\s+follow|subject\s+to)\b`,
		"you"), nil},
	{KindOverride, "role reassignment", word(
		`from\s+now\s+on,?\s+you\s+(?:will|must|shall|are\s+going\s+to)\s+(?:act|behave|respond|pretend|roleplay|obey|only\s+respond|be\s+(?:a|an|my))\b|`+
			`(?:i\s+want\s+you\s+to|you\s+will|you\s+must)\s+(?:act|pretend\s+to\s+be|roleplay)\s+as\s+(?:a|an|my)\b`,
		"from", "i want", "you"), nil},
	{KindOverride, "new task", word(`your\s+(?:new|real|actual|true|only)\s+(?:task|goal|objective|instructions?|mission|purpose)\s+(?:is|are)\s+(?:to|now)\b`, "your"), nil},
	{KindOverride, "message to the model", word(
		`(?:note|message|instructions?|attention|notice)\s+(?:to|for)\s+(?:the\s+|any\s+|all\s+)?(?:ai|llms?|assistants?|agents?|models?|claude|chatgpt|gpt|copilot|cursor|gemini)\b\s*:|`+
			`if\s+you\s+are\s+(?:an?\s+)?(?:ai|llm|large\s+language\s+model|language\s+model|ai\s+assistant|ai\s+agent|coding\s+agent)\b|`+
			`the\s+user\s+(?:has\s+)?(?:already\s+)?(?:authorized|authorised|approved|permitted|allowed|granted)\s+(?:you|this|the\s+(?:agent|assistant|ai))\b|`+
			`(?:system|admin|root)\s+override\s*:`,
		"note", "message", "instruction", "attention", "notice", "if", "the", "system", "admin", "root"), nil},
	{KindOverride, "new instructions", word(`(?:new|updated|real|actual|revised|true)\s+(?:system\s+)?(?:instructions?|prompt)\s*:`,
		"new", "updated", "real", "actual", "revised", "true"), nil},
	{KindOverride, "system prompt request", word(
		`(?:reveal|leak|recite|repeat)\s+(?:me\s+)?(?:your|the)\s+(?:(?:full|entire|complete|original|initial|hidden|secret|exact)\s+)*`+
			`(?:system\s+prompt|system\s+message|initial\s+instructions|hidden\s+instructions)|`+
			`(?:print|show|output|display|dump|tell\s+me|give\s+me|share|expose|write\s+out|what\s+is|what's)\s+(?:me\s+)?your\s+`+
			`(?:(?:full|entire|complete|original|initial|hidden|secret|exact)\s+)*(?:system\s+prompt|system\s+message|initial\s+instructions|hidden\s+instructions)`,
		"reveal", "leak", "recite", "repeat", "print", "show", "output", "display", "dump", "tell", "give", "share", "expose", "write", "what"), nil},
	{KindOverride, "system prompt override", word(
		`(?:ignore|disregard|forget|bypass)\s+(?:your|the|all)\s+(?:previous\s+|original\s+)?system\s+prompts?\b|`+
			`(?:override|overwrite)\s+your\s+system\s+prompt\b|system\s+prompt\s*:`,
		"ignore", "disregard", "forget", "bypass", "override", "overwrite", "system"), nil},
	{KindOverride, "jailbreak mode", word(
		`(?:developer|dev|god|jailbreak|jailbroken|dan|unrestricted|unfiltered|evil)\s+mode\s+(?:is\s+)?(?:now\s+)?(?:enabled|activated|engaged|unlocked)\b|`+
			`(?:enable|activate|enter|engage|switch\s+to|turn\s+on)\s+(?:dan|jailbreak|god|unrestricted|unfiltered|evil)\s+mode\b|`+
			`(?:act|respond|answer|behave|pretend)\b[^.\n]{0,40}\b(?:with|in)\s+developer\s+mode\b`,
		"dev", "god", "jailbr", "dan", "unrestricted", "unfiltered", "evil",
		"enable", "activate", "enter", "engage", "switch", "turn", "act", "respond", "answer", "behave", "pretend"), nil},
	{KindOverride, "do anything now", word(`do\s+anything\s+now\b`, "do"), nil},
	{KindOverride, "persona jailbreak", word(
		`(?:act|pretend|behave|roleplay|role-play)\s+(?:as|like|to\s+be)\s+(?:an?\s+)?(?:dan|jailbroken|unrestricted|unfiltered|uncensored|evil)\b|`+
			`(?:respond|answer|reply|operate)\s+without\s+(?:any\s+)?(?:restrictions|limitations|filters|filtering|censorship|ethical\s+guidelines|safety\s+guidelines)\b`,
		"act", "pretend", "behave", "role", "respond", "answer", "reply", "operate"), nil},
	{KindOverride, "concealment from the user", word(
		`(?:do\s+not|don'?t|never)\s+(?:tell|inform|alert|notify|warn)\s+the\s+user\s+(?:about\s+|of\s+)?(?:this|it|that|these|any|anything)\b|`+
			`(?:do\s+not|don'?t|never)\s+(?:mention|reveal|show|disclose)\s+(?:this|it|that|these|any\s+of\s+this)\s+to\s+the\s+user\b|`+
			`(?:hide|conceal|keep)\s+(?:this|it)\s+(?:secret\s+)?from\s+(?:the\s+)?user\b`,
		"do", "never", "hide", "conceal", "keep"), nil},
	{KindOverride, "tool instruction", word(`before\s+(?:using|calling|running|invoking)\s+(?:this|the|any\s+other)\s+tool\b`, "before"), nil},
}

// sensitiveTerms name data worth stealing, as prose ("the API keys") and
// as paths. A bare "token" or "key" is too common in API documentation
// ("POST the token to https://...") and counts only with a qualifier
// ("your token", "access token") or in the plural.
var sensitiveTerms = []struct {
	lit string
	// qualified, when set, requires one of these words right before lit.
	qualified []string
}{
	{"secrets", nil}, {"credential", nil}, {"password", nil}, {"passwd", nil}, {"tokens", nil},
	{"token", []string{"access ", "auth ", "session ", "bearer ", "your ", "api "}},
	{"secret", []string{"your ", "client "}},
	{"api key", nil}, {"api_key", nil}, {"api-key", nil}, {"apikey", nil},
	{"key", []string{"your ", "your api ", "private ", "ssh ", "signing "}},
	{"private_key", nil}, {"private-key", nil}, {"ssh_key", nil}, {"ssh-key", nil},
	{"id_rsa", nil}, {"id_ed25519", nil}, {"id_ecdsa", nil}, {".aws", nil}, {".kube", nil}, {".netrc", nil}, {".env", nil},
	{"env var", nil}, {"environment", nil}, {"cookies", nil}, {"chat history", nil}, {"conversation", nil},
	{"system prompt", nil}, {"/etc/passwd", nil}, {"/etc/shadow", nil}, {"wallet", nil}, {"seed phrase", nil}, {"mnemonic", nil},
}

// findSensitive returns where the first sensitive term starting before
// limit is in s.
func findSensitive(s string, limit int) (start, end int, ok bool) {
	start = limit
	for _, t := range sensitiveTerms {
		for from := 0; from < start; {
			i := strings.Index(s[from:], t.lit)
			if i < 0 || from+i >= start {
				break
			}
			i += from
			from = i + 1
			if t.qualified != nil && !hasSuffixAny(s[:i], t.qualified) {
				continue
			}
			start, end, ok = i, i+len(t.lit), true
			break
		}
	}
	return start, end, ok
}

func hasSuffixAny(s string, suffixes []string) bool {
	for _, x := range suffixes {
		if strings.HasSuffix(s, x) {
			return true
		}
	}
	return false
}

var (
	// A prose request is a verb, what (a sensitive noun within the next
	// few words), then where ("to https://..." soon after). It is matched
	// in steps on short spans (see exfilProse): one regexp for all of it
	// costs a microsecond a byte in Go's NFA. "-X POST -H 'Bearer $TOKEN'
	// https://" has no "to" before the URL, so it does not read as one.
	exfilVerbs = word(`(?:send|post|upload|transmit|forward|e-?mail|leak|exfiltrate|exfil|smuggle|beacon)\s`,
		"send", "post", "upload", "transmit", "forward", "email", "e-mail", "leak", "exfil", "smuggle", "beacon")
	reDest = compiled(`^[^\n]{0,80}?\b(?:to|into|at|via|onto|towards?)\s+[^\n]{0,24}?(?:(?:https?|ftp)://|[a-z0-9._%+-]+@[a-z0-9-]+(?:\.[a-z0-9-]+)*\.[a-z]{2,}\b)`)
	// Verbs that are exfiltration whatever the object, with a URL on the
	// same line.
	exfilOnly = word(`(?:exfiltrate|exfil|smuggle\s+out)\b`, "exfil", "smuggle")
	// Network tools as command words (not "https" inside a URL).
	netTool = at(`(?:curl|wget|nc|ncat|netcat|socat|telnet|scp|sftp|rsync|httpie|https?|iwr|irm|invoke-webrequest|invoke-restmethod)(?:\s|$)`,
		func(c byte) bool { return strings.IndexByte(" \t\n|;&(`'\"", c) >= 0 },
		"curl", "wget", "nc", "netcat", "socat", "telnet", "scp", "sftp", "rsync", "http", "iwr", "irm", "invoke-")
	// Secrets: credential files, and the commands that dump the environment.
	secrets = []pattern{
		at(`\.ssh/id_[a-z0-9_]+(?:\.pub)?|\.ssh/?(?:[\s'"|)]|$)|\.aws/credentials|\.netrc|\.git-credentials|\.docker/config\.json|\.kube/config|`+
			`\.config/gcloud|\.npmrc|\.pypirc|\.gnupg|\.password-store|/etc/shadow|/etc/passwd|\.(?:bash|zsh)_history|/proc/(?:self|\d+|\$\$)/environ`,
			anyByte, ".ssh", ".aws/", ".netrc", ".git-credentials", ".docker/", ".kube/", ".config/gcloud", ".npmrc", ".pypirc", ".gnupg",
			".password-store", "/etc/shadow", "/etc/passwd", ".bash_history", ".zsh_history", "/proc/"),
		// .env as a file name, not process.env.
		at(`\.env\b`, func(c byte) bool { return strings.IndexByte(" \t\n@<'\"=/", c) >= 0 }, ".env"),
		at(`\$\((?:env|printenv|set|export\s+-p|declare\s+-x)\)|\x60(?:env|printenv)\x60`, anyByte, "$(", "`e", "`p"),
		word(`(?:env|printenv)\s*\|`, "env", "printenv"),
	}
)

// Windows: how far around an anchor a match can start and end. Generous,
// since a window that is too small misses a match, and one that is too big
// only costs time.
const (
	windowBefore = 400
	windowAfter  = 400
	// lineBack is how far a window start is moved back to reach the start
	// of its line, so that ^ and \b see the same context as in the whole.
	lineBack = 4096
)

// find returns up to limit matches of p in text, looking only around the
// positions of p's anchors (hits, from anchorIndex.scan of the same text).
func (p pattern) find(text string, hits anchorHits, limit int) [][]int {
	if p.prefix != nil {
		return p.findAt(text, hits, limit)
	}
	var wins [][2]int
	for _, a := range p.anchors {
		for _, at := range hits[a] {
			wins = append(wins, [2]int{max(0, at-windowBefore), min(len(text), at+len(a)+windowAfter)})
		}
	}
	if len(wins) == 0 {
		return nil
	}
	slices.SortFunc(wins, func(a, b [2]int) int { return a[0] - b[0] })
	var out [][]int
	last := -1 // end of the last match, so overlapping windows do not repeat one
	for k := 0; k < len(wins); {
		lo, hi := wins[k][0], wins[k][1]
		for k++; k < len(wins) && wins[k][0] <= hi; k++ {
			hi = max(hi, wins[k][1])
		}
		lo = lineStart(text, lo)
		for _, m := range p.re().FindAllStringIndex(text[lo:hi], limit-len(out)) {
			m[0], m[1] = m[0]+lo, m[1]+lo
			if m[0] >= last {
				out = append(out, m)
				last = max(m[1], m[0]+1)
			}
		}
		if len(out) >= limit {
			break
		}
	}
	return out
}

// findAt tries the anchored pattern at every anchor position.
func (p pattern) findAt(text string, hits anchorHits, limit int) [][]int {
	var out [][]int
	for _, a := range p.anchors {
		for _, at := range hits[a] {
			if at > 0 && !p.prefix(text[at-1]) {
				continue
			}
			if m := p.anchored().FindStringIndex(text[at:min(len(text), at+windowAfter)]); m != nil {
				out = append(out, []int{at + m[0], at + m[1]})
				if len(out) >= limit {
					break
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b []int) int { return a[0] - b[0] })
	return out
}

// anchorHits maps each anchor to where it occurs in one text.
type anchorHits map[string][]int

// anchorIndex finds every anchor of every pattern in one pass over a text,
// instead of one strings.Index loop per anchor per pattern. pair marks the
// first two bytes of some anchor, so most positions are rejected with one
// table lookup.
type anchorIndex struct {
	pair    [1 << 16]bool
	byFirst [256][]string
}

func newAnchorIndex(patterns ...pattern) *anchorIndex {
	x := &anchorIndex{}
	seen := map[string]bool{}
	for _, p := range patterns {
		for _, a := range p.anchors {
			if len(a) < 2 {
				panic("inject: anchor " + a + " is shorter than two bytes")
			}
			if seen[a] {
				continue
			}
			seen[a] = true
			x.pair[int(a[0])<<8|int(a[1])] = true
			x.byFirst[a[0]] = append(x.byFirst[a[0]], a)
		}
	}
	return x
}

func (x *anchorIndex) scan(text string) anchorHits {
	hits := anchorHits{}
	for i := 0; i+1 < len(text); i++ {
		if !x.pair[int(text[i])<<8|int(text[i+1])] {
			continue
		}
		for _, a := range x.byFirst[text[i]] {
			if strings.HasPrefix(text[i:], a) {
				hits[a] = append(hits[a], i)
			}
		}
	}
	return hits
}

// anchors indexes every pattern of this file.
var anchors = func() *anchorIndex {
	var all []pattern
	for _, d := range roleMarkers {
		all = append(all, d.pattern)
	}
	for _, d := range overrides {
		all = append(all, d.pattern)
	}
	all = append(all, exfilVerbs, exfilOnly, netTool)
	all = append(all, secrets...)
	return newAnchorIndex(all...)
}()

// lineStart moves i back to the start of its line (at most lineBack bytes;
// past that, to the last whitespace, so a window never starts mid-word).
func lineStart(text string, i int) int {
	if i == 0 {
		return 0
	}
	floor := max(0, i-lineBack)
	if j := strings.LastIndexByte(text[floor:i], '\n'); j >= 0 {
		return floor + j + 1
	}
	if floor == 0 {
		return 0
	}
	for i > floor && text[i-1] != ' ' && text[i-1] != '\t' {
		i--
	}
	return i
}

// exfiltration finds up to limit exfiltration requests. It is a function
// rather than a detector because the command form needs two patterns near
// each other.
func exfiltration(text string, hits anchorHits, limit int, emit func(kind Kind, detail string, start int)) {
	n := 0
	for _, v := range exfilVerbs.find(text, hits, len(text)+1) {
		if n >= limit {
			return
		}
		if exfilProse(text, v[1]) {
			emit(KindExfiltration, "request to send secrets to a URL", v[0])
			n++
		}
	}
	for _, v := range exfilOnly.find(text, hits, limit) {
		line := lineAfter(text, v[1], 128)
		if i := strings.Index(line, "://"); i >= 0 && (strings.HasSuffix(line[:i], "http") || strings.HasSuffix(line[:i], "https") || strings.HasSuffix(line[:i], "ftp")) {
			emit(KindExfiltration, "exfiltration request with a URL", v[0])
		}
	}
	// Unlimited: most secrets are filtered out below (ssh -i KEY), and a
	// limit here would let a run of those hide a real one.
	var found [][]int
	for _, p := range secrets {
		found = append(found, p.find(text, hits, len(text)+1)...)
	}
	if len(found) == 0 {
		return
	}
	slices.SortFunc(found, func(a, b []int) int { return a[0] - b[0] })
	var tools [][]int
	for _, m := range netTool.find(text, hits, len(text)+1) {
		tools = append(tools, []int{m[0], m[0] + len(strings.TrimRight(text[m[0]:m[1]], " \t\n"))})
	}
	const window = 160
	for _, s := range found {
		if strings.HasSuffix(text[s[0]:s[1]], ".pub") || credentialOption(text, s[0]) {
			continue
		}
		// tools are in text order: start at the first that ends in reach.
		k, _ := slices.BinarySearchFunc(tools, s[0]-window, func(t []int, lo int) int { return t[1] - lo })
		for ; k < len(tools) && tools[k][0] <= s[1]+window; k++ {
			if t := tools[k]; sameCommand(text, t, s) {
				emit(KindExfiltration, "network tool "+text[t[0]:t[1]]+" near secret "+quote(text[s[0]:s[1]]), min(s[0], t[0]))
				break
			}
		}
	}
}

// exfilProse reports whether the words after a verb (ending at i) name a
// secret within seven words and then send it to a URL: "send the contents
// of ~/.aws/credentials to https://...".
func exfilProse(text string, i int) bool {
	line := lineAfter(text, i, 400)
	// The object: the next seven words.
	end, words := 0, 0
	for end < len(line) && words < 7 {
		for end < len(line) && (line[end] == ' ' || line[end] == '\t') {
			end++
		}
		for end < len(line) && line[end] != ' ' && line[end] != '\t' {
			end++
		}
		words++
	}
	// A sensitive term starts within the object; multi-word ones
	// ("environment variables") may run a little past it.
	_, stop, ok := findSensitive(line, end)
	return ok && reDest().MatchString(line[stop:])
}

// lineAfter is text from i to the end of its line, at most n bytes.
func lineAfter(text string, i, n int) string {
	s := text[i:min(len(text), i+n)]
	if j := strings.IndexByte(s, '\n'); j >= 0 {
		s = s[:j]
	}
	return s
}

// credentialOption reports whether the secret at i is the value of an
// option that uses it as a credential rather than sends it (ssh -i KEY,
// curl --netrc-file F, kubectl --kubeconfig F): the ordinary way to
// authenticate is not exfiltration.
func credentialOption(text string, i int) bool {
	// Back up to the start of the word holding the secret's path.
	j := i
	for j > 0 && !strings.ContainsRune(" \t='\"@<", rune(text[j-1])) {
		j--
	}
	switch {
	case j < i && text[j] == '-': // -i~/.ssh/id_rsa
		k := j + 1
		for k < i && (text[k] == '-' || text[k] >= 'a' && text[k] <= 'z') {
			k++
		}
		return credentialOpt(text[j:k])
	case j > 0 && text[j-1] == '=': // --key=~/.ssh/id_rsa, -o IdentityFile=...
		k := j - 1
		for k > 0 && !strings.ContainsRune(" \t'\"", rune(text[k-1])) {
			k--
		}
		return credentialOpt(text[k : j-1])
	case j > 0 && (text[j-1] == '@' || text[j-1] == '<'): // -d @file, < file
		return false
	}
	fields := strings.Fields(strings.TrimRight(text[max(0, j-64):j], " \t'\""))
	if len(fields) == 0 {
		return false
	}
	return credentialOpt(fields[len(fields)-1])
}

// credentialOpt reports whether opt (lowered) takes a file it authenticates
// with, as opposed to data it sends; anything that is not an option is a
// positional argument, which for the network tools is data.
func credentialOpt(opt string) bool {
	if strings.HasSuffix(opt, "identityfile") {
		return true
	}
	if !strings.HasPrefix(opt, "-") {
		return false
	}
	switch opt {
	case "-d", "--data", "--data-binary", "--data-raw", "--data-urlencode", "--data-ascii", "-f", "--form", "-t",
		"--upload-file", "--post-file", "--body-file", "--json":
		return false
	}
	return true
}

// sameCommand keeps a tool and a secret together only when no command
// separator that ends the data flow sits between them: "cat ~/.ssh/id_rsa |
// curl ..." and "curl -d @~/.aws/credentials ..." are one flow;
// "ssh-keygen -f ~/.ssh/id_ed25519; curl https://x" is two.
func sameCommand(text string, t, s []int) bool {
	lo, hi := min(t[1], s[1]), max(t[0], s[0])
	if lo >= hi {
		return true
	}
	between := text[lo:hi]
	return !strings.ContainsAny(between, ";\n") && !strings.Contains(between, "&&") && !strings.Contains(between, "||")
}

// notXMLElement lets <system>GitHub</system> (Maven's issueManagement, and
// similar short data elements) through: a closing </system> ends a turn
// only when it does not close one short value opened on the same line. An
// opening <system> alone is not flagged at all (grep '<system>' pom.xml).
func notXMLElement(text string, m []int) bool {
	if text[m[0]:m[1]] != "</system>" {
		return true
	}
	const open, short = "<system>", 64
	head := text[max(0, m[0]-short-len(open)):m[0]]
	if j := strings.LastIndex(head, open); j >= 0 && !strings.ContainsAny(head[j+len(open):], "<\n") {
		return false
	}
	return true
}
