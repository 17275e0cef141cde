package settings

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/mitrity/mitrity/hook/framework"
)

// Finding is one way a settings file departs from what Mitrity needs.
type Finding struct {
	// Path is the dotted settings key, such as "sandbox.enabled" or
	// "hooks.PreToolUse"; empty for the file as a whole.
	Path string
	// Problem says what is wrong and what it lets happen.
	Problem string
	// Fix says what to change.
	Fix string
}

func (f Finding) String() string {
	if f.Path == "" {
		return f.Problem + " Fix: " + f.Fix
	}
	return f.Path + ": " + f.Problem + " Fix: " + f.Fix
}

// CheckClaude audits Claude Code settings (normally the managed settings
// file) for the rules RenderClaude writes and reports every drift: no
// Mitrity hook for Bash (or one that can time out before a held call is
// decided, runs asynchronously or fails open), hooks other than managed ones
// allowed, all hooks disabled, Claude Code's sandbox off, optional or with
// unsandboxed escapes, every Unix socket open, the relay's opening missing
// under routing, a state-mutating command without an ask (or deny) rule, an
// allow rule covering one, a catch-all ask rule, a credential-file denial
// missing, or bypass mode available. No findings means compliant.
func CheckClaude(settings []byte, o Options) []Finding {
	o, err := o.normalize()
	if err != nil {
		return []Finding{{Problem: "The check cannot run: " + err.Error() + ".", Fix: "pass valid options (os, hook path, socket)."}}
	}
	c, findings := newChecker(settings, o, "claude")
	if c == nil {
		return findings
	}
	c.hooks()
	c.sandbox()
	c.permissions()
	if o.LookPath != nil && o.OS == "linux" {
		c.findings = append(c.findings, ClaudeSandboxTools(o.LookPath)...)
	}
	return c.findings
}

// ClaudeSandboxTools reports what Claude Code's own sandbox needs on a
// Linux host and does not find in PATH: bubblewrap and socat (its network
// bridge). The settings make that sandbox mandatory (failIfUnavailable), so
// without them Claude Code refuses to start at all.
func ClaudeSandboxTools(lookPath func(string) (string, error)) []Finding {
	var out []Finding
	for _, t := range []struct{ bin, pkg string }{{"bwrap", "bubblewrap"}, {"socat", "socat"}} {
		if _, err := lookPath(t.bin); err != nil {
			out = append(out, Finding{Path: "sandbox",
				Problem: fmt.Sprintf("this host has no %s in PATH, which Claude Code's sandbox needs on Linux: with these settings (sandbox mandatory) Claude Code refuses to start.", t.bin),
				Fix:     fmt.Sprintf("install it on every host the settings go to (Debian: apt-get install %s).", t.pkg)})
		}
	}
	return out
}

type checker struct {
	s        map[string]any
	o        Options
	findings []Finding
}

func (c *checker) add(path, problem, fix string) {
	c.findings = append(c.findings, Finding{Path: path, Problem: problem, Fix: fix})
}

