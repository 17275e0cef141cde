package shell

import (
	"fmt"
	"slices"
	"strings"
)

// Wrappers are commands that run another command: sudo, env, timeout, xargs,
// find -exec and the like. An agent that wants to hide what it runs puts it
// behind one (or five) of them, so each wrapper's real option grammar is
// reproduced here, as the Debian 12 tools parse it: the question is always
// "which words does the wrapper itself consume, and which does it run", and
// a guess in either direction is a bypass. Anything the grammar does not
// know, or a word whose value would decide the split but is unknown
// statically, makes the result opaque instead.

// unwrapped says what a wrapper command runs.
type unwrapped struct {
	Wrapper string // basename of argv[0], e.g. "sudo"
	// Inners holds the argv of each command the wrapper runs (find may have
	// several -exec). The words are copies of the caller's words; a word the
	// wrapper rewrites at run time (xargs -I, find's {}) is marked Dynamic.
	Inners [][]Word
	// Code holds shell code strings the wrapper hands to a shell's -c
	// (watch joins its arguments; script -c; flock -c; su -c; sudo -s/-i
	// with a command; parallel's command).
	Code []Word
	// Assigns are NAME=VALUE words the wrapper applies to the inner
	// environment (env, sudo VAR=x).
	Assigns []Word
	Unsets  []string // env -u NAME
	// Opaque is non-empty when what runs cannot be determined: an unknown
	// option, a dynamic word where the grammar needs to look, a missing
	// operand, an interactive shell, a usage error.
	Opaque string
	// Privilege marks a wrapper that changes user, root or namespaces (sudo,
	// doas, su, runuser, chroot, unshare, nsenter, setpriv, pkexec, capsh,
	// systemd-run).
	Privilege bool
	// StdinArgs: the inner argv is completed at run time with words read
	// from standard input or a file (xargs, parallel without ::: sources).
	StdinArgs bool
	// ArgFiles are the files those words are read from instead of stdin
	// (xargs -a FILE, parallel -a FILE and :::: FILE).
	ArgFiles []Word
	// Chdir is the directory the inner command starts in when the wrapper
	// changes it (env -C, sudo -D, unshare -w, chroot, find -execdir, login
	// shells); nil when unchanged. Relative script paths resolve against it.
	// A dynamic Chdir that no word names carries a description in Value.
	Chdir *Word
	// Root is the root directory the inner command sees when the wrapper
	// changes it (chroot, sudo -R, unshare -R, nsenter, capsh --chroot);
	// nil when unchanged.
	Root *Word
	// ClearEnv: the inner command starts from an empty (or reset)
	// environment apart from Assigns (env -i, exec -c, setpriv --reset-env),
	// so PATH lookup may differ from the caller's.
	ClearEnv bool
}

// unwrap reports what argv runs when argv[0] is a wrapper; ok is false when
// it is not one. Only the outermost wrapper is peeled: the caller calls
// unwrap again on each of Inners.
func unwrap(argv []Word) (u unwrapped, ok bool) {
	if len(argv) == 0 || argv[0].Dynamic {
		return u, false
	}
	v := argv[0].Value
	name := v[strings.LastIndexByte(v, '/')+1:]
	fn, found := wrapperTable[name]
	if !found {
		return u, false
	}
	u.Wrapper = name
	fn(&u, argv[1:])
	if u.Opaque != "" {
		// An opaque result makes no claim about what runs.
		u = unwrapped{Wrapper: u.Wrapper, Opaque: u.Opaque, Privilege: u.Privilege}
	}
	return u, true
}

// wrapperTable maps a command basename to the parser of its grammar.
var wrapperTable = map[string]func(*unwrapped, []Word){
	"bwrap":       nestedSandbox,
	"builtin":     unwrapBuiltin,
	"busybox":     unwrapBusybox,
	"capsh":       unwrapCapsh,
	"chroot":      unwrapChroot,
	"chrt":        unwrapChrt,
	"command":     unwrapCommand,
	"doas":        unwrapDoas,
	"env":         unwrapEnv,
	"exec":        unwrapExec,
	"find":        unwrapFind,
	"firejail":    nestedSandbox,
	"flock":       unwrapFlock,
	"ionice":      unwrapIonice,
	"nice":        unwrapNice,
	"nohup":       unwrapNohup,
	"nsenter":     unwrapNsenter,
	"parallel":    unwrapParallel,
	"pkexec":      unwrapPkexec,
	"prlimit":     unwrapPrlimit,
	"runuser":     unwrapSu,
	"script":      unwrapScript,
	"setpriv":     unwrapSetpriv,
	"setsid":      unwrapSetsid,
	"stdbuf":      unwrapStdbuf,
	"strace":      unwrapStrace,
	"su":          unwrapSu,
	"sudo":        unwrapSudo,
	"sudoedit":    unwrapSudoedit,
	"systemd-run": unwrapSystemdRun,
	"taskset":     unwrapTaskset,
	"time":        unwrapTime,
	"timeout":     unwrapTimeout,
	"unshare":     unwrapUnshare,
	"watch":       unwrapWatch,
	"xargs":       unwrapXargs,
}

// wrapperNames is the set of command names unwrap handles.
var wrapperNames = func() map[string]bool {
	m := make(map[string]bool, len(wrapperTable))
	for name := range wrapperTable {
		m[name] = true
	}
	return m
}()

func (u *unwrapped) fail(format string, a ...any) {
	if u.Opaque == "" {
		u.Opaque = fmt.Sprintf(format, a...)
	}
}

// run records one inner argv, copied so the caller may modify it.
func (u *unwrapped) run(argv []Word) {
	u.Inners = append(u.Inners, append([]Word(nil), argv...))
}

// grammarFailed copies a getopt error into u; it reports whether there was one.
func (u *unwrapped) grammarFailed(g *optScanner) bool {
	if g.err == "" {
		return false
	}
	u.fail("%s", g.err)
	return true
}

func wordRef(w Word) *Word { return &w }

// describedWord makes a dynamic word for a value no word names.
func describedWord(s string) *Word { return &Word{Value: s, Dynamic: true} }

// joinArgv joins words with sep; the result is dynamic if any part is.
func joinArgv(ws []Word, sep string) Word {
	var b strings.Builder
	dyn := false
	for i, w := range ws {
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(w.Value)
		dyn = dyn || w.Dynamic
	}
	return Word{Value: b.String(), Dynamic: dyn}
}

// codeShells are the shells whose -c code the analyzer can parse; a wrapper
// told to use any other program as "the shell" runs something else.
var codeShells = map[string]bool{"sh": true, "bash": true, "dash": true, "ash": true}

func isCodeShell(w Word) bool {
	if w.Dynamic {
		return false
	}
	return codeShells[w.Value[strings.LastIndexByte(w.Value, '/')+1:]]
}

// unwrapSimple parses a wrapper of the form "TOOL [OPTION]... COMMAND [ARG]...":
// every option only tunes how the command runs. It returns the operands, or
// nil with done set when the tool stops before running anything (--help,
// --version, an error recorded in u).
func unwrapSimple(u *unwrapped, opts *getopt, args []Word, quits ...string) (rest []Word, done bool) {
	g := opts.scan(args)
	for {
		o, ok := g.next()
		if !ok {
			break
		}
		if o.id == "help" || o.id == "version" || slices.Contains(quits, o.id) {
			return nil, true
		}
	}
	if u.grammarFailed(g) {
		return nil, true
	}
	return g.rest(), false
}

// runOrMissing records rest as the inner command, or makes u opaque when
// there is none (the tool would stop with a usage error).
func runOrMissing(u *unwrapped, rest []Word) {
	if len(rest) == 0 {
		u.fail("missing command")
		return
	}
	u.run(rest)
}

// ---------------------------------------------------------------------------
// Shell builtins (bash's internal_getopt: clusters, "--", "-" is an operand,
// --help prints help; long options are otherwise errors).

