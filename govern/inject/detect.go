package inject

import (
	"regexp"
	"strings"
)

// Every pattern runs on the lowered fold text (see folded), so it is
// written in lower case and needs no Unicode classes.

// detector is one family of patterns with the kind it reports.
type detector struct {
	kind Kind
	what string // the noun the Detail starts with
	re   *regexp.Regexp
	// keep, when set, vets a match (text is the whole lowered layer, m the
	// match indexes); it is where context that a regexp cannot express
	// (no look-behind in RE2) is checked.
	keep func(text string, m []int) bool
}

// Role and delimiter markers: the tokens chat formats use to separate the
// system prompt from the user's turn. Text that carries them is trying to
// start a new turn inside a tool result.
var roleMarkers = []detector{
	{KindRoleMarker, "chat template token", regexp.MustCompile(`<\|[a-z_]{2,32}\|>`), nil},
	{KindRoleMarker, "instruction delimiter", regexp.MustCompile(`\[/?inst\]|<</?sys>>|</?(?:start|end)_of_turn>`), nil},
	{KindRoleMarker, "role header", regexp.MustCompile(`(?m)(?:^|[\s'"\x60])#{2,}[ \t]*(?:system|instructions?|assistant|human|developer)[ \t]*:`), nil},
	{KindRoleMarker, "role tag", regexp.MustCompile(`</(?:system|system_prompt|instructions|important)>|<(?:system_prompt|important)>`), notXMLElement},
	{KindRoleMarker, "turn prefix", regexp.MustCompile(`(?m)(?:^|\\n)[ \t]*(?:human|assistant)[ \t]*:[ \t]*\S`), nil},
	{KindRoleMarker, "system code fence", regexp.MustCompile("```[ \\t]*(?:system|instructions)\\b"), nil},
}