// get walks the settings object along keys; nil when any step is missing.
func (c *checker) get(keys ...string) any {
	var v any = c.s
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func (c *checker) hooks() {
	if c.get("disableAllHooks") == true {
		c.add("disableAllHooks", "is true: Claude Code runs no hook, so no shell call reaches Mitrity.", "remove disableAllHooks.")
	}
	if c.get("allowManagedHooksOnly") != true {
		c.add("allowManagedHooksOnly", "is not true: a user, project or plugin hook also answers for each call and can rewrite it after Mitrity's hook did.", "set allowManagedHooksOnly to true.")
	}
	want := c.o.hookCommand()
	snippet := fmt.Sprintf(`{"matcher": "Bash", "hooks": [{"type": "command", "command": %q, "timeout": %d, "onFailure": "block"}]}`, want, c.o.HookTimeoutSeconds)
	found := c.eachHook("PreToolUse", framework.Claude.ShellTool(), want, func(path string, hook map[string]any) {
		switch t, ok := hook["timeout"].(float64); {
		case !ok:
			c.add(path+".timeout", fmt.Sprintf("is unset, so Claude Code gives the hook 600 seconds and then runs the call; a held call may wait longer (want at least %d).", c.o.HookTimeoutSeconds), fmt.Sprintf("set timeout to %d.", c.o.HookTimeoutSeconds))
		case t < float64(c.o.HookTimeoutSeconds):
			c.add(path+".timeout", fmt.Sprintf("is %g seconds: Claude Code stops waiting for a held call before it is decided, and then runs it (want at least %d).", t, c.o.HookTimeoutSeconds), fmt.Sprintf("set timeout to %d.", c.o.HookTimeoutSeconds))
		}
		if hook["async"] == true {
			c.add(path+".async", "is true: Claude Code runs the call without waiting for Mitrity's answer.", "remove async.")
		}
		if hook["onFailure"] != "block" {
			c.add(path+".onFailure", `is not "block": a hook that cannot start, times out or crashes lets the call run.`, `set onFailure to "block" (Claude Code 2.1.295 or later).`)
		}
	})
	if !found {
		c.add("hooks.PreToolUse", fmt.Sprintf("has no command hook running %q for the Bash tool: shell calls are not checked by Mitrity.", want), "add "+snippet+".")
	}
	if c.o.Socket != "" {
		if got, _ := c.get("env", SocketEnv).(string); got != c.o.Socket {
			c.add("env."+SocketEnv, fmt.Sprintf("is %q, not %q: the hook and the relay look for the gateway elsewhere.", got, c.o.Socket), fmt.Sprintf("set env.%s to %q.", SocketEnv, c.o.Socket))
		}
	}
}

// eachHook calls f for each command hook under hooks.<event> that runs
// want for tool, with its dotted path, and reports whether there was one.
func (c *checker) eachHook(event, tool, want string, f func(path string, hook map[string]any)) bool {
	groups, _ := c.get("hooks", event).([]any)
	found := false
	for i, g := range groups {
		group, _ := g.(map[string]any)
		matcher, _ := group["matcher"].(string)
		if group == nil || !matcherMatches(matcher, tool) {
			continue
		}
		hooks, _ := group["hooks"].([]any)
		for j, h := range hooks {
			hook, _ := h.(map[string]any)
			cmd, _ := hook["command"].(string)
			if hook == nil || hook["type"] != "command" || strings.Join(strings.Fields(cmd), " ") != want {
				continue
			}
			found = true
			f(fmt.Sprintf("hooks.%s[%d].hooks[%d]", event, i, j), hook)
		}
	}
	return found
}

func (c *checker) sandbox() {
	if c.get("sandbox", "enabled") != true {
		c.add("sandbox.enabled", "is not true: Claude Code runs shell commands without its sandbox.", "set sandbox.enabled to true.")
	}
	if c.get("sandbox", "failIfUnavailable") != true {
		c.add("sandbox.failIfUnavailable", "is not true: where the sandbox cannot start, Claude Code runs commands without it.", "set sandbox.failIfUnavailable to true.")
	}
	if c.get("sandbox", "allowUnsandboxedCommands") != false {
		c.add("sandbox.allowUnsandboxedCommands", "is not false (it defaults to true): the model can retry a command outside the sandbox with dangerouslyDisableSandbox.", "set sandbox.allowUnsandboxedCommands to false.")
	}
	if c.get("sandbox", "network", "allowAllUnixSockets") == true {
		c.add("sandbox.network.allowAllUnixSockets", "is true: sandboxed commands can connect to every Unix socket on the host (the Docker socket, agents, the admission socket).", "remove it"+c.socketFix()+".")
	}
	relay := framework.RelayPattern(c.o.HookPath)
	excluded := strings_(c.get("sandbox", "excludedCommands"))
	for _, e := range excluded {
		if e != relay {
			c.add("sandbox.excludedCommands", fmt.Sprintf("lists %q: Claude Code runs matching commands, and any compound command containing one, outside its sandbox.", e), "remove it.")
		}
	}
	if !c.o.Routing {
		return
	}
	switch c.o.OS {
	case "darwin":
		if !contains(strings_(c.get("sandbox", "network", "allowUnixSockets")), c.o.Socket) {
			c.add("sandbox.network.allowUnixSockets", fmt.Sprintf("does not name %q: under routing the relay cannot reach the gateway from Claude Code's sandbox, and every routed call fails.", c.o.Socket), fmt.Sprintf("add %q.", c.o.Socket))
		}
	case "linux":
		if !contains(excluded, relay) {
			c.add("sandbox.excludedCommands", fmt.Sprintf("does not list %q: on Linux Claude Code's sandbox refuses every Unix socket, so under routing the relay cannot reach the gateway and every routed call fails.", relay), fmt.Sprintf("add %q.", relay))
		}
	}
}

func (c *checker) socketFix() string {
	if c.o.Routing && c.o.OS == "darwin" {
		return fmt.Sprintf(" and name %q in sandbox.network.allowUnixSockets", c.o.Socket)
	}
	return ""
}

func (c *checker) permissions() {
	if c.get("permissions", "disableBypassPermissionsMode") != "disable" {
		c.add("permissions.disableBypassPermissionsMode", `is not "disable": in bypass mode Claude Code skips the ask rules that confirm state-mutating commands.`, `set permissions.disableBypassPermissionsMode to "disable".`)
	}
	deny := parseRules(strings_(c.get("permissions", "deny")))
	ask := parseRules(strings_(c.get("permissions", "ask")))
	allow := parseRules(strings_(c.get("permissions", "allow")))

	for _, cmd := range StateMutating {
		samples := []string{cmd, cmd + " x"}
		if cmd == "git push" {
			samples = append(samples, "git -C /work push origin")
		}
		for _, sample := range samples {
			if !anyMatches(deny, sample, strict) && !anyMatches(ask, sample, strict) {
				c.add("permissions.ask", fmt.Sprintf("has no rule for %q: Claude Code runs %q without asking the person.", cmd, sample), fmt.Sprintf("add %q and %q.", "Bash("+cmd+")", "Bash("+cmd+" *)"))
				break
			}
		}
	}
	for _, r := range allow {
		if covered := r.covers(mutatingSamples()); len(covered) > 0 {
			c.add("permissions.allow", fmt.Sprintf("%q allows state-mutating commands (%s).", r.text, list(covered)), "remove it; allow read-only subcommands one by one.")
		}
	}
	for _, r := range ask {
		if covered := r.covers(readOnlySamples()); len(covered) > 0 {
			c.add("permissions.ask", fmt.Sprintf("%q is a catch-all that also matches read-only commands (%s): Claude Code asks on every read, since an ask rule wins over any allow rule.", r.text, list(covered)), "replace it with the write subcommands listed one by one.")
		}
	}
	have := map[string]bool{}
	for _, r := range strings_(c.get("permissions", "deny")) {
		have[strings.TrimSpace(r)] = true
	}
	for _, r := range denyRules() {
		if !have[r] {
			c.add("permissions.deny", fmt.Sprintf("lacks %q: the model can %s.", r, denyConsequence(r)), fmt.Sprintf("add %q.", r))
		}
	}
}

func denyConsequence(rule string) string {
	switch {
	case strings.HasPrefix(rule, "Read("):
		return "read " + rule[len("Read("):len(rule)-1] + " with its file tools and sandboxed commands"
	case strings.HasPrefix(rule, "Edit("):
		return "write " + rule[len("Edit("):len(rule)-1] + " with its file tools"
	}
	return "run " + rule
}

func mutatingSamples() []string {
	out := make([]string, 0, 2*len(StateMutating)+1)
	for _, c := range StateMutating {
		out = append(out, c, c+" x")
	}
	return append(out, "git -C /work push origin")
}

func readOnlySamples() []string {
	out := make([]string, 0, 2*len(ReadOnly))
	for _, c := range ReadOnly {
		out = append(out, c, c+" 1")
	}
	return out
}

// rule is a Bash permission rule: Bash, Bash(*), Bash(prefix:*) (the legacy
// form), Bash(pattern with *) or Bash(exact command).
type rule struct {
	text string
	all  bool
	// lenient may over-match, strict may under-match: whether a trailing
	// ` *` also matches the command without arguments is not documented,
	// so coverage (is a command asked?) is judged strict and exposure (does
	// an allow rule let a command through?) lenient.
	lenient, strict *regexp.Regexp
}

// matchMode is how rule.matches reads a trailing ` *`.
type matchMode int

const (
	strict matchMode = iota
	lenient
)

// parseRules keeps the Bash rules of a rule list.
func parseRules(texts []string) []rule {
	var out []rule
	for _, t := range texts {
		t = strings.TrimSpace(t)
		if t == "Bash" {
			out = append(out, rule{text: t, all: true})
			continue
		}
		if !strings.HasPrefix(t, "Bash(") || !strings.HasSuffix(t, ")") {
			continue
		}
		content := strings.Join(strings.Fields(t[len("Bash("):len(t)-1]), " ")
		if content == "" || content == "*" {
			out = append(out, rule{text: t, all: true})
			continue
		}
		out = append(out, rule{text: t, lenient: ruleRegexp(content, true), strict: ruleRegexp(content, false)})
	}
	return out
}

// ruleRegexp approximates Claude Code's matching of a Bash rule: `p:*` is p
// alone or followed by a space; `*` stands for any text; anything else is the
// command exactly. A trailing ` *` matches the command without arguments
// only when bare is set.
func ruleRegexp(content string, bare bool) *regexp.Regexp {
	if p, ok := strings.CutSuffix(content, ":*"); ok {
		return regexp.MustCompile(`^` + regexp.QuoteMeta(p) + `( .*)?$`)
	}
	tail := ""
	if p, ok := strings.CutSuffix(content, " *"); ok && bare {
		content, tail = p, `( .*)?`
	}
	parts := strings.Split(content, "*")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile(`^` + strings.Join(parts, `.*`) + tail + `$`)
}

func (r rule) matches(cmd string, mode matchMode) bool {
	switch {
	case r.all:
		return true
	case mode == lenient:
		return r.lenient.MatchString(cmd)
	}
	return r.strict.MatchString(cmd)
}

// covers returns the distinct commands (samples cut to their command words)
// the rule may match.
func (r rule) covers(samples []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range samples {
		if !r.matches(s, lenient) {
			continue
		}
		name := strings.TrimSuffix(strings.TrimSuffix(s, " x"), " 1")
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	return out
}

func anyMatches(rules []rule, cmd string, mode matchMode) bool {
	for _, r := range rules {
		if r.matches(cmd, mode) {
			return true
		}
	}
	return false
}

// matcherMatches reports whether a hook matcher selects tool: empty and "*"
// match everything, names made of letters, digits, _ and | match exactly,
// anything else is a regular expression.
func matcherMatches(matcher, tool string) bool {
	if matcher == "" || matcher == "*" {
		return true
	}
	if regexp.MustCompile(`^[A-Za-z0-9_|]+$`).MatchString(matcher) {
		return contains(strings.Split(matcher, "|"), tool)
	}
	re, err := regexp.Compile(matcher)
	return err == nil && re.MatchString(tool)
}

// strings_ reads a JSON array of strings, skipping anything else.
func strings_(v any) []string {
	arr, _ := v.([]any)
	var out []string
	for _, e := range arr {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// list shows up to four items.
func list(items []string) string {
	if len(items) > 4 {
		return strings.Join(items[:4], ", ") + fmt.Sprintf(" and %d more", len(items)-4)
	}
	return strings.Join(items, ", ")
}