// bashBuiltinOptions parses the options of a bash builtin taking the flags in
// flags (a trailing ':' after a letter means it takes an argument). It
// returns the flags seen and the operands, or done when nothing runs.
func bashBuiltinOptions(u *unwrapped, flags string, args []Word) (seen map[byte]bool, rest []Word, done bool) {
	seen = map[byte]bool{}
	i := 0
	for i < len(args) {
		w := args[i]
		if w.Dynamic {
			u.fail("dynamic word %s where an option may stand", w.Value)
			return nil, nil, true
		}
		v := w.Value
		if v == "--" {
			i++
			break
		}
		if v == "--help" {
			return nil, nil, true
		}
		if len(v) < 2 || v[0] != '-' {
			break
		}
		i++
		for k := 1; k < len(v); k++ {
			c := v[k]
			p := strings.IndexByte(flags, c)
			if c == ':' || p < 0 {
				u.fail("unknown option -%c", c)
				return nil, nil, true
			}
			seen[c] = true
			if p+1 < len(flags) && flags[p+1] == ':' {
				if k+1 == len(v) {
					if i >= len(args) {
						u.fail("option -%c needs an argument", c)
						return nil, nil, true
					}
					i++
				}
				break
			}
		}
	}
	return seen, args[i:], false
}

func unwrapCommand(u *unwrapped, args []Word) {
	seen, rest, done := bashBuiltinOptions(u, "pvV", args)
	if done || seen['v'] || seen['V'] {
		return // -v/-V describe the command instead of running it
	}
	if len(rest) > 0 {
		u.run(rest)
	}
}

func unwrapBuiltin(u *unwrapped, args []Word) {
	_, rest, done := bashBuiltinOptions(u, "", args)
	if !done && len(rest) > 0 {
		u.run(rest)
	}
}

func unwrapExec(u *unwrapped, args []Word) {
	seen, rest, done := bashBuiltinOptions(u, "cla:", args)
	if done || len(rest) == 0 {
		return // exec without a command only applies its redirections
	}
	u.ClearEnv = seen['c']
	u.run(rest)
}

// ---------------------------------------------------------------------------
// coreutils

var envGetopt = getopt{short: "+C:iS:u:v0", long: longs("ignore-environment=i", "null=0", "unset:=u",
	"chdir:=C", "default-signal::", "ignore-signal::", "block-signal::", "list-signal-handling", "debug=v",
	"split-string:=S", "help", "version")}

// maxEnvSplits bounds env -S re-parsing; each split shortens argv, so this is
// only a guard against pathological input.
const maxEnvSplits = 256

func unwrapEnv(u *unwrapped, args []Word) {
	g := envGetopt.scan(args)
	var chdir *Word
	nul := false
	splits := 0
	for {
		o, ok := g.next()
		if !ok {
			break
		}
		switch o.id {
		case "help", "version":
			return
		case "i":
			u.ClearEnv = true
		case "0":
			nul = true
		case "u":
			if o.arg.Dynamic {
				u.fail("dynamic variable name %s for -u", o.arg.Value)
				return
			}
			u.Unsets = append(u.Unsets, o.arg.Value)
		case "C":
			chdir = wordRef(o.arg)
		case "S":
			if o.arg.Dynamic {
				u.fail("dynamic -S string %s", o.arg.Value)
				return
			}
			if splits++; splits > maxEnvSplits {
				u.fail("too many -S strings")
				return
			}
			words, err := splitEnvString(o.arg.Value)
			if err != "" {
				u.fail("-S: %s", err)
				return
			}
			// env splices the split words in place of the option and
			// parses again from them, so they may hold options too.
			split := make([]Word, len(words))
			for i, s := range words {
				split[i] = Word{Value: s}
			}
			g.splice(split)
		}
	}
	if u.grammarFailed(g) {
		return
	}
	rest := g.rest()
	if len(rest) > 0 && !rest[0].Dynamic && rest[0].Value == "-" {
		u.ClearEnv = true // a mere "-" implies -i
		rest = rest[1:]
	}
	for len(rest) > 0 {
		if rest[0].Dynamic {
			u.fail("dynamic word %s where NAME=VALUE or the command may stand", rest[0].Value)
			return
		}
		if !strings.Contains(rest[0].Value, "=") {
			break
		}
		u.Assigns = append(u.Assigns, rest[0])
		rest = rest[1:]
	}
	switch {
	case len(rest) == 0 && chdir != nil:
		u.fail("-C needs a command")
	case len(rest) == 0:
		// env without a command prints the environment.
	case nul:
		u.fail("-0 cannot be used with a command")
	default:
		u.Chdir = chdir
		u.run(rest)
	}
}

// splitEnvString splits an env -S string as coreutils does: whitespace
// separates; single quotes keep everything but \\ and \'; double quotes
// allow escapes; \_ is a separator outside double quotes and a space inside;
// \c ends the string; # at the start of a word begins a comment; ${NAME}
// expands from the environment (unknown here, so it is refused).
func splitEnvString(s string) (words []string, err string) {
	var cur []byte
	sep := true // the last thing seen separates words
	started := false
	sq, dq := false, false
	startArg := func() {
		if sep {
			if started {
				words = append(words, string(cur))
			}
			cur, started, sep = cur[:0], true, false
		}
	}
	i := 0
loop:
	for i < len(s) {
		c := s[i]
		switch c {
		case '\'':
			if !dq {
				sq = !sq
				startArg()
				i++
				continue
			}
		case '"':
			if !sq {
				dq = !dq
				startArg()
				i++
				continue
			}
		case ' ', '\t', '\n', '\v', '\f', '\r':
			if !sq && !dq {
				sep = true
				for i < len(s) && strings.IndexByte(" \t\n\v\f\r", s[i]) >= 0 {
					i++
				}
				continue
			}
		case '#':
			if sep {
				break loop
			}
		case '\\':
			if sq && (i+1 >= len(s) || (s[i+1] != '\\' && s[i+1] != '\'')) {
				break
			}
			i++
			if i >= len(s) {
				return nil, "invalid backslash at end of string"
			}
			c = s[i]
			switch c {
			case '"', '#', '$', '\'', '\\':
			case '_':
				if !dq {
					i++
					sep = true
					continue
				}
				c = ' '
			case 'c':
				if dq {
					return nil, `'\c' must not appear in double-quoted string`
				}
				break loop
			case 'f':
				c = '\f'
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			case 'v':
				c = '\v'
			default:
				return nil, fmt.Sprintf("invalid sequence '\\%c'", c)
			}
		case '$':
			if !sq {
				return nil, "${NAME} expands from the environment"
			}
		}
		startArg()
		cur = append(cur, c)
		i++
	}
	if i >= len(s) && (sq || dq) {
		return nil, "no terminating quote"
	}
	if started {
		words = append(words, string(cur))
	}
	return words, ""
}

var niceGetopt = getopt{short: "+n:", long: longs("adjustment:=n", "help", "version")}

func unwrapNice(u *unwrapped, args []Word) {
	g := niceGetopt.scan(args)
	adjusted := false
	for {
		// nice first takes a legacy "-N", "--N" or "-+N" adjustment.
		if w, ok := g.peek(); ok && !w.Dynamic {
			if s := w.Value; len(s) > 1 && s[0] == '-' {
				k := 1
				if s[1] == '-' || s[1] == '+' {
					k = 2
				}
				if k < len(s) && s[k] >= '0' && s[k] <= '9' {
					adjusted = true
					g.skip()
					continue
				}
			}
		}
		o, ok := g.next()
		if !ok {
			break
		}
		switch o.id {
		case "help", "version":
			return
		case "n":
			adjusted = true
		}
	}
	if u.grammarFailed(g) {
		return
	}
	rest := g.rest()
	if len(rest) == 0 {
		if adjusted {
			u.fail("an adjustment needs a command")
		}
		return // nice alone prints the niceness
	}
	u.run(rest)
}