// Instruction overrides: the phrases that ask a model to drop what it was
// told. Each needs the words that make it about instructions, so "ignore
// case", "forget the last commit" or "override previous CSS rules" stay
// clean.
var overrides = []detector{
	{KindOverride, "instruction override", regexp.MustCompile(
		`\b(?:ignore|disregard|forget|overlook)[\s,]+(?:(?:all|any|every|each|of|the|my|these|those|and|or)[\s,]+)*` +
			`(?:(?:previous|previously|prior|above|earlier|preceding|foregoing|former|original|initial|system|developer|safety|your)[\s,]+)+` +
			`(?:(?:and|or|all|any|the|given|stated|provided)[\s,]+)*` +
			`(?:instructions?|prompts?|directions|directives|guidelines|rules|constraints|restrictions|guardrails|programming|orders)\b`), nil},
	{KindOverride, "instruction override", regexp.MustCompile(
		`\b(?:override|bypass)\s+(?:all\s+|any\s+|the\s+)?(?:previous|prior|above|your|original|system)\s+(?:instructions?|prompts?|directives|guardrails|safety\s+guidelines)\b`), nil},
	{KindOverride, "instruction override", regexp.MustCompile(
		`\b(?:ignore|disregard|forget)[\s,]+(?:all[\s,]+|about[\s,]+)?(?:everything|all)[\s,]+(?:above|before|prior|previously|you\s+(?:were|have\s+been)\s+told)\b`), nil},
	{KindOverride, "role reassignment", regexp.MustCompile(
		`\byou\s+are\s+now\s+(?:dan|jailbroken|unrestricted|unfiltered|uncensored|evil|in\s+(?:developer|dan|god|jailbreak)\s+mode)\b|` +
			`\byou\s+are\s+now\s+(?:a|an|my|acting\s+as|operating\s+as)\s+(?:[a-z-]+\s+){0,2}?(?:assistant|ai|model|bot|hacker|character|persona|agent)\b|` +
			`\byou\s+are\s+(?:now\s+)?no\s+longer\s+(?:bound|restricted|limited|constrained|an?\s+ai|required\s+to\s+follow|subject\s+to)\b`), nil},
	{KindOverride, "new instructions", regexp.MustCompile(`\b(?:new|updated|real|actual|revised|true)\s+(?:system\s+)?(?:instructions?|prompt)\s*:`), nil},
	{KindOverride, "system prompt request", regexp.MustCompile(
		`\b(?:reveal|leak|recite|repeat)\s+(?:me\s+)?(?:your|the)\s+(?:(?:full|entire|complete|original|initial|hidden|secret|exact)\s+)*` +
			`(?:system\s+prompt|system\s+message|initial\s+instructions|hidden\s+instructions)|` +
			`\b(?:print|show|output|display|dump|tell\s+me|give\s+me|share|expose|write\s+out|what\s+is|what's)\s+(?:me\s+)?your\s+` +
			`(?:(?:full|entire|complete|original|initial|hidden|secret|exact)\s+)*(?:system\s+prompt|system\s+message|initial\s+instructions|hidden\s+instructions)`), nil},
	{KindOverride, "system prompt override", regexp.MustCompile(
		`\b(?:ignore|disregard|forget|bypass)\s+(?:your|the|all)\s+(?:previous\s+|original\s+)?system\s+prompts?\b|` +
			`\b(?:override|overwrite)\s+your\s+system\s+prompt\b|\bsystem\s+prompt\s*:`), nil},
	{KindOverride, "jailbreak mode", regexp.MustCompile(
		`\b(?:developer|dev|god|jailbreak|jailbroken|dan|unrestricted|unfiltered|evil)\s+mode\s+(?:is\s+)?(?:now\s+)?(?:enabled|activated|engaged|unlocked)\b|` +
			`\b(?:enable|activate|enter|engage|switch\s+to|turn\s+on)\s+(?:dan|jailbreak|god|unrestricted|unfiltered|evil)\s+mode\b|` +
			`\b(?:act|respond|answer|behave|pretend)\b[^.\n]{0,40}\b(?:with|in)\s+developer\s+mode\b`), nil},
	{KindOverride, "do anything now", regexp.MustCompile(`\bdo\s+anything\s+now\b`), nil},
	{KindOverride, "persona jailbreak", regexp.MustCompile(
		`\b(?:act|pretend|behave|roleplay|role-play)\s+(?:as|like|to\s+be)\s+(?:an?\s+)?(?:dan|jailbroken|unrestricted|unfiltered|uncensored|evil)\b|` +
			`\b(?:respond|answer|reply|operate)\s+without\s+(?:any\s+)?(?:restrictions|limitations|filters|filtering|censorship|ethical\s+guidelines|safety\s+guidelines)\b`), nil},
	{KindOverride, "concealment from the user", regexp.MustCompile(
		`\b(?:do\s+not|don'?t|never)\s+(?:tell|inform|alert|notify|warn)\s+the\s+user\s+(?:about\s+|of\s+)?(?:this|it|that|these|any|anything)\b|` +
			`\b(?:do\s+not|don'?t|never)\s+(?:mention|reveal|show|disclose)\s+(?:this|it|that|these|any\s+of\s+this)\s+to\s+the\s+user\b|` +
			`\b(?:hide|conceal|keep)\s+(?:this|it)\s+(?:secret\s+)?from\s+(?:the\s+)?user\b`), nil},
	{KindOverride, "tool instruction", regexp.MustCompile(`\bbefore\s+(?:using|calling|running|invoking)\s+(?:this|the|any\s+other)\s+tool\b`), nil},
}