var nohupGetopt = getopt{short: "+", long: longs("help", "version")}

func unwrapNohup(u *unwrapped, args []Word) {
	if rest, done := unwrapSimple(u, &nohupGetopt, args); !done {
		runOrMissing(u, rest)
	}
}

var timeoutGetopt = getopt{short: "+k:s:v", long: longs("kill-after:=k", "signal:=s", "verbose=v",
	"foreground", "preserve-status", "help", "version")}

func unwrapTimeout(u *unwrapped, args []Word) {
	rest, done := unwrapSimple(u, &timeoutGetopt, args)
	switch {
	case done:
	case len(rest) == 0:
		u.fail("missing duration")
	case len(rest) == 1:
		u.fail("missing command")
	default:
		u.run(rest[1:])
	}
}

var stdbufGetopt = getopt{short: "+i:o:e:", long: longs("input:=i", "output:=o", "error:=e", "help", "version")}

func unwrapStdbuf(u *unwrapped, args []Word) {
	g := stdbufGetopt.scan(args)
	modes := 0
	for {
		o, ok := g.next()
		if !ok {
			break
		}
		if o.id == "help" || o.id == "version" {
			return
		}
		modes++
	}
	if u.grammarFailed(g) {
		return
	}
	rest := g.rest()
	switch {
	case len(rest) == 0:
		u.fail("missing command")
	case modes == 0:
		u.fail("no buffering mode option")
	default:
		u.run(rest)
	}
}

var chrootGetopt = getopt{short: "+", long: longs("groups:", "userspec:", "skip-chdir", "help", "version")}

func unwrapChroot(u *unwrapped, args []Word) {
	u.Privilege = true
	g := chrootGetopt.scan(args)
	skip := false
	for {
		o, ok := g.next()
		if !ok {
			break
		}
		switch o.id {
		case "help", "version":
			return
		case "skip-chdir":
			skip = true
		}
	}
	if u.grammarFailed(g) {
		return
	}
	rest := g.rest()
	if len(rest) == 0 {
		u.fail("missing operand")
		return
	}
	u.Root = wordRef(rest[0])
	if !skip {
		u.Chdir = &Word{Value: "/"}
	}
	if len(rest) == 1 {
		u.fail("without command runs an interactive shell")
		return
	}
	u.run(rest[1:])
}

// /usr/bin/time (GNU time 1.9); bash's time keyword never reaches here.
var timeGetopt = getopt{short: "+af:o:pqvV", long: longs("append=a", "format:=f", "output-file:=o",
	"portability=p", "quiet=q", "verbose=v", "help", "version=V")}

func unwrapTime(u *unwrapped, args []Word) {
	if rest, done := unwrapSimple(u, &timeGetopt, args, "V"); !done {
		runOrMissing(u, rest)
	}
}

// ---------------------------------------------------------------------------
// util-linux 2.38

var setsidGetopt = getopt{short: "+Vhcfw", long: longs("ctty=c", "fork=f", "wait=w", "help=h", "version=V")}

func unwrapSetsid(u *unwrapped, args []Word) {
	if rest, done := unwrapSimple(u, &setsidGetopt, args, "h", "V"); !done {
		runOrMissing(u, rest)
	}
}

var flockGetopt = getopt{short: "+sexnoFuw:E:hV", long: longs("shared=s", "exclusive=x", "unlock=u",
	"nonblocking=n", "nb=n", "timeout:=w", "wait:=w", "conflict-exit-code:=E", "close=o", "no-fork=F",
	"verbose", "help=h", "version=V")}

func unwrapFlock(u *unwrapped, args []Word) {
	g := flockGetopt.scan(args)
	noFork, closeFD := false, false
	for {
		o, ok := g.next()
		if !ok {
			break
		}
		switch o.id {
		case "h", "V":
			return
		case "F":
			noFork = true
		case "o":
			closeFD = true
		}
	}
	if u.grammarFailed(g) {
		return
	}
	rest := g.rest()
	switch {
	case noFork && closeFD:
		u.fail("--no-fork and --close are incompatible")
	case len(rest) == 0:
		u.fail("missing file or descriptor")
	case len(rest) == 1:
		// flock FD only takes the lock.
	case rest[1].Dynamic:
		u.fail("dynamic word %s where -c or the command may stand", rest[1].Value)
	case rest[1].Value == "-c" || rest[1].Value == "--command":
		if len(rest) != 3 {
			u.fail("%s needs exactly one command argument", rest[1].Value)
			return
		}
		u.Code = append(u.Code, rest[2])
	default:
		u.run(rest[1:])
	}
}

var ioniceGetopt = getopt{short: "+c:n:p:P:u:tVh", long: longs("classdata:=n", "class:=c", "help=h",
	"ignore=t", "pid:=p", "pgid:=P", "uid:=u", "version=V")}

func unwrapIonice(u *unwrapped, args []Word) {
	g := ioniceGetopt.scan(args)
	targets := false
	for {
		o, ok := g.next()
		if !ok {
			break
		}
		switch o.id {
		case "h", "V":
			return
		case "p", "P", "u":
			targets = true // the operands are more process ids
		}
	}
	if u.grammarFailed(g) || targets {
		return
	}
	if rest := g.rest(); len(rest) > 0 {
		u.run(rest)
	}
}

var tasksetGetopt = getopt{short: "+apchV", long: longs("all-tasks=a", "pid=p", "cpu-list=c", "help=h", "version=V")}

func unwrapTaskset(u *unwrapped, args []Word) {
	g := tasksetGetopt.scan(args)
	pid := false
	for {
		o, ok := g.next()
		if !ok {
			break
		}
		switch o.id {
		case "h", "V":
			return
		case "p":
			pid = true
		}
	}
	if u.grammarFailed(g) {
		return
	}
	rest := g.rest()
	switch {
	case pid:
		if len(rest) < 1 || len(rest) > 2 {
			u.fail("-p takes [MASK] PID")
		}
	case len(rest) < 2:
		u.fail("missing mask or command")
	default:
		u.run(rest[1:])
	}
}

var unshareGetopt = getopt{short: "+fhVmuinpCTUrR:w:S:G:c", long: longs("help=h", "version=V", "mount::=m",
	"uts::=u", "ipc::=i", "net::=n", "pid::=p", "user::=U", "cgroup::=C", "time::=T", "fork=f", "kill-child::",
	"mount-proc::", "map-user:", "map-users:", "map-group:", "map-groups:", "map-root-user=r",
	"map-current-user=c", "map-auto", "propagation:", "setgroups:", "keep-caps", "setuid:=S", "setgid:=G",
	"root:=R", "wd:=w", "monotonic:", "boottime:")}

func unwrapUnshare(u *unwrapped, args []Word) {
	u.Privilege = true
	g := unshareGetopt.scan(args)
	var root, wd *Word
	for {
		o, ok := g.next()
		if !ok {
			break
		}
		switch o.id {
		case "h", "V":
			return
		case "R":
			root = wordRef(o.arg)
		case "w":
			wd = wordRef(o.arg)
		}
	}
	if u.grammarFailed(g) {
		return
	}
	rest := g.rest()
	if len(rest) == 0 {
		u.fail("without command runs an interactive shell")
		return
	}
	u.Root = root
	if wd == nil && root != nil {
		wd = &Word{Value: "/"} // unshare changes to the new root
	}
	u.Chdir = wd
	u.run(rest)
}

var nsenterGetopt = getopt{short: "+ahVt:m::u::i::n::p::C::U::T::S:G:r::w::W:FZ", long: longs("all=a",
	"help=h", "version=V", "target:=t", "mount::=m", "uts::=u", "ipc::=i", "net::=n", "pid::=p", "user::=U",
	"cgroup::=C", "time::=T", "setuid:=S", "setgid:=G", "preserve-credentials", "root::=r", "wd::=w",
	"wdns:=W", "no-fork=F", "follow-context=Z")}

func unwrapNsenter(u *unwrapped, args []Word) {
	u.Privilege = true
	g := nsenterGetopt.scan(args)
	var root, wd *Word
	for {
		o, ok := g.next()
		if !ok {
			break
		}
		switch o.id {
		case "h", "V":
			return
		case "a", "m":
			// Another mount namespace: every path may name something else.
			if root == nil {
				root = describedWord("(mount namespace of the target)")
			}
		case "r":
			if o.hasArg {
				root = wordRef(o.arg)
			} else {
				root = describedWord("(root of the target)")
			}
		case "w":
			if o.hasArg {
				wd = wordRef(o.arg)
			} else {
				wd = describedWord("(working directory of the target)")
			}
		case "W":
			wd = wordRef(o.arg)
		}
	}
	if u.grammarFailed(g) {
		return
	}
	rest := g.rest()
	if len(rest) == 0 {
		u.fail("without command runs an interactive shell")
		return
	}
	u.Root, u.Chdir = root, wd
	u.run(rest)
}

var setprivGetopt = getopt{short: "+dhV", long: longs("dump=d", "nnp", "no-new-privs=nnp", "inh-caps:",
	"ambient-caps:", "list-caps", "ruid:", "euid:", "rgid:", "egid:", "reuid:", "regid:", "clear-groups",
	"keep-groups", "init-groups", "groups:", "bounding-set:", "securebits:", "pdeathsig:", "selinux-label:",
	"apparmor-profile:", "reset-env", "help=h", "version=V")}

func unwrapSetpriv(u *unwrapped, args []Word) {
	u.Privilege = true
	g := setprivGetopt.scan(args)
	query := false
	for {
		o, ok := g.next()
		if !ok {
			break
		}
		switch o.id {
		case "h", "V":
			return
		case "d", "list-caps":
			query = true // --dump and --list-caps print and exit
		case "reset-env":
			u.ClearEnv = true
		}
	}
	if u.grammarFailed(g) || query {
		return
	}
	runOrMissing(u, g.rest())
}

var chrtGetopt = getopt{short: "+abdD:fiphmoP:T:rRvV", long: longs("all-tasks=a", "batch=b", "deadline=d",
	"fifo=f", "help=h", "idle=i", "max=m", "other=o", "pid=p", "reset-on-fork=R", "rr=r", "sched-deadline:=D",
	"sched-period:=P", "sched-runtime:=T", "verbose=v", "version=V")}

func unwrapChrt(u *unwrapped, args []Word) {
	g := chrtGetopt.scan(args)
	pid := false
	for {
		o, ok := g.next()
		if !ok {
			break
		}
		switch o.id {
		case "h", "V", "m":
			return // --max prints the priority ranges and exits
		case "p":
			pid = true
		}
	}
	if u.grammarFailed(g) || pid {
		return
	}
	rest := g.rest()
	if len(rest) < 2 {
		u.fail("missing priority or command")
		return
	}
	u.run(rest[1:])
}

var prlimitGetopt = getopt{short: "+c::d::e::f::i::l::m::n::q::r::s::t::u::v::x::y::p:o:vVh", long: longs(
	"pid:=p", "output:=o", "noheadings", "raw", "verbose", "help=h", "version=V",
	"core::=c", "data::=d", "nice::=e", "fsize::=f", "sigpending::=i", "memlock::=l", "rss::=m", "nofile::=n",
	"msgqueue::=q", "rtprio::=r", "stack::=s", "cpu::=t", "nproc::=u", "as::=v", "locks::=x", "rttime::=y")}

func unwrapPrlimit(u *unwrapped, args []Word) {
	g := prlimitGetopt.scan(args)
	pid := false
	for {
		o, ok := g.next()
		if !ok {
			break
		}
		switch o.id {
		case "h", "V":
			return
		case "p":
			pid = true
		}
	}
	if u.grammarFailed(g) {
		return
	}
	rest := g.rest()
	switch {
	case pid && len(rest) > 0:
		u.fail("--pid and a command are mutually exclusive")
	case len(rest) > 0:
		u.run(rest)
	}
}

var scriptGetopt = getopt{short: "aB:c:eE:fI:O:o:qm:T:t::Vh", long: longs("append=a", "command:=c", "echo:=E",
	"return=e", "flush=f", "force", "log-in:=I", "log-out:=O", "log-io:=B", "log-timing:=T", "logging-format:=m",
	"output-limit:=o", "quiet=q", "timing::=t", "version=V", "help=h")}

func unwrapScript(u *unwrapped, args []Word) {
	g := scriptGetopt.scan(args)
	var command *Word
	logs := false
	for {
		o, ok := g.next()
		if !ok {
			break
		}
		switch o.id {
		case "h", "V":
			return
		case "c":
			command = wordRef(o.arg)
		case "I", "O", "B":
			logs = true
		}
	}
	if u.grammarFailed(g) {
		return
	}
	files := len(g.rest())
	switch {
	case files > 1 || (logs && files > 0):
		u.fail("unexpected number of arguments")
	case command == nil:
		u.fail("without -c runs an interactive shell")
	default:
		u.Code = append(u.Code, *command)
	}
}

var suGetopt = getopt{short: "c:fg:G:lmpPs:u:hVw:", long: longs("command:=c", "session-command:=C", "fast=f",
	"login=l", "preserve-environment=p", "pty=P", "shell:=s", "group:=g", "supp-group:=G", "user:=u",
	"whitelist-environment:=w", "help=h", "version=V")}

// unwrapSu handles su and runuser (util-linux su-common.c). Both permute
// their arguments, so options may follow the user name.
func unwrapSu(u *unwrapped, args []Word) {
	u.Privilege = true
	runuser := u.Wrapper == "runuser"
	g := suGetopt.scan(args)
	var command, shell, user *Word
	login, fast := false, false
	for {
		o, ok := g.next()
		if !ok {
			break
		}
		switch o.id {
		case "h", "V":
			return
		case "c", "C":
			command = wordRef(o.arg)
		case "f":
			fast = true
		case "l":
			login = true
		case "s":
			shell = wordRef(o.arg)
		case "u":
			if !runuser {
				u.fail("-u is only for runuser")
				return
			}
			user = wordRef(o.arg)
		}
	}
	if u.grammarFailed(g) {
		return
	}
	ops := g.rest()
	if len(ops) > 0 {
		if ops[0].Dynamic {
			u.fail("dynamic word %s where - or the user may stand", ops[0].Value)
			return
		}
		if ops[0].Value == "-" {
			login = true
			ops = ops[1:]
		}
	}
	if user != nil { // runuser -u USER COMMAND: no shell involved
		if shell != nil || fast || command != nil || login {
			u.fail("-u excludes --shell, --fast, --command and --login")
			return
		}
		runOrMissing(u, ops)
		return
	}
	target := Word{Value: "root"}
	if len(ops) > 0 {
		target, ops = ops[0], ops[1:]
	}
	if login {
		u.Chdir = &Word{Value: "~" + target.Value, Dynamic: true}
	}
	switch {
	case command == nil && len(ops) > 0:
		u.fail("passes its arguments to the user's shell")
	case command == nil:
		u.fail("without -c runs an interactive shell")
	case shell != nil && !isCodeShell(*shell):
		u.fail("-s %s runs the command with a shell the analyzer cannot parse", shell.Value)
	default:
		// Further operands become the shell's positional parameters.
		u.Code = append(u.Code, *command)
	}
}

// ---------------------------------------------------------------------------
// sudo 1.9.13 (src/parse_args.c)