// sensitive names data worth stealing, as prose ("the API keys") and as
// paths. A bare "token" or "key" is too common in API documentation ("POST
// the token to https://...") and counts only as "your token".
const sensitiveWords = `(?:secrets|credentials?|passwords?|passwd|(?:access|auth|session|api|bearer)?\s?tokens|(?:access|auth|session)\s+token|api[\s_-]?keys|private[\s_-]?keys?|ssh[\s_-]?keys?|` +
	`your\s+(?:api\s+)?(?:key|token|password|secret)|id_rsa|id_ed25519|\.env\b|env(?:ironment)?\s+var(?:iable)?s|environment|\.aws|\.kube|\.netrc|cookies|` +
	`chat\s+history|conversation|system\s+prompt|/etc/passwd|/etc/shadow|wallet|seed\s+phrase|mnemonic)`

var (
	// A prose request: verb, what (a sensitive noun among a few words),
	// then where ("to https://..."). "-X POST -H 'Bearer $TOKEN' https://"
	// has no "to" before the URL, so it does not read as one.
	reExfilProse = regexp.MustCompile(
		`\b(?:send|post|upload|transmit|forward|e-?mail|leak|exfiltrate|exfil|smuggle|beacon)\s+(?:\S+\s+){0,6}?\S*?` + sensitiveWords +
			`[^\n]{0,80}?\b(?:to|into|at|via|onto|towards?)\s+[^\n]{0,24}?(?:https?|ftp)://`)
	// Verbs that are exfiltration whatever the object.
	reExfilVerb = regexp.MustCompile(`\b(?:exfiltrate|exfil|smuggle\s+out)\b[^\n]{0,120}?(?:https?|ftp)://`)
	// Network tools as command words (not "https" inside a URL).
	reNetTool = regexp.MustCompile("(?:^|[\\s|;&(`'\"])(curl|wget|nc|ncat|netcat|socat|telnet|scp|sftp|rsync|httpie|https?|iwr|irm|invoke-webrequest|invoke-restmethod)(?:\\s|$)")
	reSecret  = regexp.MustCompile(
		`\.ssh/id_[a-z0-9_]+(?:\.pub)?|\.ssh/?(?:[\s'"|)]|$)|\.aws/credentials|\.netrc|\.git-credentials|\.docker/config\.json|\.kube/config|` +
			`\.config/gcloud|\.npmrc|\.pypirc|\.gnupg|\.password-store|/etc/shadow|/etc/passwd|\.(?:bash|zsh)_history|/proc/(?:self|\d+|\$\$)/environ|` +
			`(?:^|[\s@<'"=])\.env\b|\$\((?:env|printenv|set|export\s+-p|declare\s+-x)\)|\x60(?:env|printenv)\x60|\b(?:env|printenv)\s*\|`)
)

// exfiltration finds exfiltration requests. It is a function rather than a
// detector because the command form needs two patterns near each other.
func exfiltration(text string, emit func(kind Kind, detail string, start int)) {
	for _, m := range reExfilProse.FindAllStringIndex(text, -1) {
		emit(KindExfiltration, "request to send secrets to a URL", m[0])
	}
	for _, m := range reExfilVerb.FindAllStringIndex(text, -1) {
		emit(KindExfiltration, "exfiltration request with a URL", m[0])
	}
	var tools [][]int
	for _, m := range reNetTool.FindAllStringSubmatchIndex(text, -1) {
		tools = append(tools, m[2:4])
	}
	if len(tools) == 0 {
		return
	}
	const window = 160
	for _, s := range reSecret.FindAllStringIndex(text, -1) {
		if strings.ContainsRune(" \t\n@<'\"=", rune(text[s[0]])) {
			s[0]++ // the pattern's leading context is not part of the path
		}
		if strings.HasSuffix(text[s[0]:s[1]], ".pub") || credentialOption(text, s[0]) {
			continue
		}
		for _, t := range tools {
			if t[0]-s[1] > window || s[0]-t[1] > window {
				continue
			}
			if sameCommand(text, t, s) {
				emit(KindExfiltration, "network tool "+text[t[0]:t[1]]+" near secret "+strings.TrimSpace(text[s[0]:s[1]]), min(s[0], t[0]))
				break
			}
		}
	}
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