var sudoGetopt = getopt{short: "+Aa:BbC:c:D:Eeg:Hh::iKklNnPp:R:r:SsT:t:U:u:Vv", long: longs("background=b",
	"preserve-env::=E", "edit=e", "set-home=H", "login=i", "remove-timestamp=K", "list=l", "preserve-groups=P",
	"shell=s", "other-user:=U", "validate=v", "askpass=A", "auth-type:=a", "bell=B", "close-from:=C",
	"login-class:=c", "chdir:=D", "group:=g", "help=h", "host:", "reset-timestamp=k", "no-update=N",
	"non-interactive=n", "prompt:=p", "chroot:=R", "role:=r", "stdin=S", "command-timeout:=T", "type:=t",
	"user:=u", "version=V")}

// sudo modes; "run" is the default.
const (
	sudoRun = iota
	sudoEdit
	sudoHelp
	sudoKill
	sudoList
	sudoValidate
	sudoVersion
)

// sudoIsEnvar mirrors sudo's is_envar: a word that is not an option and
// sets a variable.
func sudoIsEnvar(v string) bool {
	return v != "" && v[0] != '/' && v[0] != '=' && strings.Contains(v, "=")
}

func unwrapSudo(u *unwrapped, args []Word) {
	u.Privilege = true
	g := sudoGetopt.scan(args)
	mode := sudoRun
	modeSet := false
	setMode := func(m int) bool {
		if modeSet && mode != m {
			u.fail("only one of -e, -h, -i, -K, -l, -s, -v or -V may be given")
			return false
		}
		mode, modeSet = m, true
		return true
	}
	var chdir, root *Word
	runas := "root"
	shell, login, ignoreTicket, preserveAll := false, false, false, false
	for {
		o, ok := g.next()
		if !ok {
			if g.err != "" {
				break
			}
			// Words setting variables may stand among the options,
			// but not after "--".
			prev, _ := g.prev()
			w, more := g.peek()
			if isWord(prev, "--") || !more || !sudoIsEnvar(w.Value) {
				break
			}
			if prev.Dynamic {
				u.fail("dynamic word %s before %s", prev.Value, w.Value)
				return
			}
			u.Assigns = append(u.Assigns, w)
			g.skip()
			continue
		}
		switch o.id {
		case "a", "c":
			u.fail("%s is not supported on this system", o)
			return
		case "E":
			if !o.hasArg {
				preserveAll = true
			}
		case "e":
			if !setMode(sudoEdit) {
				return
			}
		case "h":
			if !o.hasArg {
				// "-h host" (the word exactly "-h" followed by a word
				// that is neither an option nor a variable) names a host;
				// otherwise -h asks for help.
				prev, _ := g.prev()
				if next, ok := g.peek(); ok && isWord(prev, "-h") {
					if next.Dynamic {
						u.fail("dynamic word %s after -h", next.Value)
						return
					}
					if !strings.HasPrefix(next.Value, "-") && !sudoIsEnvar(next.Value) {
						g.skip()
						continue
					}
				}
				if !setMode(sudoHelp) {
					return
				}
			}
		case "i":
			login = true
		case "s":
			shell = true
		case "K":
			if !setMode(sudoKill) {
				return
			}
		case "k":
			ignoreTicket = true
		case "l":
			if !setMode(sudoList) { // -ll asks for the long format
				return
			}
		case "v":
			if !setMode(sudoValidate) {
				return
			}
		case "V":
			if !setMode(sudoVersion) {
				return
			}
		case "D":
			chdir = wordRef(o.arg)
		case "R":
			root = wordRef(o.arg)
		case "u":
			runas = o.arg.Value
		}
	}
	if u.grammarFailed(g) {
		return
	}
	rest := g.rest()
	if login && shell {
		u.fail("-i and -s are exclusive")
		return
	}
	if login && preserveAll {
		u.fail("-i and -E are exclusive")
		return
	}
	switch mode {
	case sudoEdit:
		u.fail("-e edits files as another user")
		return
	case sudoList:
		return // with a command, -l only checks whether it may run
	case sudoHelp, sudoKill, sudoValidate, sudoVersion:
		if len(rest) > 0 {
			u.fail("this mode takes no command")
		}
		return
	}
	if ignoreTicket && len(rest) == 0 && !shell && !login {
		return // sudo -k alone only invalidates the timestamp
	}
	u.Root = root
	u.Chdir = chdir
	if login && chdir == nil {
		u.Chdir = &Word{Value: "~" + runas, Dynamic: true}
	}
	switch {
	case (shell || login) && len(rest) > 0:
		u.Code = append(u.Code, sudoShellCommand(rest))
	case shell || login || len(rest) == 0:
		u.fail("without command runs an interactive shell")
	default:
		u.run(rest)
	}
}

// sudoShellCommand is the string sudo -s/-i hands to "$SHELL -c": the
// arguments joined by spaces, every byte other than [A-Za-z0-9_$-] escaped
// with a backslash. So `sudo -s 'a b'` runs the command named "a b", while
// $ keeps working as an expansion.
func sudoShellCommand(args []Word) Word {
	var b strings.Builder
	dyn := false
	for i, w := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		for k := 0; k < len(w.Value); k++ {
			c := w.Value[k]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '$') {
				b.WriteByte('\\')
			}
			b.WriteByte(c)
		}
		dyn = dyn || w.Dynamic
	}
	return Word{Value: b.String(), Dynamic: dyn}
}

func unwrapSudoedit(u *unwrapped, _ []Word) {
	u.Privilege = true
	u.fail("edits files as another user")
}

// doas (OpenDoas 6.8): plain getopt.
var doasGetopt = getopt{short: "+C:Lnsu:"}

func unwrapDoas(u *unwrapped, args []Word) {
	u.Privilege = true
	g := doasGetopt.scan(args)
	check, shell := false, false
	for {
		o, ok := g.next()
		if !ok {
			break
		}
		switch o.id {
		case "L":
			return // clears persisted authentications and exits
		case "C":
			check = true
		case "s":
			shell = true
		}
	}
	if u.grammarFailed(g) {
		return
	}
	rest := g.rest()
	switch {
	case check:
		if shell {
			u.fail("-C excludes -s")
		}
		// -C only checks the configuration (and whether rest may run).
	case shell && len(rest) > 0:
		u.fail("-s takes no command")
	case shell:
		u.fail("-s runs an interactive shell")
	default:
		runOrMissing(u, rest)
	}
}

// pkexec parses its few options by hand, exact words only.
func unwrapPkexec(u *unwrapped, args []Word) {
	u.Privilege = true
	i := 0
	quit, keepCwd, user := false, false, false
scan:
	for i < len(args) {
		w := args[i]
		if w.Dynamic {
			u.fail("dynamic word %s where an option may stand", w.Value)
			return
		}
		switch w.Value {
		case "--help", "--version":
			quit = true
		case "--user", "-u":
			if user {
				u.fail("--user given twice")
				return
			}
			user = true
			if i++; i >= len(args) {
				u.fail("--user needs an argument")
				return
			}
		case "--disable-internal-agent":
		case "--keep-cwd":
			keepCwd = true
		default:
			break scan
		}
		i++
	}
	if quit {
		return
	}
	rest := args[i:]
	switch {
	case len(rest) == 0:
		u.fail("without a program runs the user's shell")
	case strings.HasPrefix(rest[0].Value, "-"):
		u.fail("unknown option %s", rest[0].Value)
	default:
		if !keepCwd {
			u.Chdir = describedWord("~ (home of the target user)")
		}
		u.run(rest)
	}
}

// capsh (libcap 2.66) takes only --name or --name=value words, in order;
// "--" and "-+" hand the remaining words to the shell (/bin/bash unless
// --shell=), "==" and "=+" to capsh itself.
var capshFlags = map[string]bool{
	"--current": true, "--has-ambient": true, "--has-no-new-privs": true,
	"--help": true, "-h": true, "--license": true, "--mode": true,
	"--modes": true, "--no-new-privs": true, "--noamb": true, "--noenv": true,
	"--print": true, "--quiet": true, "--strict": true,
}

var capshValued = map[string]bool{
	"addamb": true, "cap-uid": true, "caps": true, "chroot": true,
	"decode": true, "delamb": true, "drop": true, "explain": true,
	"forkfor": true, "gid": true, "groups": true, "has-a": true,
	"has-b": true, "has-i": true, "has-p": true, "iab": true, "inh": true,
	"inmode": true, "is-uid": true, "is-gid": true, "keep": true,
	"killit": true, "mode": true, "secbits": true, "shell": true,
	"suggest": true, "supports": true, "uid": true, "user": true,
}

func unwrapCapsh(u *unwrapped, args []Word) {
	u.Privilege = true
	shell := Word{Value: "/bin/bash"}
	for i, w := range args {
		if w.Dynamic {
			u.fail("dynamic word %s where an option may stand", w.Value)
			return
		}
		v := w.Value
		switch v {
		case "--", "-+":
			capshShell(u, shell, args[i+1:])
			return
		case "==", "=+":
			u.fail("%s runs capsh again", v)
			return
		}
		if capshFlags[v] {
			if v == "--help" || v == "-h" {
				return
			}
			continue
		}
		name, val, eq := strings.Cut(strings.TrimPrefix(v, "--"), "=")
		if !strings.HasPrefix(v, "--") || !eq || !capshValued[name] {
			u.fail("unknown argument %s", v)
			return
		}
		switch name {
		case "shell":
			shell = Word{Value: val}
		case "chroot":
			u.Root = &Word{Value: val}
		}
	}
	// Without "--" capsh exits once its arguments are applied.
}

func capshShell(u *unwrapped, shell Word, args []Word) {
	switch {
	case !isCodeShell(shell):
		u.fail("-- runs %s, not a shell the analyzer can parse", shell.Value)
	case len(args) == 0:
		u.fail("-- without -c runs an interactive shell")
	case len(args) >= 2 && !args[0].Dynamic && args[0].Value == "-c":
		u.Code = append(u.Code, args[1])
	default:
		u.fail("-- passes its arguments to the shell")
	}
}

func unwrapSystemdRun(u *unwrapped, _ []Word) {
	u.Privilege = true
	u.fail("hands the command to the service manager")
}

func nestedSandbox(u *unwrapped, _ []Word) {
	u.fail("nested sandbox tool")
}

// busybox runs its first operand as an applet; the caller unwraps the
// applet's argv again (timeout, env, ... share the GNU grammars closely
// enough that an applet-only option makes the result opaque, not wrong).
func unwrapBusybox(u *unwrapped, args []Word) {
	if len(args) == 0 {
		return // prints the applet list
	}
	if args[0].Dynamic {
		u.fail("dynamic applet name %s", args[0].Value)
		return
	}
	switch v := args[0].Value; {
	case strings.HasPrefix(v, "--list"), v == "--show", v == "--install", v == "--help":
		return
	}
	u.run(args)
}

// ---------------------------------------------------------------------------
// strace 6.1. Its long option table is large and version-specific, so long
// options must be spelled in full (an abbreviation makes the result opaque
// rather than risk resolving it differently from strace).

var straceGetopt = getopt{short: "+a:Ab:cCdDe:E:fFhiI:kno:O:p:P:qrs:S:tTu:U:vVwxX:yYzZ", exact: true, long: longs(
	"output:=o", "env:=E", "attach:=p", "user:=u", "follow-forks", "output-separately", "trace:",
	"trace-path:", "string-limit:", "summary-only", "summary", "columns:", "absolute-timestamps::",
	"relative-timestamps::", "syscall-times::", "seccomp-bpf", "quiet::", "signal:", "status:", "abbrev:",
	"verbose:", "raw:", "read:", "write:", "fault:", "inject:", "detach-on:", "daemonize::", "interruptible:",
	"instruction-pointer", "syscall-number", "stack-traces", "successful-only", "failed-only", "decode-fds::",
	"decode-pids:", "kvm:", "help=h", "version=V", "output-append-mode", "summary-sort-by:",
	"summary-syscall-overhead:", "summary-wall-clock", "no-abbrev", "strings-in-hex::", "const-print-style:",
	"debug", "summary-columns:", "tips::")}

func unwrapStrace(u *unwrapped, args []Word) {
	g := straceGetopt.scan(args)
	attach := false
	for {
		if w, ok := g.peek(); ok && !w.Dynamic {
			if v := w.Value; strings.HasPrefix(v, "--") && len(v) > 2 {
				name, _, _ := strings.Cut(v[2:], "=")
				if hit, _ := straceGetopt.findLong(name); hit == nil {
					u.fail("option --%s is not understood by the analyzer", name)
					return
				}
			}
		}
		o, ok := g.next()
		if !ok {
			break
		}
		switch o.id {
		case "h", "V":
			return
		case "p":
			attach = true
		case "u":
			u.Privilege = true // runs the command as another user
		case "o":
			// -o '|cmd' or -o '!cmd' pipes the trace into a shell command.
			switch {
			case o.arg.Dynamic:
				u.fail("dynamic -o value %s may name a command", o.arg.Value)
				return
			case strings.HasPrefix(o.arg.Value, "|"), strings.HasPrefix(o.arg.Value, "!"):
				u.Code = append(u.Code, Word{Value: o.arg.Value[1:]})
			}
		case "E":
			switch {
			case o.arg.Dynamic:
				u.fail("dynamic -E value %s", o.arg.Value)
				return
			case strings.Contains(o.arg.Value, "="):
				u.Assigns = append(u.Assigns, o.arg)
			default:
				u.Unsets = append(u.Unsets, o.arg.Value)
			}
		}
	}
	if u.grammarFailed(g) {
		return
	}
	rest := g.rest()
	switch {
	case len(rest) > 0:
		u.run(rest)
	case !attach:
		u.fail("missing command")
	}
}

// ---------------------------------------------------------------------------
// procps watch 4.0.2

var watchGetopt = getopt{short: "+bced::ghq:n:pvtwx", long: longs("color=c", "differences::=d", "help=h",
	"interval:=n", "beep=b", "errexit=e", "chgexit=g", "equexit:=q", "exec=x", "precise=p", "no-title=t",
	"no-wrap=w", "version=v")}

func unwrapWatch(u *unwrapped, args []Word) {
	g := watchGetopt.scan(args)
	exec := false
	for {
		o, ok := g.next()
		if !ok {
			break
		}
		switch o.id {
		case "h", "v":
			return
		case "x":
			exec = true
		}
	}
	if u.grammarFailed(g) {
		return
	}
	rest := g.rest()
	switch {
	case len(rest) == 0:
		u.fail("missing command")
	case exec:
		u.run(rest)
	default:
		// Without -x watch joins its arguments with spaces and runs
		// them with sh -c: quoting the words protects nothing.
		u.Code = append(u.Code, joinArgv(rest, " "))
	}
}

// ---------------------------------------------------------------------------
// findutils 4.9

var xargsGetopt = getopt{short: "+0a:E:e::i::I:l::L:n:oprs:txP:d:", long: longs("null=0", "arg-file:=a",
	"delimiter:=d", "eof::=e", "replace::=i", "max-lines::=l", "max-args:=n", "open-tty=o", "interactive=p",
	"no-run-if-empty=r", "max-chars:=s", "verbose=t", "show-limits", "exit=x", "max-procs:=P",
	"process-slot-var:", "version", "help")}

func unwrapXargs(u *unwrapped, args []Word) {
	g := xargsGetopt.scan(args)
	replace := ""
	var dynReplace *Word
	for {
		o, ok := g.next()
		if !ok {
			break
		}
		switch o.id {
		case "help", "version":
			return
		case "a":
			u.ArgFiles = append(u.ArgFiles, o.arg)
		case "I", "i":
			dynReplace = nil
			switch {
			case !o.hasArg:
				replace = "{}"
			case o.arg.Dynamic:
				dynReplace = wordRef(o.arg)
			default:
				replace = o.arg.Value
			}
		}
	}
	if u.grammarFailed(g) {
		return
	}
	if dynReplace != nil {
		u.fail("dynamic replacement string %s", dynReplace.Value)
		return
	}
	u.StdinArgs = true
	rest := g.rest()
	if len(rest) == 0 {
		u.Inners = [][]Word{{{Value: "echo"}}} // xargs runs echo by default
		return
	}
	u.run(rest)
	if replace != "" {
		// Input replaces the string inside each word holding it.
		for k, w := range u.Inners[0] {
			if strings.Contains(w.Value, replace) {
				u.Inners[0][k].Dynamic = true
			}
		}
	}
}

// findArgs gives the number of arguments each find primary takes; -1 marks
// the exec family, -2 the primaries that print and exit while parsing.
var findArgs = map[string]int{
	"(": 0, ")": 0, "!": 0, ",": 0, "a": 0, "and": 0, "o": 0, "or": 0, "not": 0,
	"daystart": 0, "follow": 0, "nowarn": 0, "warn": 0, "depth": 0, "d": 0,
	"mount": 0, "noleaf": 0, "xdev": 0, "ignore_readdir_race": 0,
	"noignore_readdir_race": 0, "empty": 0, "false": 0, "true": 0,
	"nouser": 0, "nogroup": 0, "readable": 0, "writable": 0, "executable": 0,
	"delete": 0, "print": 0, "print0": 0, "ls": 0, "prune": 0, "quit": 0,
	"regextype": 1, "files0-from": 1, "maxdepth": 1, "mindepth": 1,
	"amin": 1, "anewer": 1, "atime": 1, "cmin": 1, "cnewer": 1, "context": 1,
	"ctime": 1, "fstype": 1, "gid": 1, "group": 1, "ilname": 1, "iname": 1,
	"inum": 1, "ipath": 1, "iregex": 1, "iwholename": 1, "links": 1,
	"lname": 1, "mmin": 1, "mtime": 1, "name": 1, "newer": 1, "path": 1,
	"perm": 1, "regex": 1, "samefile": 1, "size": 1, "type": 1, "uid": 1,
	"used": 1, "user": 1, "wholename": 1, "xtype": 1, "printf": 1,
	"fprint": 1, "fprint0": 1, "fls": 1,
	"fprintf": 2,
	"exec":    -1, "execdir": -1, "ok": -1, "okdir": -1,
	"help": -2, "-help": -2, "version": -2, "-version": -2,
}

// findLooksLikeExpression mirrors find's looks_like_expression: where the
// starting points end and the expression begins.
func findLooksLikeExpression(v string, leading bool) bool {
	switch {
	case v == "":
		return false
	case v[0] == '-':
		return len(v) > 1
	case v == ")" || v == ",":
		return !leading
	case v == "(" || v == "!":
		return true
	}
	return false
}

func unwrapFind(u *unwrapped, args []Word) {
	i := 0
	// Leading options: -H, -L, -P, -D LIST, -Olevel, "--".
lead:
	for i < len(args) {
		w := args[i]
		if w.Dynamic {
			u.fail("dynamic word %s where an option may stand", w.Value)
			return
		}
		switch v := w.Value; {
		case v == "-H", v == "-L", v == "-P":
		case v == "--":
			i++
			break lead
		case v == "-D":
			if i+1 >= len(args) {
				u.fail("-D needs an argument")
				return
			}
			i++
		case strings.HasPrefix(v, "-O"):
		default:
			break lead
		}
		i++
	}
	// Starting points.
	for ; i < len(args); i++ {
		if args[i].Dynamic {
			// It could be "-exec" or "-delete" as well as a path.
			u.fail("dynamic starting point %s", args[i].Value)
			return
		}
		if findLooksLikeExpression(args[i].Value, true) {
			break
		}
	}
	execdir := false
	for i < len(args) {
		w := args[i]
		if w.Dynamic {
			u.fail("dynamic word %s in the expression", w.Value)
			return
		}
		v := w.Value
		if !findLooksLikeExpression(v, false) {
			u.fail("paths must precede expression: %s", v)
			return
		}
		i++
		n, known := 1, true
		if !(strings.HasPrefix(v, "-newer") && len(v) == 8) {
			n, known = findArgs[strings.TrimPrefix(v, "-")]
		}
		switch {
		case !known:
			u.fail("unknown predicate %s", v)
			return
		case n == -2:
			u.Inners, u.Chdir = nil, nil
			return // -help and -version exit before anything runs
		case n == -1:
			next, ok := findExec(u, v, args, i)
			if !ok {
				return
			}
			i = next
			if v == "-execdir" || v == "-okdir" {
				execdir = true
			}
		case i+n > len(args):
			u.fail("missing argument to %s", v)
			return
		default:
			i += n
		}
	}
	if execdir {
		u.Chdir = describedWord("(directory of each file found)")
	}
}

// findExec parses one -exec/-execdir/-ok/-okdir from args[start]: words up
// to ";" or, for -exec and -execdir, up to a "+" right after a word holding
// "{}". It returns the index after the terminator.
func findExec(u *unwrapped, pred string, args []Word, start int) (int, bool) {
	allowPlus := pred == "-exec" || pred == "-execdir"
	sawBraces, braces, plus := false, 0, false
	end := start
	for ; end < len(args); end++ {
		w := args[end]
		if w.Dynamic {
			// It could be the terminator, ending the command early and
			// turning what follows into more of find's expression.
			u.fail("dynamic word %s in %s", w.Value, pred)
			return 0, false
		}
		if w.Value == ";" {
			break
		}
		if allowPlus && w.Value == "+" && sawBraces {
			plus = true
			break
		}
		sawBraces = strings.Contains(w.Value, "{}")
		if sawBraces {
			braces++
		}
	}
	switch {
	case end == start || end >= len(args):
		u.fail("missing argument to %s", pred)
		return 0, false
	case plus && braces > 1:
		u.fail("only one {} is supported with %s ... +", pred)
		return 0, false
	case plus && args[end-1].Value != "{}":
		u.fail("in %s ... + the {} must stand alone", pred)
		return 0, false
	}
	u.run(args[start:end])
	inner := u.Inners[len(u.Inners)-1]
	for k, w := range inner {
		if strings.Contains(w.Value, "{}") {
			inner[k].Dynamic = true // replaced by the file name(s) found
		}
	}
	return end + 1, true
}

// ---------------------------------------------------------------------------
// GNU parallel 20221122 (Perl Getopt::Long, bundling, require_order).
//
// parallel has well over a hundred options, several of which run Perl code
// (--rpl, {= =}, --filter), other programs (--ssh, --compress-program) or
// remote commands (-S). Only the options below are understood; any other
// makes the result opaque. Long names must be written in full (Getopt::Long
// would accept abbreviations, resolved against the whole table).

type parallelOpt struct {
	value bool
	id    string
}

var parallelLong = map[string]parallelOpt{
	"keep-order": {false, "k"}, "keeporder": {false, "k"},
	"group": {false, ""}, "ungroup": {false, ""},
	"line-buffer": {false, ""}, "line-buffered": {false, ""},
	"linebuffer": {false, ""}, "linebuffered": {false, ""}, "lb": {false, ""},
	"null": {false, "group"}, "quote": {false, "q"}, "plus": {false, ""},
	"tag": {false, ""}, "color": {false, ""}, "colour": {false, ""},
	"verbose": {false, ""}, "no-run-if-empty": {false, ""},
	"norunifempty": {false, ""}, "xargs": {false, "group"},
	"progress": {false, ""}, "eta": {false, ""}, "bar": {false, ""},
	"shuf": {false, ""}, "will-cite": {false, ""}, "willcite": {false, ""},
	"silent": {false, ""}, "pipe": {false, "pipe"}, "spreadstdin": {false, "pipe"},
	"round-robin": {false, ""}, "roundrobin": {false, ""},
	"exit": {false, ""}, "interactive": {false, ""}, "dry-run": {false, "quit"},
	"dryrun": {false, "quit"}, "help": {false, "quit"}, "version": {false, "quit"},
	"csv": {false, "group"}, "link": {false, ""}, "xapply": {false, ""},
	"open-tty": {false, ""}, "tty": {false, ""},
	"jobs": {true, ""}, "max-procs": {true, ""}, "maxprocs": {true, ""},
	"arg-file": {true, "a"}, "argfile": {true, "a"},
	"delimiter": {true, "group"}, "max-args": {true, "group"},
	"maxargs": {true, "group"}, "max-replace-args": {true, "group"},
	"maxreplaceargs": {true, "group"}, "col-sep": {true, "group"},
	"colsep": {true, "group"}, "max-chars": {true, "group"},
	"maxchars": {true, "group"}, "delay": {true, ""}, "timeout": {true, ""},
	"retries": {true, ""}, "halt-on-error": {true, ""}, "haltonerror": {true, ""},
	"halt": {true, ""}, "joblog": {true, ""}, "jl": {true, ""},
	"results": {true, ""}, "result": {true, ""}, "res": {true, ""},
	"block-size": {true, ""}, "blocksize": {true, ""}, "block": {true, ""},
	"load": {true, ""}, "memfree": {true, ""}, "nice": {true, ""},
	"tmpdir": {true, ""}, "tempdir": {true, ""}, "term-seq": {true, ""},
	"termseq": {true, ""}, "arg-sep": {true, "argsep"}, "argsep": {true, "argsep"},
	"arg-file-sep": {true, "argfilesep"}, "argfilesep": {true, "argfilesep"},
	"recstart": {true, ""}, "recend": {true, ""},
	"extensionreplace": {true, "repl"}, "er": {true, "repl"},
	"basenamereplace": {true, "repl"}, "bnr": {true, "repl"},
	"dirnamereplace": {true, "repl"}, "dnr": {true, "repl"},
	"basenameextensionreplace": {true, "repl"}, "bner": {true, "repl"},
	"seqreplace": {true, "repl"}, "slotreplace": {true, "repl"},
	"process-slot-var": {true, ""}, "processslotvar": {true, ""},
	"total-jobs": {true, ""}, "totaljobs": {true, ""}, "total": {true, ""},
}

var parallelShort = map[byte]parallelOpt{
	'k': {false, "k"}, 'u': {false, ""}, '0': {false, "group"}, 'q': {false, "q"},
	't': {false, ""}, 'v': {false, ""}, 'r': {false, ""}, 'm': {false, "group"},
	'X': {false, "group"}, 'x': {false, ""}, 'p': {false, ""}, 'o': {false, ""},
	'h': {false, "quit"}, 'V': {false, "quit"},
	'j': {true, ""}, 'P': {true, ""}, 'a': {true, "a"}, 'd': {true, "group"},
	'E': {true, "group"}, 'I': {true, "repl"}, 'n': {true, "group"},
	'N': {true, "group"}, 'C': {true, "group"}, 's': {true, "group"},
	'L': {true, "group"},
}

func unwrapParallel(u *unwrapped, args []Word) {
	argSep, fileSep := ":::", "::::"
	quote, pipe, argFile, grouping := false, false, false, false
	repls := []string{"{"}
	i := 0
	apply := func(name string, o parallelOpt, val Word) bool {
		switch o.id {
		case "quit":
			return false
		case "q":
			quote = true
		case "pipe":
			pipe = true
		case "a":
			argFile = true
			u.ArgFiles = append(u.ArgFiles, val)
		case "group":
			grouping = true
		case "argsep", "argfilesep", "repl":
			if val.Dynamic {
				u.fail("dynamic value %s for %s", val.Value, name)
				return false
			}
			switch o.id {
			case "argsep":
				argSep = val.Value
			case "argfilesep":
				fileSep = val.Value
			default:
				repls = append(repls, val.Value)
			}
		}
		return true
	}
options:
	for i < len(args) {
		w := args[i]
		if w.Dynamic {
			u.fail("dynamic word %s where an option may stand", w.Value)
			return
		}
		v := w.Value
		switch {
		case v == "--":
			i++
			break options
		case strings.HasPrefix(v, "--"):
			name, val, eq := strings.Cut(v[2:], "=")
			o, known := parallelLong[strings.ToLower(name)]
			if !known || len(name) < 2 {
				u.fail("option --%s is not understood by the analyzer", name)
				return
			}
			i++
			arg := Word{Value: val}
			switch {
			case o.value && !eq:
				if i >= len(args) {
					u.fail("option --%s needs a value", name)
					return
				}
				arg = args[i]
				i++
			case !o.value && eq:
				u.fail("option --%s takes no value", name)
				return
			}
			if !apply("--"+name, o, arg) {
				return
			}
		case len(v) > 1 && v[0] == '-':
			i++
			for k := 1; k < len(v); k++ {
				o, known := parallelShort[v[k]]
				if !known {
					u.fail("option -%c is not understood by the analyzer", v[k])
					return
				}
				arg := Word{}
				if o.value {
					if k+1 < len(v) {
						arg = Word{Value: v[k+1:]}
					} else if i < len(args) {
						arg = args[i]
						i++
					} else {
						u.fail("option -%c needs a value", v[k])
						return
					}
				}
				if !apply("-"+string(rune(v[k])), o, arg) {
					return
				}
				if o.value {
					break
				}
			}
		default:
			break options
		}
	}
	isSep := func(w Word) (sep, file bool) {
		if w.Dynamic {
			return false, false
		}
		switch w.Value {
		case argSep, argSep + "+":
			return true, false
		case fileSep, fileSep + "+":
			return true, true
		}
		return false, false
	}
	start := i
	for i < len(args) {
		if sep, _ := isSep(args[i]); sep {
			break
		}
		i++
	}
	command := args[start:i]
	groups, fileGroups := 0, 0
	var values []Word
	inFiles := false
	for i < len(args) {
		if sep, file := isSep(args[i]); sep {
			groups++
			inFiles = file
			if file {
				fileGroups++
			}
		} else {
			values = append(values, args[i])
			if inFiles {
				u.ArgFiles = append(u.ArgFiles, args[i])
			}
		}
		i++
	}
	u.StdinArgs = !pipe && (argFile || fileGroups > 0 || groups == 0)
	if len(command) == 0 {
		// The input itself is the command lines.
		if groups == 1 && fileGroups == 0 && !argFile && !grouping && !pipe {
			u.Code = append(u.Code, values...)
			u.StdinArgs = false
			return
		}
		u.fail("without a command runs its input as commands")
		return
	}
	for _, w := range command {
		if strings.Contains(w.Value, "{=") {
			u.fail("{= =} replacement strings run Perl code")
			return
		}
	}
	var code Word
	if quote {
		parts := make([]Word, len(command))
		for k, w := range command {
			parts[k] = Word{Value: parallelQuote(w.Value), Dynamic: w.Dynamic}
		}
		code = joinArgv(parts, " ")
	} else {
		code = joinArgv(command, " ")
	}
	// Arguments are quoted for the shell and replace the replacement
	// strings in place; inside a quoted region that quoting no longer
	// holds, so the code is only known up to its input then.
	if quote || strings.ContainsAny(code.Value, `'"\`) {
		for _, r := range repls {
			if r != "" && strings.Contains(code.Value, r) {
				code.Dynamic = true
			}
		}
	}
	u.Code = append(u.Code, code)
}

// parallelQuote quotes s as a single shell word.
func parallelQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
