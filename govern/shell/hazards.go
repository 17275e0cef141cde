package shell

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

// hazard is something a tool's own arguments make it do beyond what its argv shows.
type hazard struct {
	Kind   FlagKind
	Detail string // short, for a person: e.g. `tar --checkpoint-action=exec runs a command`
	// Code is shell code the tool hands to `sh -c` (tar --checkpoint-action=exec=CMD,
	// ssh -o ProxyCommand=CMD, git -c core.pager=CMD, ...), so that the analyzer can judge
	// it like any other command text. Nil when there is none or it is not shell code.
	Code *Word
}

// toolHazards inspects one resolved simple command (argv[0] already unwrapped from
// sudo/env/... wrappers). An agent that may not run `sh -c` can still reach a shell
// through a tool's options (GTFOBins), so every option that runs code is reported.
// A dynamic word where an option could stand is reported as FlagOpaque: it might be
// the very option that runs code.
func toolHazards(argv []Word) []hazard {
	return dedupHazards(hazardsOf(argv, 0))
}

// hazardsOf dispatches on argv[0]; depth bounds busybox-in-busybox nesting.
func hazardsOf(argv []Word, depth int) []hazard {
	if len(argv) == 0 || argv[0].Dynamic || depth > 3 {
		return nil
	}
	canon, base := toolName(argv[0].Value)
	switch canon {
	case "":
		return nil
	case "busybox":
		// busybox APPLET ARGS runs the applet as if it were argv[0].
		return hazardsOf(argv[1:], depth+1)
	}
	return toolTable[canon](base, argv[1:])
}

type toolFunc func(base string, args []Word) []hazard

// toolTable maps a canonical tool name to its inspector.
var toolTable = map[string]toolFunc{
	"python": interpHazards(&pythonSpec), "perl": interpHazards(&perlSpec),
	"ruby": interpHazards(&rubySpec), "node": interpHazards(&nodeSpec),
	"php": interpHazards(&phpSpec), "lua": interpHazards(&luaSpec),
	"Rscript": interpHazards(&rscriptSpec), "R": interpHazards(&rSpec),
	"osascript": interpHazards(&osascriptSpec), "expect": interpHazards(&expectSpec),
	"tclsh": tclshHazards, "pwsh": pwshHazards, "deno": denoHazards, "bun": bunHazards,
	"julia": simpleCode("-e", "--eval", "-E", "--print"), "groovy": simpleCode("-e"),
	"elixir": simpleCode("-e", "--eval"), "guile": simpleCode("-c"),
	"racket": simpleCode("-e", "--eval"), "sbcl": simpleCode("--eval"),
	"clisp": simpleCode("-x"), "erl": simpleCode("-eval"), "ghc": simpleCode("-e"),
	"scala": simpleCode("-e"), "kotlin": simpleCode("-e"),
	"fish": shellCode, "csh": shellCode, "tcsh": shellCode, "nu": shellCode,
	"xonsh": shellCode, "elvish": shellCode, "rc": shellCode,
	"awk": awkHazards, "sed": sedHazards, "tar": tarHazards, "zip": zipHazards,
	"ssh": sshHazards, "scp": scpHazards, "sftp": sftpHazards, "rsync": rsyncHazards,
	"git": gitHazards, "make": makeHazards, "vim": vimHazards, "ed": edHazards,
	"emacs": emacsHazards, "emacsclient": emacsHazards, "less": lessHazards,
	"man": manHazards, "sqlite3": sqliteHazards, "gdb": gdbHazards, "lldb": lldbHazards,
	"docker": containerHazards, "podman": containerHazards, "nerdctl": containerHazards,
	"docker-compose": containerHazards, "kubectl": containerHazards, "oc": containerHazards,
	"crictl": containerHazards, "lxc": containerHazards, "incus": containerHazards,
	"crontab": crontabHazards, "at": atHazards, "batch": atHazards,
	"systemd-run": laterHazards, "tmux": tmuxHazards, "screen": screenHazards,
	"nc": ncHazards, "socat": socatHazards, "script": scriptHazards,
	"flock": flockHazards, "watch": watchHazards, "npm": npmHazards, "npx": npmHazards,
	"mysql": mysqlHazards, "psql": psqlHazards,
}

// toolAliases maps names that are not "canonical name plus a version" to their tool.
var toolAliases = map[string]string{
	"python": "python", "pypy": "python", "jython": "python", "ipython": "python", "graalpy": "python",
	"nodejs": "node", "jruby": "ruby", "truffleruby": "ruby", "luajit": "lua", "wish": "tclsh",
	"php-cli": "php", "powershell": "pwsh", "pwsh-preview": "pwsh",
	"gawk": "awk", "mawk": "awk", "nawk": "awk", "busybox-awk": "awk", "original-awk": "awk",
	"onetrue-awk": "awk", "bwk-awk": "awk", "goawk": "awk", "gsed": "sed",
	"gtar": "tar", "bsdtar": "tar", "gmake": "make", "remake": "make",
	"vi": "vim", "nvim": "vim", "view": "vim", "ex": "vim", "rvim": "vim", "rview": "vim",
	"gvim": "vim", "gview": "vim", "vimdiff": "vim", "nvim-qt": "vim", "evim": "vim", "vimx": "vim",
	"vim.basic": "vim", "vim.tiny": "vim", "vim.nox": "vim", "vim.gtk3": "vim", "vim.athena": "vim",
	"emacs-nox": "emacs", "gdb-multiarch": "gdb", "sqlite": "sqlite3",
	"netcat": "nc", "ncat": "nc", "nc.openbsd": "nc", "nc.traditional": "nc", "pnc": "nc",
	"podman-compose": "docker-compose", "mariadb": "mysql", "busybox": "busybox", "toybox": "busybox",
}

// toolName returns the canonical tool name of argv[0] ("" when it has no
// inspector) and its basename, matching versioned names such as python3.11,
// perl5.36 or php8.2 to their tool.
func toolName(path string) (canon, base string) {
	base = path[strings.LastIndexByte(path, '/')+1:]
	s := strings.TrimSuffix(base, ".exe")
	for range 2 {
		if c, ok := toolAliases[s]; ok {
			return c, base
		}
		if _, ok := toolTable[s]; ok {
			return s, base
		}
		s = versionSuffix.ReplaceAllString(s, "")
	}
	return "", base
}

var versionSuffix = regexp.MustCompile(`[-_]?[0-9]+(\.[0-9]+)*(m|d|dm|t|u)?(-dbg)?$`)

// dedupHazards drops repeats (an option given twice), keeping the first.
func dedupHazards(hs []hazard) []hazard {
	var out []hazard
	seen := map[string]bool{}
	for _, h := range hs {
		k := string(h.Kind) + "\x00" + h.Detail
		if h.Code != nil {
			k += fmt.Sprintf("\x00%q\x00%v", h.Code.Value, h.Code.Dynamic)
		}
		if !seen[k] {
			seen[k] = true
			out = append(out, h)
		}
	}
	return out
}

func hz(kind FlagKind, detail string) hazard { return hazard{Kind: kind, Detail: detail} }

func hzCode(kind FlagKind, detail string, code Word) hazard {
	return hazard{Kind: kind, Detail: detail, Code: &code}
}

// litPrefix is the part of w known without running anything: all of a static
// word, or the leading plain characters of a dynamic word's source text (the
// text stops being known at the first quote, $, backquote or backslash).
func litPrefix(w Word) string {
	if !w.Dynamic {
		return w.Value
	}
	for i := 0; i < len(w.Value); i++ {
		if !isPlain(w.Value[i]) {
			return w.Value[:i]
		}
	}
	return w.Value
}

// mayBeOption reports whether w could expand to a word starting with "-".
// Quotes are looked through, so "./$f" is known to be an operand, while
// "$f" and -$f may be options.
func mayBeOption(w Word) bool {
	if !w.Dynamic {
		return strings.HasPrefix(w.Value, "-")
	}
	t := strings.TrimLeft(w.Value, `"'`)
	return t == "" || t[0] == '-' || !isPlain(t[0])
}

func isPlain(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		strings.IndexByte("-_=.,:/+@%^", c) >= 0
}

// isWord reports whether w is statically the string s.
func isWord(w Word, s ...string) bool {
	if w.Dynamic {
		return false
	}
	for _, x := range s {
		if w.Value == x {
			return true
		}
	}
	return false
}

func joinWords(ws []Word) Word {
	var b strings.Builder
	dyn := false
	for i, w := range ws {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w.Value)
		dyn = dyn || w.Dynamic
	}
	return Word{Value: b.String(), Dynamic: dyn}
}

func anyDynamic(ws []Word) bool {
	for _, w := range ws {
		if w.Dynamic {
			return true
		}
	}
	return false
}

// quoteJoin turns words a tool runs as an argv into shell code that parses
// back to the same argv: static words are quoted, dynamic ones keep their
// source text.
func quoteJoin(ws []Word) Word {
	parts := make([]string, len(ws))
	dyn := false
	for i, w := range ws {
		parts[i], dyn = w.Value, dyn || w.Dynamic
		if !w.Dynamic {
			parts[i] = shellQuote(w.Value)
		}
	}
	return Word{Value: strings.Join(parts, " "), Dynamic: dyn}
}

func shellQuote(s string) string {
	plain := s != ""
	for i := 0; i < len(s) && plain; i++ {
		plain = isPlain(s[i]) && s[i] != '^'
	}
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func opaqueArg(base string) hazard {
	return hz(FlagOpaque, base+": a dynamic argument may be an option")
}

// unknownHazards reports, once per command, dynamic words that may be options.
func unknownHazards(base string, p parsed) []hazard {
	if len(p.unknown) > 0 {
		return []hazard{opaqueArg(base)}
	}
	return nil
}

// set makes a set of option ids or names.
func set(names ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

// ---------------------------------------------------------------------------
// Interpreters: an option that takes program text, or no program at all (the
// program is then read from stdin, which a pipe or here-document can fill).

type interp struct {
	g       getopt
	code    map[string]string // option → what it does; %s is its argument
	noStdin map[string]bool   // options that print and exit, or name the program
	stdin   bool              // with no program operand, the program is read from stdin
	extra   func(base string, p parsed) []hazard
}

// interpHazards builds the inspector of an interpreter from its spec.
func interpHazards(it *interp) toolFunc {
	return func(base string, args []Word) []hazard {
		p := it.g.parse(args)
		var out []hazard
		quiet := false
		for _, o := range p.opts {
			if d, ok := it.code[o.id]; ok {
				if strings.Contains(d, "%s") {
					d = fmt.Sprintf(d, o.arg.Value)
				}
				out = append(out, hz(FlagInlineCode, base+" "+o.String()+" "+d))
				if o.arg.Dynamic {
					out = append(out, hz(FlagOpaque, base+" "+o.String()+" runs code known only at run time"))
				}
				quiet = true
			}
			quiet = quiet || it.noStdin[o.id]
		}
		if it.extra != nil {
			out = append(out, it.extra(base, p)...)
		}
		out = append(out, unknownHazards(base, p)...)
		if !quiet && len(p.unknown) == 0 {
			if len(p.operands) == 0 && it.stdin || len(p.operands) > 0 && isStdinWord(p.operands[0]) {
				out = append(out, hz(FlagInlineCode, base+" reads its program from stdin"))
			}
		}
		return out
	}
}

const runsInline = "runs inline code"

var pythonSpec = interp{
	g: getopt{
		short: "+c:m:W:X:",
		long:  longs("check-hash-based-pycs:", "help", "version", "help-env", "help-xoptions", "help-all"),
		stop:  set("c", "m"),
		exact: true,
	},
	// -m runs an installed module, like a script file: not flagged.
	code:    map[string]string{"c": runsInline},
	noStdin: set("h", "?", "V", "m", "help", "version", "help-env", "help-xoptions", "help-all"),
	stdin:   true,
}

func takeAll(rest string) int { return len(rest) }

func takeSet(chars string) func(string) int {
	return func(rest string) int {
		n := 0
		for n < len(rest) && strings.IndexByte(chars, rest[n]) >= 0 {
			n++
		}
		return n
	}
}

func takeIfFirst(chars string) func(string) int {
	return func(rest string) int {
		if rest != "" && strings.IndexByte(chars, rest[0]) >= 0 {
			return len(rest)
		}
		return 0
	}
}

var perlSpec = interp{
	g: getopt{
		short: "+e:E:I:",
		attached: map[byte]func(string) int{
			'l': takeSet("01234567"), '0': takeSet("0123456789abcdefABCDEFxX"),
			'C': takeSet("0123456789IOESioDALaW"), 'i': takeAll, 'x': takeAll, 'F': takeAll,
			'D': takeSet("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"),
			'd': takeIfFirst(":t"), 'V': takeIfFirst(":"), 'M': takeAll, 'm': takeAll,
		},
	},
	code:    map[string]string{"e": runsInline, "E": runsInline},
	noStdin: set("v", "V", "h"),
	stdin:   true,
	extra: func(base string, p parsed) []hazard {
		// -MFoo becomes `use Foo;`: anything but a module name and import list is code.
		var out []hazard
		for _, o := range p.opts {
			v := o.arg.Value
			if o.id == "d" && strings.HasPrefix(v, ":") {
				v = v[1:]
			} else if o.id != "M" && o.id != "m" {
				continue
			}
			if v != "" && !perlModule.MatchString(v) {
				out = append(out, hz(FlagInlineCode, base+" -"+o.name+" text is evaluated as code"))
			}
		}
		return out
	},
}

var perlModule = regexp.MustCompile(`^-?[A-Za-z_][A-Za-z0-9_:]*(=[A-Za-z0-9_:,.\-/]*)?$`)

var rubySpec = interp{
	g: getopt{
		short: "+e:r:I:C:E:",
		attached: map[byte]func(string) int{
			'x': takeAll, 'i': takeAll, 'F': takeAll, '0': takeSet("0123456789abcdefABCDEFxX"),
			'K': takeSet("eEsSuUnNaA"), 'T': takeSet("0123456789"), 'W': takeSet("0123456789:abcdefghijklmnopqrstuvwxyz-"),
		},
		long:  longs("enable:", "disable:", "encoding:", "external-encoding:", "internal-encoding:"),
		exact: true,
	},
	code:    map[string]string{"e": runsInline},
	noStdin: set("v", "h", "version", "help", "copyright"),
	stdin:   true,
}

var nodeSpec = interp{
	g: getopt{
		short: "+e:p:r:C:",
		long: longs("eval:", "print:", "require:", "import:", "loader:", "experimental-loader:",
			"input-type:", "title:", "conditions:", "env-file:", "env-file-if-exists:", "inspect-port:",
			"debug-port:", "redirect-warnings:", "icu-data-dir:", "openssl-config:", "tls-cipher-list:",
			"tls-keylog:", "diagnostic-dir:", "report-directory:", "report-dir:", "report-filename:",
			"report-signal:", "secure-heap:", "secure-heap-min:", "heapsnapshot-signal:", "watch-path:",
			"test-name-pattern:", "test-reporter:", "test-reporter-destination:", "test-shard:",
			"test-skip-pattern:", "experimental-config-file:", "disable-warning:", "localstorage-file:",
			"run:", "stack-trace-limit:", "use-largepages:", "unhandled-rejections:", "trace-event-categories:",
			"trace-event-file-pattern:", "cpu-prof-dir:", "cpu-prof-name:", "heap-prof-dir:", "heap-prof-name:"),
		exact: true,
	},
	code:    map[string]string{"e": runsInline, "p": runsInline, "eval": runsInline, "print": runsInline},
	noStdin: set("v", "h", "c", "version", "help", "check", "v8-options", "run"),
	stdin:   true,
	extra: func(base string, p parsed) []hazard {
		var out []hazard
		for _, o := range p.opts {
			switch o.id {
			case "run":
				out = append(out, hz(FlagExecOption, base+" --run runs a package.json script through a shell"))
			case "r", "require", "import", "loader", "experimental-loader":
				if v := strings.ToLower(litPrefix(o.arg)); strings.HasPrefix(v, "data:") || o.arg.Dynamic && strings.HasPrefix("data:", v) {
					out = append(out, hz(FlagInlineCode, base+" "+o.String()+" loads code from a data: URL"))
				}
			}
		}
		return out
	},
}

var phpSpec = interp{
	g: getopt{
		short: "+c:d:f:r:B:R:F:E:S:t:z:",
		long: longs("php-ini:", "define:", "file:", "run:", "process-begin:", "process-code:",
			"process-file:", "process-end:", "server:", "docroot:", "zend-extension:",
			"rf:", "rc:", "re:", "rz:", "ri:"),
		exact: true,
	},
	code: map[string]string{"r": runsInline, "run": runsInline, "B": runsInline, "R": runsInline,
		"E": runsInline, "process-begin": runsInline, "process-code": runsInline, "process-end": runsInline,
		"z": "loads extension %s", "zend-extension": "loads extension %s"},
	noStdin: set("v", "h", "i", "m", "l", "s", "w", "f", "F", "S", "version", "help", "info", "modules",
		"syntax-check", "syntax-highlight", "strip", "file", "process-file", "server", "rf", "rc", "re", "rz", "ri"),
	stdin: true,
	extra: func(base string, p parsed) []hazard {
		for _, o := range p.opts {
			if o.id != "d" && o.id != "define" {
				continue
			}
			k, _, _ := strings.Cut(strings.ToLower(litPrefix(o.arg)), "=")
			switch strings.TrimSpace(k) {
			case "auto_prepend_file", "auto_append_file", "extension", "zend_extension", "extension_dir":
				return []hazard{hz(FlagInlineCode, base+" -d "+strings.TrimSpace(k)+" loads code")}
			}
		}
		return nil
	},
}

var luaSpec = interp{
	g:       getopt{short: "+e:l:"},
	code:    map[string]string{"e": runsInline},
	noStdin: set("v"),
	stdin:   true,
}

var rscriptSpec = interp{
	g:       getopt{short: "+e:", long: longs("default-packages:"), exact: true},
	code:    map[string]string{"e": runsInline},
	noStdin: set("version", "help", "h"),
}

var rSpec = interp{
	g:       getopt{short: "+e:f:d:g:", long: longs("file:", "args", "debugger:", "gui:"), exact: true},
	code:    map[string]string{"e": runsInline},
	noStdin: set("f", "file", "version", "help", "h"),
	stdin:   true,
}

var osascriptSpec = interp{
	g:     getopt{short: "+e:l:s:"},
	code:  map[string]string{"e": runsInline},
	stdin: true,
}

var expectSpec = interp{
	g:       getopt{short: "+c:f:D:"},
	code:    map[string]string{"c": runsInline},
	noStdin: set("f", "v"),
	stdin:   true,
}

// tclshHazards: tclsh ?-encoding name? ?script? reads the script from stdin
// when none is named.
func tclshHazards(base string, args []Word) []hazard {
	if len(args) >= 2 && isWord(args[0], "-encoding") {
		args = args[2:]
	}
	switch {
	case len(args) == 0 || isStdinWord(args[0]):
		return []hazard{hz(FlagInlineCode, base+" reads its program from stdin")}
	case args[0].Dynamic && litPrefix(args[0]) == "" && mayBeOption(args[0]):
		return []hazard{opaqueArg(base)}
	}
	return nil
}

// simpleCode covers interpreters whose inline-code options are plain words.
func simpleCode(flags ...string) toolFunc {
	return func(base string, args []Word) []hazard {
		for _, w := range args {
			v := litPrefix(w)
			if isWord(w, "--") {
				break
			}
			for _, f := range flags {
				if v == f || strings.HasPrefix(v, f+"=") {
					return []hazard{hz(FlagInlineCode, base+" "+f+" "+runsInline)}
				}
			}
		}
		return nil
	}
}

var shellCodeGetopt = getopt{short: "+c:C:", long: longs("command:", "init-command:"), exact: true}

// shellCode covers non-POSIX shells, whose -c text the analyzer cannot parse.
func shellCode(base string, args []Word) []hazard {
	p := shellCodeGetopt.parse(args)
	for _, o := range p.opts {
		if o.id == "c" || o.id == "C" || o.id == "command" || o.id == "init-command" {
			return []hazard{hz(FlagInlineCode, base+" "+o.String()+" "+runsInline)}
		}
	}
	out := unknownHazards(base, p)
	if len(p.operands) == 0 && !p.has("v", "h", "version", "help") {
		out = append(out, hz(FlagInlineCode, base+" reads its program from stdin"))
	}
	return out
}

// pwshHazards: PowerShell parameters are case-insensitive, start with - or /,
// and may be abbreviated (-c, -com, -Command).
func pwshHazards(base string, args []Word) []hazard {
	for i := 0; i < len(args); i++ {
		v := litPrefix(args[i])
		if args[i].Dynamic && (v == "" && mayBeOption(args[i]) || v == "-" || v == "/") {
			return []hazard{opaqueArg(base)}
		}
		if !strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "/") {
			if isWord(args[i], "-") {
				return []hazard{hz(FlagInlineCode, base+" reads commands from stdin")}
			}
			return nil // a script file
		}
		k := strings.ToLower(strings.TrimLeft(v, "-/"))
		k, _, _ = strings.Cut(k, ":")
		switch {
		case k == "":
		case strings.HasPrefix("commandwithargs", k) && k[0] == 'c' || k == "cwa":
			return []hazard{hz(FlagInlineCode, base+" -Command "+runsInline)}
		case strings.HasPrefix("encodedcommand", k) || k == "ec":
			return []hazard{hz(FlagInlineCode, base+" -EncodedCommand runs base64-encoded code")}
		case strings.HasPrefix("file", k):
			if i+1 < len(args) && isWord(args[i+1], "-") {
				return []hazard{hz(FlagInlineCode, base+" reads commands from stdin")}
			}
			return nil
		case strings.HasPrefix("version", k) || k == "help" || k == "?" || k == "h":
			return nil
		case strings.HasPrefix("executionpolicy", k) || k == "ep" || strings.HasPrefix("configurationname", k) ||
			k == "cnf" || strings.HasPrefix("inputformat", k) || k == "if" || strings.HasPrefix("outputformat", k) ||
			k == "of" || strings.HasPrefix("settingsfile", k) || strings.HasPrefix("workingdirectory", k) ||
			k == "wd" || strings.HasPrefix("windowstyle", k) || k == "custompipename" || k == "configurationfile" ||
			strings.HasPrefix("encodedarguments", k) || k == "ea" || k == "psconsolefile":
			i++
		}
	}
	return []hazard{hz(FlagInlineCode, base+" reads commands from stdin")}
}

var denoGetopt = getopt{
	short: "c:L:e:",
	long:  longs("config:", "import-map:", "lock:", "cert:", "location:", "seed:", "log-level:", "eval:", "eval-file:", "env-file::"),
	exact: true,
}

// denoHazards: deno eval CODE, deno repl, deno task (a shell), deno run URL.
func denoHazards(base string, args []Word) []hazard {
	p := denoGetopt.parse(args)
	out := unknownHazards(base, p)
	for _, o := range p.opts {
		if o.id == "e" || o.id == "eval" || o.id == "eval-file" {
			out = append(out, hz(FlagInlineCode, base+" "+o.String()+" "+runsInline))
		}
	}
	if len(p.operands) == 0 {
		if len(out) == 0 && !p.has("v", "h", "version", "help", "V") {
			out = append(out, hz(FlagInlineCode, base+" repl reads code from stdin"))
		}
		return out
	}
	sub, rest := p.operands[0], p.operands[1:]
	switch {
	case isWord(sub, "eval"):
		out = append(out, hz(FlagInlineCode, base+" eval "+runsInline))
	case isWord(sub, "repl") && len(out) == 0:
		out = append(out, hz(FlagInlineCode, base+" repl reads code from stdin"))
	case isWord(sub, "task"):
		out = append(out, hz(FlagExecOption, base+" task runs a deno.json task through a shell"))
	case isWord(sub, "-"):
		out = append(out, hz(FlagInlineCode, base+" reads its program from stdin"))
	case isWord(sub, "run", "serve", "test") && len(rest) > 0:
		sub = rest[0]
		fallthrough
	default:
		if v := strings.ToLower(litPrefix(sub)); strings.HasPrefix(v, "http:") || strings.HasPrefix(v, "https:") || strings.HasPrefix(v, "data:") {
			out = append(out, hz(FlagInlineCode, base+" runs code from a URL"))
		}
	}
	return out
}

var bunGetopt = getopt{short: "+e:p:r:c:", long: longs("eval:", "print:", "preload:", "config:", "cwd:",
	"env-file:"), exact: true}

// bunHazards: bun -e/--eval/-p/--print CODE, bun exec CMD (bun's shell).
func bunHazards(base string, args []Word) []hazard {
	p := bunGetopt.parse(args)
	out := unknownHazards(base, p)
	for _, o := range p.opts {
		switch o.id {
		case "e", "p", "eval", "print":
			out = append(out, hz(FlagInlineCode, base+" "+o.String()+" "+runsInline))
		}
	}
	if len(p.operands) >= 2 && isWord(p.operands[0], "exec") {
		out = append(out, hzCode(FlagExecOption, base+" exec runs a shell command", joinWords(p.operands[1:])))
	}
	return out
}

// ---------------------------------------------------------------------------
// awk: the program text can run commands through system(), pipes and getline.

var awkGetopt = getopt{
	short: "+f:v:F:e:E:i:l:W:d::D::L::o::p::",
	long: longs("file:", "assign:", "field-separator:", "source:", "exec:", "include:", "load:",
		"dump-variables::", "debug::", "lint::", "pretty-print::", "profile::", "sandbox",
		"characters-as-bytes", "traditional", "copyright", "gen-pot", "help", "version",
		"bignum", "use-lc-numeric", "non-decimal-data", "optimize", "no-optimize", "posix",
		"re-interval", "csv", "lint-old", "trace"),
	stop: set("E", "exec"),
}

// awkHazards finds the program text (the first operand, or -e/--source) and
// program files (-f, -E, --include), and judges the text with awkRunsCommands.
func awkHazards(base string, args []Word) []hazard {
	p := awkGetopt.parse(args)
	gawk := strings.HasPrefix(base, "gawk")
	var progs, files, loads []Word
	sandbox, named := false, false
	for _, o := range p.opts {
		switch o.id {
		case "e", "source":
			progs, named = append(progs, o.arg), true
		case "f", "file", "E", "exec", "i", "include":
			files, named = append(files, o.arg), true
		case "l", "load":
			loads = append(loads, o.arg)
		case "S", "sandbox":
			sandbox = true
		case "W":
			k, v, _ := strings.Cut(litPrefix(o.arg), "=")
			switch strings.ToLower(k) {
			case "sandbox":
				sandbox = true
			case "source":
				progs, named = append(progs, Word{Value: v}), true
			case "exec", "file", "include":
				if v == "" && len(p.operands) > 0 {
					v, p.operands = p.operands[0].Value, p.operands[1:]
				}
				files, named = append(files, Word{Value: v}), true
			case "load":
				loads = append(loads, Word{Value: v})
			}
		}
	}
	if !named && len(p.operands) > 0 {
		progs = append(progs, p.operands[0])
	}
	var out []hazard
	if sandbox && gawk {
		return unknownHazards(base, p) // --sandbox disables system(), pipes, getline from files and extensions
	}
	if !anyDynamic(progs) {
		out = unknownHazards(base, p)
	}
	for _, w := range progs {
		if w.Dynamic {
			out = append(out, hz(FlagOpaque, base+" program is dynamic"))
		} else if what := awkRunsCommands(w.Value); what != "" {
			out = append(out, hz(FlagInlineCode, base+" runs commands ("+what+")"))
		}
	}
	for _, w := range files {
		if isStdinWord(w) {
			out = append(out, hz(FlagInlineCode, base+" reads its program from stdin"))
		} else {
			out = append(out, hz(FlagInlineCode, base+" program file "+w.Value+" not analysed"))
		}
	}
	for _, w := range loads {
		out = append(out, hz(FlagInlineCode, base+" loads extension "+w.Value))
	}
	return out
}

var awkSystemCall = regexp.MustCompile(`\bsystem([ \t]|\\\r?\n)*\(`)

// awkRunsCommands reports how an awk program runs commands ("" when it does
// not): system(), a pipe to print or from getline, a |& coprocess, or a gawk
// @-directive (@load, @include, indirect call). Strings, regex literals and
// comments are skipped, with / read as a regex only where awk's grammar
// cannot read it as division; any ambiguity is resolved toward scanning.
func awkRunsCommands(prog string) string {
	if awkSystemCall.MatchString(prog) {
		return "system()"
	}
	operand := false // the last token ended an operand, so / is division
	n := len(prog)
	for i := 0; i < n; {
		c := prog[i]
		switch {
		case c == '\\' && i+1 < n && (prog[i+1] == '\n' || prog[i+1] == '\r'):
			i += 2
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			i++
		case c == '\n':
			operand = false
			i++
		case c == '#':
			for i < n && prog[i] != '\n' {
				i++
			}
		case c == '"':
			i, operand = skipAwkString(prog, i), true
		case c == '/':
			if operand {
				i, operand = i+1, false
			} else {
				i, operand = skipAwkRegex(prog, i), true
			}
		case isIdentStart(c):
			j := i
			for j < n && isIdentChar(prog[j]) {
				j++
			}
			word := prog[i:j]
			i = j
			switch word {
			case "system":
				return "system()"
			case "print", "printf", "return", "case", "do", "else", "in":
				operand = false
			default:
				operand = true
			}
		case c >= '0' && c <= '9' || c == '.' && i+1 < n && prog[i+1] >= '0' && prog[i+1] <= '9':
			for i < n && (isIdentChar(prog[i]) || prog[i] == '.') {
				i++
			}
			operand = true
		case c == ')' || c == ']':
			i, operand = i+1, true
		case c == '|':
			if i+1 < n && prog[i+1] == '|' {
				i, operand = i+2, false
				continue
			}
			if i+1 < n && prog[i+1] == '&' {
				return "|& coprocess"
			}
			return "pipe"
		case c == '@':
			j := i + 1
			for j < n && isIdentChar(prog[j]) {
				j++
			}
			if w := prog[i+1 : j]; w != "" && w != "namespace" {
				return "@" + w
			}
			i, operand = j, false
		case (c == '+' || c == '-') && i+1 < n && prog[i+1] == c:
			i += 2 // ++ and -- leave the operand state as it was
		default:
			i, operand = i+1, false
		}
	}
	return ""
}

func isIdentStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isIdentChar(c byte) bool  { return isIdentStart(c) || c >= '0' && c <= '9' }

func skipAwkString(s string, i int) int {
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		case '\n':
			return j
		}
	}
	return len(s)
}

// skipAwkRegex skips a regex literal the way gawk's lexer does: a / inside a
// bracket expression does not end it.
func skipAwkRegex(s string, i int) int {
	depth := 0
	for j := i + 1; j < len(s); j++ {
		switch c := s[j]; c {
		case '\\':
			j++
		case '\n':
			return j
		case '[':
			if depth == 0 || j+1 < len(s) && s[j+1] == ':' {
				depth++
			}
		case ']':
			if depth > 0 && !(s[j-1] == '[' && depth == 1 || j >= 2 && s[j-2:j] == "[^" && depth == 1) {
				depth--
			}
		case '/':
			if depth == 0 {
				return j + 1
			}
		}
	}
	return len(s)
}

// ---------------------------------------------------------------------------
// sed (GNU): the e command and the e flag of s run commands.

var sedGetopt = getopt{
	short: "e:f:l:i::nrsuzEb",
	long: longs("expression:", "file:", "line-length:", "in-place::", "quiet", "silent", "posix",
		"regexp-extended", "separate", "sandbox", "unbuffered", "binary", "follow-symlinks",
		"null-data", "zero-terminated", "debug", "help", "version"),
}

// sedHazards joins the -e scripts with newlines, as sed does (or takes the
// first operand when there is no -e or -f), and looks for e commands in them.
func sedHazards(base string, args []Word) []hazard {
	p := sedGetopt.parse(args)
	var out []hazard
	var parts []Word
	var files []Word
	for _, o := range p.opts {
		switch o.id {
		case "e", "expression":
			parts = append(parts, o.arg)
		case "f", "file":
			files = append(files, o.arg)
		}
	}
	if len(parts) == 0 && len(files) == 0 && len(p.operands) > 0 {
		parts = p.operands[:1]
	}
	if !anyDynamic(parts) {
		out = unknownHazards(base, p)
	}
	if p.has("sandbox") {
		return out // --sandbox rejects e, r and w
	}
	var script []string
	for _, w := range parts {
		if w.Dynamic {
			out = append(out, hz(FlagOpaque, base+" script is dynamic"))
		}
		script = append(script, w.Value)
	}
	for _, h := range sedExecs(strings.Join(script, "\n")) {
		switch {
		case h.subst:
			out = append(out, hz(FlagInlineCode, base+" s///e executes the pattern space"))
		case strings.TrimSpace(h.cmd) == "":
			out = append(out, hz(FlagInlineCode, base+" e executes the pattern space"))
		default:
			out = append(out, hzCode(FlagInlineCode, base+" e runs a command", Word{Value: h.cmd}))
		}
	}
	for _, w := range files {
		out = append(out, hz(FlagInlineCode, base+" script file "+w.Value+" not analysed"))
	}
	return out
}

type sedHit struct {
	cmd   string // the command of `e command`
	subst bool   // the e flag of s
}

// sedExecs finds where a GNU sed script executes commands. It parses enough
// of the grammar to know what is a command: addresses, blocks, separators,
// s and y with any delimiter, text of a/i/c and file names (which run to the
// end of the line), labels. Where sed would reject the script it resumes
// scanning, so a parse it does not share errs toward finding more.
func sedExecs(script string) []sedHit {
	p := sedParser{s: script}
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' || c == ';' {
			p.i++
			continue
		}
		p.command()
	}
	return p.hits
}

type sedParser struct {
	s    string
	i    int
	hits []sedHit
}

func (p *sedParser) at(c byte) bool { return p.i < len(p.s) && p.s[p.i] == c }

func (p *sedParser) blanks() {
	for p.at(' ') || p.at('\t') {
		p.i++
	}
}

func (p *sedParser) digits() {
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		p.i++
	}
}

func (p *sedParser) toEOL() string {
	start := p.i
	for p.i < len(p.s) && p.s[p.i] != '\n' {
		p.i++
	}
	return p.s[start:p.i]
}

func (p *sedParser) command() {
	if p.address() {
		p.blanks()
		if p.at(',') {
			p.i++
			p.blanks()
			if p.at('+') || p.at('~') {
				p.i++
				p.digits()
			} else {
				p.address()
			}
		}
	}
	p.blanks()
	for p.at('!') {
		p.i++
		p.blanks()
	}
	if p.i >= len(p.s) {
		return
	}
	c := p.s[p.i]
	p.i++
	switch c {
	case '#':
		p.toEOL()
	case ':', 'b', 't', 'T', 'v':
		p.blanks()
		for p.i < len(p.s) && strings.IndexByte("; \t\n}", p.s[p.i]) < 0 {
			p.i++
		}
	case 'a', 'i', 'c':
		p.text()
	case 'r', 'R', 'w', 'W':
		p.toEOL()
	case 'e':
		p.blanks()
		p.hits = append(p.hits, sedHit{cmd: p.toEOL()})
	case 'l', 'L', 'q', 'Q':
		p.blanks()
		p.digits()
	case 's':
		p.subst()
	case 'y':
		if d, ok := p.delim(); ok && p.slash(d) {
			p.slash(d)
		}
	}
	// {, }, =, d, D, g, G, h, H, n, N, p, P, x, z, F take nothing; any
	// other character makes sed reject the script.
}

func (p *sedParser) address() bool {
	if p.i >= len(p.s) {
		return false
	}
	switch c := p.s[p.i]; {
	case c >= '0' && c <= '9':
		p.digits()
		if p.at('~') {
			p.i++
			p.digits()
		}
	case c == '$':
		p.i++
	case c == '/':
		p.i++
		p.slash('/')
		p.regexFlags()
	case c == '\\':
		p.i++
		if d, ok := p.delim(); ok {
			p.slash(d)
		}
		p.regexFlags()
	default:
		return false
	}
	return true
}

func (p *sedParser) regexFlags() {
	for p.at('I') || p.at('M') {
		p.i++
	}
}

func (p *sedParser) delim() (byte, bool) {
	if p.i >= len(p.s) || p.s[p.i] == '\n' || p.s[p.i] == '\\' {
		return 0, false
	}
	p.i++
	return p.s[p.i-1], true
}

// slash reads up to the unescaped delimiter d; an unescaped newline ends the
// part unterminated (sed rejects that; scanning resumes at the newline).
func (p *sedParser) slash(d byte) bool {
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c == '\n' {
			return false
		}
		p.i++
		switch c {
		case d:
			return true
		case '\\':
			if p.i < len(p.s) {
				p.i++
			}
		}
	}
	return false
}

// text skips the text of a, i or c: to the first unescaped newline.
func (p *sedParser) text() {
	p.blanks()
	if p.at('\\') {
		p.i += 2 // the character after a\ starts the text, or is its newline
	}
	for p.i < len(p.s) {
		c := p.s[p.i]
		p.i++
		if c == '\\' {
			p.i++
		} else if c == '\n' {
			return
		}
	}
}

func (p *sedParser) subst() {
	d, ok := p.delim()
	if !ok || !p.slash(d) || !p.slash(d) {
		return
	}
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case 'e':
			p.hits = append(p.hits, sedHit{subst: true})
		case 'w':
			p.toEOL()
			return
		case '\n', ';':
			p.i++
			return
		case '}', '#':
			return
		}
		p.i++ // g, p, i, I, m, M, digits; anything else is an error to sed
	}
}

// ---------------------------------------------------------------------------
// tar (GNU): options that name a command tar runs through sh -c.

var tarGetopt = getopt{
	short: "b:C:f:F:g:H:I:K:L:N:T:V:X:",
	long: longs("checkpoint-action:", "to-command:", "use-compress-program:", "rsh-command:",
		"info-script:", "new-volume-script:", "checkpoint::", "directory:", "file:", "files-from:",
		"exclude:", "exclude-from:", "transform:", "xform:", "format:", "owner:", "group:", "mode:",
		"mtime:", "label:", "newer:", "after-date:", "newer-mtime:", "blocking-factor:", "record-size:",
		"tape-length:", "strip-components:", "suffix:", "backup::", "index-file:", "listed-incremental:",
		"level:", "sort:", "warning:", "quoting-style:", "quote-chars:", "no-quote-chars:", "pax-option:",
		"starting-file:", "volno-file:", "rmt-command:", "exclude-tag:", "exclude-tag-all:",
		"exclude-tag-under:", "occurrence::", "owner-map:", "group-map:", "hole-detection:",
		"xattrs-include:", "xattrs-exclude:", "atime-preserve::", "one-top-level::", "totals::",
		"to-stdout", "touch", "extract", "create", "list", "append", "update", "verbose", "gzip",
		"bzip2", "xz", "zstd", "lzip", "lzma", "lzop", "compress", "auto-compress", "null",
		"numeric-owner", "same-owner", "no-same-owner", "preserve-permissions", "keep-old-files",
		"keep-newer-files", "overwrite", "remove-files", "sparse", "verify", "wildcards", "xattrs",
		"acls", "selinux", "dereference", "hard-dereference", "ignore-failed-read", "ignore-zeros",
		"interactive", "multi-volume", "no-recursion", "recursion", "one-file-system", "show-transformed-names",
		"utc", "version", "help", "usage", "delete", "diff", "compare", "concatenate", "catenate", "get",
		"test-label", "absolute-names", "check-device", "no-check-device", "clamp-mtime", "full-time",
		"ignore-case", "no-ignore-case", "anchored", "no-anchored", "exclude-vcs", "exclude-vcs-ignores",
		"exclude-backups", "exclude-caches", "exclude-caches-all", "exclude-caches-under", "unlink-first",
		"recursive-unlink", "seek", "no-seek", "skip-old-files", "show-defaults", "show-omitted-dirs",
		"check-links", "block-number", "restrict", "posix", "old-archive", "portability", "preserve-order",
		"same-order", "no-overwrite-dir", "overwrite-dir", "delay-directory-restore",
		"no-delay-directory-restore", "ignore-command-error", "no-ignore-command-error"),
}

// tarHazards also reads the old form, where the first word is a cluster of
// letters without a dash whose arguments follow in order (tar cIf PROG A.tar).
func tarHazards(base string, args []Word) []hazard {
	var opts []option
	var out []hazard
	if len(args) > 0 && !strings.HasPrefix(litPrefix(args[0]), "-") {
		// Old style: `tar xzf ARCHIVE ...`: each letter that takes an
		// argument takes the next word, in order.
		w := args[0]
		if w.Dynamic {
			out = append(out, opaqueArg(base))
		}
		j := 1
		lit := litPrefix(w)
		for k := range len(lit) {
			o := option{id: lit[k : k+1], name: lit[k : k+1]}
			if a, _ := tarGetopt.shortArity(lit[k]); a == requiredArg && j < len(args) {
				o.arg, o.hasArg = args[j], true
				j++
			}
			opts = append(opts, o)
		}
		args = args[j:]
	}
	p := tarGetopt.parse(args)
	opts = append(opts, p.opts...)
	out = append(out, unknownHazards(base, p)...)
	for _, o := range opts {
		var what string
		switch o.id {
		case "checkpoint-action":
			v := litPrefix(o.arg)
			if strings.HasPrefix(v, "exec=") {
				code := Word{Value: o.arg.Value[len("exec="):], Dynamic: o.arg.Dynamic}
				out = append(out, hzCode(FlagExecOption, base+" --checkpoint-action=exec runs a command", code))
			} else if o.arg.Dynamic && strings.HasPrefix("exec=", v) {
				out = append(out, hz(FlagExecOption, base+" --checkpoint-action may run a command"), hz(FlagOpaque, base+" --checkpoint-action is dynamic"))
			}
			continue
		case "to-command":
			what = "--to-command"
		case "I", "use-compress-program":
			what = "--use-compress-program"
		case "rsh-command":
			what = "--rsh-command"
		case "F", "info-script", "new-volume-script":
			what = "--info-script"
		default:
			continue
		}
		if o.hasArg {
			out = append(out, hzCode(FlagExecOption, base+" "+what+" runs a command", o.arg))
		}
	}
	return out
}

// zipHazards: zip -T tests the archive with `-TT CMD` (--unzip-command),
// which zip runs through the shell.
func zipHazards(base string, args []Word) []hazard {
	for i, w := range args {
		v := litPrefix(w)
		var code *Word
		switch {
		case strings.HasPrefix(v, "--unz"):
			if _, after, ok := strings.Cut(w.Value, "="); ok {
				code = &Word{Value: after, Dynamic: w.Dynamic}
			} else if i+1 < len(args) {
				code = &args[i+1]
			}
		case strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "--") && strings.Contains(v, "TT"):
			rest := strings.TrimPrefix(w.Value[strings.Index(w.Value, "TT")+2:], "=")
			if rest != "" {
				code = &Word{Value: rest, Dynamic: w.Dynamic}
			} else if i+1 < len(args) {
				code = &args[i+1]
			}
		default:
			continue
		}
		if code == nil {
			return []hazard{hz(FlagExecOption, base+" -TT runs a command")}
		}
		return []hazard{hzCode(FlagExecOption, base+" -TT runs a command (with -T)", *code)}
	}
	return nil
}

// ---------------------------------------------------------------------------
// ssh, scp, sftp, rsync.

// sshGetopt: OpenSSH parses options before the destination and, once more,
// between the destination and the remote command.
var sshGetopt = getopt{short: "+B:b:c:D:E:e:F:I:i:J:L:l:m:O:o:P:p:Q:R:S:W:w:"}

// sshHazards: words after the destination (and its second option list) are a
// command run on the remote host.
func sshHazards(base string, args []Word) []hazard {
	p := sshGetopt.parse(args)
	var out []hazard
	opts := p.opts
	var dest *Word
	var cmd []Word
	if len(p.operands) > 0 {
		dest = &p.operands[0]
		rest := args[len(args)-len(p.operands)+1:]
		dashdash := len(args) > len(p.operands) && isWord(args[len(args)-len(p.operands)-1], "--")
		if dashdash {
			cmd = rest
		} else {
			q := sshGetopt.parse(rest)
			opts = append(opts, q.opts...)
			p.unknown = append(p.unknown, q.unknown...)
			cmd = q.operands
		}
	}
	out = append(out, unknownHazards(base, p)...)
	out = append(out, sshOptionHazards(base, opts)...)
	if len(cmd) > 0 && dest != nil && !hasOpt(opts, "N") {
		c := joinWords(cmd)
		out = append(out, hz(FlagRemoteCommand, fmt.Sprintf("%s runs %q on %s", base, c.Value, dest.Value)))
	}
	return out
}

func hasOpt(opts []option, ids ...string) bool {
	return parsed{opts: opts}.has(ids...)
}

// sshOptionHazards judges the options ssh, scp and sftp share: -o, -F, -I.
func sshOptionHazards(base string, opts []option) []hazard {
	var out []hazard
	for _, o := range opts {
		switch o.id {
		case "o":
			out = append(out, sshConfigHazards(base, o.arg)...)
		case "F":
			if !isWord(o.arg, "/dev/null", "none") {
				out = append(out, hz(FlagExecOption, base+" config file "+o.arg.Value+" may hold ProxyCommand"))
			}
		case "I":
			out = append(out, hz(FlagExecOption, base+" -I loads a PKCS#11 library"))
		}
	}
	return out
}

// sshConfigHazards judges one -o KEY=VALUE (or "KEY VALUE"; keys are
// case-insensitive).
func sshConfigHazards(base string, w Word) []hazard {
	lit := litPrefix(w)
	t := strings.TrimLeft(lit, " \t")
	k := strings.IndexAny(t, " \t=")
	if k < 0 {
		if w.Dynamic {
			return []hazard{hz(FlagOpaque, base+" -o is dynamic")}
		}
		return nil
	}
	key := strings.ToLower(t[:k])
	full := w.Value[len(lit)-len(t)+k:]
	val := strings.TrimLeft(full, " \t")
	if strings.HasPrefix(val, "=") {
		val = strings.TrimLeft(val[1:], " \t")
	}
	code := Word{Value: val, Dynamic: w.Dynamic}
	switch key {
	case "proxycommand", "localcommand", "knownhostscommand":
		if strings.EqualFold(val, "none") {
			return nil
		}
		name := map[string]string{"proxycommand": "ProxyCommand", "localcommand": "LocalCommand", "knownhostscommand": "KnownHostsCommand"}[key]
		if key == "proxycommand" {
			code.Value = "exec " + code.Value // ssh runs $SHELL -c "exec CMD"
		}
		return []hazard{hzCode(FlagExecOption, base+" -o "+name+" runs a command", code)}
	case "permitlocalcommand":
		if !strings.EqualFold(val, "no") {
			return []hazard{hz(FlagExecOption, base+" -o PermitLocalCommand runs LocalCommand from ssh config")}
		}
	case "remotecommand":
		return []hazard{hz(FlagRemoteCommand, fmt.Sprintf("%s runs %q on the remote host", base, val))}
	case "include":
		return []hazard{hz(FlagExecOption, base+" -o Include reads a config file that may hold ProxyCommand")}
	case "match":
		return []hazard{hz(FlagExecOption, base+" -o Match exec runs a command")}
	case "pkcs11provider", "securitykeyprovider":
		return []hazard{hz(FlagExecOption, base+" -o "+t[:k]+" loads a library")}
	}
	return nil
}

var scpGetopt = getopt{short: "c:D:F:i:J:l:o:P:S:X:"}

// scpHazards: -S and -D name local programs; -o and -F are as for ssh.
func scpHazards(base string, args []Word) []hazard {
	p := scpGetopt.parse(args)
	out := unknownHazards(base, p)
	out = append(out, sshOptionHazards(base, p.opts)...)
	for _, o := range p.opts {
		switch o.id {
		case "S":
			out = append(out, hz(FlagExecOption, base+" -S runs program "+o.arg.Value))
		case "D":
			out = append(out, hz(FlagExecOption, base+" -D runs sftp server program "+o.arg.Value))
		}
	}
	for _, w := range p.operands {
		// The legacy scp protocol hands a remote path to the remote shell.
		host, path, ok := strings.Cut(w.Value, ":")
		if ok && !w.Dynamic && !strings.Contains(host, "/") && strings.ContainsAny(path, "`$;|&<>") {
			out = append(out, hz(FlagRemoteCommand, base+" remote path may be expanded by the remote shell on "+host))
		}
	}
	return out
}

var sftpGetopt = getopt{short: "B:b:c:D:F:i:J:l:o:P:R:s:S:X:"}

// sftpHazards: -S and -D run local programs, batch files can hold !command,
// and -s names what runs on the remote host.
func sftpHazards(base string, args []Word) []hazard {
	p := sftpGetopt.parse(args)
	out := unknownHazards(base, p)
	out = append(out, sshOptionHazards(base, p.opts)...)
	for _, o := range p.opts {
		switch o.id {
		case "S":
			out = append(out, hz(FlagExecOption, base+" -S runs program "+o.arg.Value))
		case "D":
			out = append(out, hz(FlagExecOption, base+" -D runs sftp server program "+o.arg.Value))
		case "b":
			out = append(out, hz(FlagExecOption, base+" -b batch file may run local commands (!)"))
		case "s":
			out = append(out, hz(FlagRemoteCommand, fmt.Sprintf("%s -s runs %q on the remote host", base, o.arg.Value)))
		}
	}
	return out
}

var rsyncGetopt = getopt{
	short: "e:B:f:T:M:@:",
	long: longs("rsh:", "rsync-path:", "filter:", "exclude:", "include:", "exclude-from:", "include-from:",
		"files-from:", "temp-dir:", "compare-dest:", "copy-dest:", "link-dest:", "backup-dir:", "suffix:",
		"chmod:", "chown:", "usermap:", "groupmap:", "block-size:", "max-size:", "min-size:", "max-delete:",
		"partial-dir:", "log-file:", "log-file-format:", "out-format:", "password-file:", "port:",
		"sockopts:", "timeout:", "contimeout:", "compress-level:", "compress-choice:", "checksum-choice:",
		"skip-compress:", "bwlimit:", "protocol:", "iconv:", "write-batch:", "only-write-batch:",
		"read-batch:", "address:", "remote-option:", "info:", "debug:", "stop-after:", "stop-at:",
		"modify-window:", "outbuf:", "max-alloc:", "config:", "dparam:", "early-input:", "checksum-seed:",
		"copy-as:"),
}

// rsyncHazards: -e/--rsh is run locally to reach the remote host;
// --rsync-path is run by the remote shell.
func rsyncHazards(base string, args []Word) []hazard {
	p := rsyncGetopt.parse(args)
	out := unknownHazards(base, p)
	for _, o := range p.opts {
		switch o.id {
		case "e", "rsh":
			out = append(out, hzCode(FlagExecOption, base+" "+o.String()+" runs a command", o.arg))
		case "rsync-path":
			out = append(out, hz(FlagExecOption, fmt.Sprintf("%s --rsync-path runs %q on the remote host", base, o.arg.Value)))
		}
	}
	return out
}

// ---------------------------------------------------------------------------
// git: configuration that names commands, and subcommand options that run them.

// gitHazards reads git's global options (before the subcommand), where -c
// and --config-env set configuration that can name commands, then hands the
// subcommand's arguments to its inspector. An ext:: URL anywhere runs a command.
func gitHazards(base string, args []Word) []hazard {
	var out []hazard
	i := 0
loop:
	for ; i < len(args); i++ {
		w := args[i]
		v := litPrefix(w)
		switch {
		case w.Dynamic && (v == "" && mayBeOption(w) || v == "-" || v == "--"):
			out = append(out, opaqueArg(base))
		case v == "-c" && !w.Dynamic:
			if i+1 < len(args) {
				i++
				out = append(out, gitConfigHazards(base+" -c", args[i])...)
			}
		case strings.HasPrefix(v, "-c") && !strings.HasPrefix(v, "--"):
			out = append(out, gitConfigHazards(base+" -c", Word{Value: w.Value[2:], Dynamic: w.Dynamic})...)
		case v == "--config-env" && !w.Dynamic || strings.HasPrefix(v, "--config-env="):
			spec := Word{Value: strings.TrimPrefix(w.Value, "--config-env=")}
			if v == "--config-env" {
				if i+1 >= len(args) {
					break
				}
				i++
				spec = args[i]
			}
			// NAME=ENVVAR: the value comes from the environment.
			name, env, _ := strings.Cut(spec.Value, "=")
			out = append(out, gitConfigHazards(base+" --config-env", Word{Value: name + "=$" + env, Dynamic: true})...)
		case isWord(w, "-C", "--git-dir", "--work-tree", "--namespace", "--attr-source", "--super-prefix"):
			i++
		case isWord(w, "-p", "--paginate"):
			out = append(out, hz(FlagExecOption, base+" "+v+" runs PAGER"))
		case strings.HasPrefix(v, "--exec-path="):
			out = append(out, hz(FlagExecOption, base+" --exec-path runs git commands from "+w.Value[len("--exec-path="):]))
		case strings.HasPrefix(v, "-"):
		default:
			break loop
		}
	}
	if i >= len(args) {
		return out
	}
	sub, rest := args[i].Value, args[i+1:]
	for _, w := range rest {
		if v := litPrefix(w); strings.HasPrefix(v, "ext::") {
			out = append(out, hzCode(FlagExecOption, base+" ext:: transport runs a command", Word{Value: w.Value[5:], Dynamic: w.Dynamic}))
		}
	}
	if f := gitSubcommands[sub]; f != nil {
		out = append(out, f(base+" "+sub, rest)...)
	}
	return out
}

// gitKeyKind says what a configuration value makes git do.
type gitKeyKind int

const (
	gitKeySafe    gitKeyKind = iota
	gitKeyShell              // the value is a shell command
	gitKeyExec               // the value makes git run something, not given as shell code
	gitKeyBoolCmd            // a shell command unless it is a boolean
	gitKeyBang               // a shell command when it starts with "!"
	gitKeyHelper             // credential.helper: "!cmd", a path, or a git-credential-* name
)

// gitKey classifies a configuration key. Section and name are
// case-insensitive; a subsection (the middle part) is not.
func gitKey(key string) (gitKeyKind, string) {
	sec, rest, _ := strings.Cut(key, ".")
	sub, name := "", rest
	if j := strings.LastIndexByte(rest, '.'); j >= 0 {
		sub, name = rest[:j], rest[j+1:]
	}
	sec, name = strings.ToLower(sec), strings.ToLower(name)
	switch sec {
	case "alias":
		return gitKeyBang, ""
	case "pager":
		return gitKeyBoolCmd, ""
	}
	switch sec + "." + name {
	case "core.pager", "core.sshcommand", "core.editor", "core.askpass", "core.gitproxy",
		"diff.external", "sequence.editor", "gpg.program", "interactive.difffilter",
		"sendemail.sendmailcmd", "sendemail.tocmd", "sendemail.cccmd", "sendemail.headercmd",
		"uploadpack.packobjectshook", "core.alternaterefscommand", "diff.textconv", "diff.command",
		"filter.clean", "filter.smudge", "filter.process", "merge.driver", "difftool.cmd",
		"mergetool.cmd", "man.cmd", "browser.cmd", "tar.command", "remote.uploadpack",
		"remote.receivepack", "gpg.defaultkeycommand":
		return gitKeyShell, ""
	case "core.fsmonitor":
		return gitKeyBoolCmd, ""
	case "credential.helper":
		return gitKeyHelper, ""
	case "submodule.update":
		return gitKeyBang, ""
	case "core.hookspath":
		return gitKeyExec, "runs hooks from that directory"
	case "include.path", "includeif.path":
		return gitKeyExec, "loads a config file that may name commands"
	case "protocol.allow":
		if sub == "" || sub == "ext" {
			return gitKeyExec, "may enable the ext:: transport, which runs commands"
		}
	case "safe.directory":
		return gitKeyExec, "lifts the ownership check on repositories whose config runs commands"
	case "url.insteadof", "url.pushinsteadof":
		if strings.HasPrefix(sub, "ext::") {
			return gitKeyExec, "rewrites URLs to the ext:: transport, which runs commands"
		}
	}
	return gitKeySafe, ""
}

// gitConfigHazards judges one KEY=VALUE given on the command line.
func gitConfigHazards(what string, w Word) []hazard {
	lit := litPrefix(w)
	key, _, hasEq := strings.Cut(lit, "=")
	if w.Dynamic && !hasEq {
		return []hazard{hz(FlagOpaque, what+" key is dynamic")}
	}
	val := Word{Dynamic: w.Dynamic}
	if hasEq {
		val.Value = w.Value[len(key)+1:]
	}
	kind, why := gitKey(key)
	detail := what + " " + key + " runs a command"
	switch kind {
	case gitKeySafe:
		return nil
	case gitKeyExec:
		return []hazard{hz(FlagExecOption, what+" "+key+" "+why)}
	case gitKeyBoolCmd:
		if !val.Dynamic && isGitBool(val.Value) {
			return nil
		}
	case gitKeyBang:
		v := litPrefix(val)
		if !strings.HasPrefix(v, "!") {
			if val.Dynamic && v == "" {
				return []hazard{hz(FlagOpaque, what+" "+key+" is dynamic")}
			}
			return nil
		}
		val.Value = strings.TrimPrefix(val.Value, "!")
	case gitKeyHelper:
		v := litPrefix(val)
		switch {
		case v == "" && !val.Dynamic:
			return nil
		case strings.HasPrefix(v, "!"):
			val.Value = val.Value[1:]
		case strings.HasPrefix(v, "/"):
		default:
			val.Value = "git credential-" + val.Value
		}
	}
	return []hazard{hzCode(FlagExecOption, detail, val)}
}

func isGitBool(v string) bool {
	switch strings.ToLower(v) {
	case "", "true", "false", "yes", "no", "on", "off", "1", "0":
		return true
	}
	return false
}

var gitSubcommands map[string]func(what string, args []Word) []hazard

func init() {
	opts := func(short string, long ...string) getopt {
		return getopt{short: short, long: longs(long...)}
	}
	gitSubcommands = map[string]func(string, []Word) []hazard{
		"config": gitConfigCmd,
		"rebase": gitOpts(opts("x:s:X:C:S::", "exec:", "onto:", "strategy:", "strategy-option:",
			"gpg-sign::", "empty:", "whitespace:", "edit-todo"), "x", "exec"),
		"difftool":   gitOpts(opts("x:t:", "extcmd:", "tool:", "tool-help"), "x", "extcmd"),
		"fetch":      gitOpts(opts("", "upload-pack:"), "upload-pack"),
		"pull":       gitOpts(opts("", "upload-pack:"), "upload-pack"),
		"ls-remote":  gitOpts(opts("u:", "upload-pack:"), "u", "upload-pack"),
		"fetch-pack": gitOpts(opts("", "upload-pack:", "exec:"), "upload-pack", "exec"),
		"push":       gitOpts(opts("", "receive-pack:", "exec:"), "receive-pack", "exec"),
		"send-pack":  gitOpts(opts("", "receive-pack:", "exec:"), "receive-pack", "exec"),
		"archive": gitOpts(opts("o:", "exec:", "remote:", "format:", "prefix:", "output:", "add-file:",
			"add-virtual-file:"), "exec"),
		"daemon": gitOpts(opts("", "access-hook:"), "access-hook"),
		"send-email": gitOpts(opts("", "sendmail-cmd:", "to-cmd:", "cc-cmd:", "header-cmd:", "smtp-server:"),
			"sendmail-cmd", "to-cmd", "cc-cmd", "header-cmd", "smtp-server"),
		"clone":         gitClone,
		"grep":          gitGrep,
		"bisect":        gitBisect,
		"submodule":     gitSubmodule,
		"filter-branch": gitFilterBranch,
		"filter-repo":   gitFilterBranch,
		"instaweb": func(what string, _ []Word) []hazard {
			return []hazard{hz(FlagExecOption, what+" runs a web server and browser")}
		},
	}
}

// gitOpts reports the named options of a subcommand as running their value
// through the shell.
func gitOpts(g getopt, names ...string) func(string, []Word) []hazard {
	want := set(names...)
	return func(what string, args []Word) []hazard {
		p := g.parse(args)
		out := unknownHazards(what, p)
		for _, o := range p.opts {
			if !want[o.id] {
				continue
			}
			if o.id == "smtp-server" && !strings.HasPrefix(litPrefix(o.arg), "/") && !(o.arg.Dynamic && litPrefix(o.arg) == "") {
				continue // a host name, not a sendmail program
			}
			if o.hasArg {
				out = append(out, hzCode(FlagExecOption, what+" "+o.String()+" runs a command", o.arg))
			}
		}
		return out
	}
}

var gitCloneGetopt = getopt{
	short: "o:b:u:c:j:",
	long: longs("config:", "upload-pack:", "template:", "origin:", "branch:", "depth:", "reference:",
		"reference-if-able:", "separate-git-dir:", "shallow-since:", "shallow-exclude:", "jobs:",
		"filter:", "server-option:", "bundle-uri:", "ref-format:", "revision:", "recurse-submodules::"),
}

// gitClone: clone -c configures the new repository before its checkout, so
// a filter or fsmonitor named there runs at once.
func gitClone(what string, args []Word) []hazard {
	p := gitCloneGetopt.parse(args)
	out := unknownHazards(what, p)
	for _, o := range p.opts {
		switch o.id {
		case "c", "config":
			out = append(out, gitConfigHazards(what+" "+o.String(), o.arg)...)
		case "u", "upload-pack":
			out = append(out, hzCode(FlagExecOption, what+" "+o.String()+" runs a command", o.arg))
		case "template":
			out = append(out, hz(FlagExecOption, what+" --template installs hooks from "+o.arg.Value))
		}
	}
	return out
}

var gitGrepGetopt = getopt{short: "e:f:A:B:C:m:O::", long: longs("open-files-in-pager::", "max-depth:",
	"threads:", "context:", "after-context:", "before-context:", "max-count:")}

// gitGrep: -O opens the matches in a pager command.
func gitGrep(what string, args []Word) []hazard {
	p := gitGrepGetopt.parse(args)
	for _, o := range p.opts {
		if o.id == "O" || o.id == "open-files-in-pager" {
			if o.hasArg {
				return []hazard{hzCode(FlagExecOption, what+" "+o.String()+" runs a command", o.arg)}
			}
			return []hazard{hz(FlagExecOption, what+" "+o.String()+" runs PAGER")}
		}
	}
	return nil
}

// gitBisect: bisect run CMD... runs the command at each step.
func gitBisect(what string, args []Word) []hazard {
	if len(args) >= 2 && isWord(args[0], "run") {
		return []hazard{hzCode(FlagExecOption, what+" run runs a command", quoteJoin(args[1:]))}
	}
	return nil
}

// gitSubmodule: foreach runs one argument as shell code, several as an argv.
func gitSubmodule(what string, args []Word) []hazard {
	for i, w := range args {
		if isWord(w, "foreach") {
			rest := args[i+1:]
			for len(rest) > 0 && isWord(rest[0], "--recursive", "-q", "--quiet", "--") {
				rest = rest[1:]
			}
			switch len(rest) {
			case 0:
				return nil
			case 1: // one word is shell code; several are an argv
				return []hazard{hzCode(FlagExecOption, what+" foreach runs a command", rest[0])}
			}
			return []hazard{hzCode(FlagExecOption, what+" foreach runs a command", quoteJoin(rest))}
		}
		if !strings.HasPrefix(litPrefix(w), "-") {
			return nil
		}
	}
	return nil
}

// gitFilterBranch: every --*-filter (and filter-repo --*-callback) is code.
func gitFilterBranch(what string, args []Word) []hazard {
	var out []hazard
	for i := 0; i < len(args); i++ {
		v := litPrefix(args[i])
		if isWord(args[i], "--") {
			break
		}
		name, _, hasEq := strings.Cut(v, "=")
		if !strings.HasPrefix(name, "--") || !strings.HasSuffix(name, "-filter") && !strings.HasSuffix(name, "-callback") {
			continue
		}
		val := Word{}
		if hasEq {
			val = Word{Value: args[i].Value[len(name)+1:], Dynamic: args[i].Dynamic}
		} else if i+1 < len(args) {
			i++
			val = args[i]
		}
		out = append(out, hzCode(FlagExecOption, what+" "+name+" runs a command", val))
	}
	return out
}

var gitConfigGetopt = getopt{
	short: "f:",
	long: longs("file:", "blob:", "type:", "default:", "comment:", "value:", "get", "get-all",
		"get-regexp", "get-urlmatch", "get-color", "get-colorbool", "unset", "unset-all",
		"rename-section", "remove-section", "list", "edit"),
	exact: true,
}

// gitConfigCmd: `git config KEY VALUE` stores a command for git to run later.
func gitConfigCmd(what string, args []Word) []hazard {
	p := gitConfigGetopt.parse(args)
	if p.has("get", "get-all", "get-regexp", "get-urlmatch", "get-color", "get-colorbool", "unset",
		"unset-all", "rename-section", "remove-section", "list", "l", "edit", "e") {
		return nil
	}
	ops := p.operands
	if len(ops) > 0 && isWord(ops[0], "set") {
		ops = ops[1:]
	} else if len(ops) > 0 && isWord(ops[0], "get", "list", "unset", "rename-section", "remove-section", "edit") {
		return nil
	}
	if len(ops) < 2 {
		return nil
	}
	key := litPrefix(ops[0])
	if ops[0].Dynamic {
		return []hazard{hz(FlagOpaque, what+" key is dynamic")}
	}
	hs := gitConfigHazards(what, Word{Value: key + "=" + ops[1].Value, Dynamic: ops[1].Dynamic})
	if len(hs) == 0 {
		return nil
	}
	return []hazard{hz(FlagExecOption, what+" "+key+" stores a command git runs later")}
}

// ---------------------------------------------------------------------------
// make: --eval text and command-line variables that change the recipe shell
// or run $(shell ...) at once.

var makeGetopt = getopt{
	short: "C:f:I:o:W:E:j::l::O::",
	long: longs("eval:", "file:", "makefile:", "directory:", "include-dir:", "old-file:", "assume-old:",
		"what-if:", "new-file:", "assume-new:", "jobs::", "load-average::", "debug::", "output-sync::",
		"jobserver-auth:", "jobserver-style:", "shuffle::", "always-make", "environment-overrides",
		"ignore-errors", "keep-going", "just-print", "dry-run", "recon", "question", "silent", "quiet",
		"touch", "version", "help", "print-directory", "no-print-directory", "warn-undefined-variables",
		"trace", "check-symlink-times", "no-builtin-rules", "no-builtin-variables", "stop", "no-keep-going",
		"print-data-base", "no-silent"),
}

var makeAssign = regexp.MustCompile(`^\s*([^\s:#=!?+]+)\s*(=|:=|::=|:::=|\+=|\?=|!=)`)
var makeFunc = regexp.MustCompile(`\$[({]\s*(shell|eval|file|guile|call|value)\b`)

// makeHazards: a command-line assignment overrides the makefile, so SHELL=,
// VAR!=CMD and $(shell ...) take effect without any makefile change.
func makeHazards(base string, args []Word) []hazard {
	p := makeGetopt.parse(args)
	out := unknownHazards(base, p)
	for _, o := range p.opts {
		switch o.id {
		case "E", "eval":
			out = append(out, hz(FlagInlineCode, base+" --eval evaluates makefile text"))
		case "f", "file", "makefile":
			if isStdinWord(o.arg) {
				out = append(out, hz(FlagExecOption, base+" reads a makefile from stdin"))
			}
		}
	}
	for _, w := range p.operands {
		m := makeAssign.FindStringSubmatch(w.Value)
		if m == nil {
			continue
		}
		name, op, val := m[1], m[2], w.Value[len(m[0]):]
		switch {
		case op == "!=":
			out = append(out, hzCode(FlagExecOption, base+" "+name+"!= runs a command", Word{Value: val, Dynamic: w.Dynamic}))
		case name == "SHELL" || name == ".SHELLFLAGS" || name == "MAKESHELL":
			out = append(out, hz(FlagExecOption, base+" "+name+"= replaces the recipe shell"))
		case name == "MAKEFLAGS" || name == "GNUMAKEFLAGS" || name == "MAKEFILES":
			out = append(out, hz(FlagExecOption, base+" "+name+"= passes options or makefiles"))
		case w.Dynamic:
			out = append(out, hz(FlagOpaque, base+" variable "+name+" is dynamic"))
		case makeFunc.MatchString(val):
			out = append(out, hz(FlagExecOption, base+" variable "+name+" calls a make function"))
		}
	}
	return out
}

// ---------------------------------------------------------------------------
// Editors and pagers: their own command languages can run shell commands.

// vimHazards: -c CMD, +CMD, --cmd CMD, -S FILE, -s SCRIPTIN, -u VIMRC and ex
// mode reading commands from stdin; ex commands can run :!.
func vimHazards(base string, args []Word) []hazard {
	exMode := base == "ex"
	var out []hazard
	code := func(what string) { out = append(out, hz(FlagInlineCode, base+" "+what)) }
	for i := 0; i < len(args); i++ {
		w := args[i]
		v := litPrefix(w)
		if isWord(w, "--") {
			break
		}
		if w.Dynamic && (v == "" && mayBeOption(w) || v == "-" || v == "+" || v == "--") {
			out = append(out, opaqueArg(base))
			continue
		}
		next := func() Word {
			if i+1 < len(args) {
				i++
				return args[i]
			}
			return Word{}
		}
		switch {
		case strings.HasPrefix(v, "+"):
			if c := v[1:]; c != "" && strings.Trim(c, "0123456789") != "" {
				code("+" + c + " runs an editor command")
			}
		case strings.HasPrefix(v, "--"):
			switch v {
			case "--cmd":
				next()
				code("--cmd runs an editor command")
			case "--remote-send", "--remote-expr":
				next()
				code(v + " runs editor commands in a vim server")
			case "--servername", "--startuptime", "--log", "--listen", "--socketid", "--windowid", "--luamod-dev":
				next()
			}
		case strings.HasPrefix(v, "-") && len(v) > 1:
			for j := 1; j < len(v); j++ {
				c := v[j]
				arg := func() Word {
					if rest := w.Value[j+1:]; rest != "" {
						return Word{Value: rest, Dynamic: w.Dynamic}
					}
					return next()
				}
				switch c {
				case 'e', 'E':
					exMode = true
					continue
				case 's':
					if exMode {
						continue // silent ex mode
					}
					arg()
					code("-s reads normal-mode commands from a file")
				case 'c':
					arg()
					code("-c runs an editor command")
				case 'S':
					if rest := w.Value[j+1:]; rest == "" && (i+1 >= len(args) || strings.HasPrefix(litPrefix(args[i+1]), "-")) {
						code("-S sources Session.vim")
					} else {
						code("-S sources " + arg().Value)
					}
				case 'u':
					if f := arg(); !isWord(f, "NONE", "NORC", "DEFAULTS") {
						code("-u loads vimrc " + f.Value)
					}
				case 'l':
					if base == "nvim" {
						code("-l runs a Lua script")
						return out
					}
					continue
				case 'U', 'i', 'T', 'w', 'W', 't', 'q':
					arg()
				default:
					continue
				}
				break
			}
		}
	}
	if exMode && len(out) == 0 {
		code("in ex mode reads editor commands from stdin (:! runs a shell)")
	}
	return out
}

// edHazards: ed reads its commands from stdin, and `!` runs a shell command.
func edHazards(base string, args []Word) []hazard {
	for _, w := range args {
		if isWord(w, "-V", "--version", "-h", "--help") {
			return nil
		}
	}
	return []hazard{hz(FlagInlineCode, base+" reads editor commands from stdin (! runs a shell)")}
}

// emacsHazards: --eval and -l/--load/--script run Lisp, which can call-process.
func emacsHazards(base string, args []Word) []hazard {
	var out []hazard
	for i := 0; i < len(args); i++ {
		v := litPrefix(args[i])
		if isWord(args[i], "--") {
			break
		}
		name, _, hasEq := strings.Cut(v, "=")
		switch name {
		case "--eval", "-eval", "--execute", "-execute", "-e":
			if name == "-e" && base != "emacsclient" {
				continue
			}
			out = append(out, hz(FlagInlineCode, base+" "+name+" evaluates Lisp"))
		case "-l", "--load", "-load", "--script", "-script", "-x":
			out = append(out, hz(FlagInlineCode, base+" "+name+" loads a Lisp file"))
		default:
			continue
		}
		if !hasEq && name != "-e" && name != "-x" {
			i++
		}
	}
	return out
}

var lessSafeCommand = regexp.MustCompile(`^\+{1,2}([0-9]*[gGFpP%]?|[/?&][^\r\n]*)$`)

// lessHazards: +CMD runs less commands at start, and !, | and v run a shell.
func lessHazards(base string, args []Word) []hazard {
	var out []hazard
	for _, w := range args {
		v := litPrefix(w)
		if isWord(w, "--") {
			break
		}
		switch {
		case strings.HasPrefix(v, "+") && w.Dynamic:
			out = append(out, hz(FlagOpaque, base+" +command is dynamic"))
		case strings.HasPrefix(v, "+") && !lessSafeCommand.MatchString(v):
			out = append(out, hz(FlagInlineCode, base+" "+v+" runs less commands (! runs a shell)"))
		}
	}
	return out
}

var manGetopt = getopt{
	short: "C:e:E:L:m:M:p:P:r:R:s:S:H::X::T::",
	long: longs("config-file:", "pager:", "html::", "preprocessor:", "prompt:", "encoding:", "extension:",
		"locale:", "systems:", "manpath:", "sections:", "recode:", "troff-device::", "gxditview::"),
}

// manHazards: -P/--pager and -H/--html name programs man runs through a shell.
func manHazards(base string, args []Word) []hazard {
	p := manGetopt.parse(args)
	out := unknownHazards(base, p)
	for _, o := range p.opts {
		switch o.id {
		case "P", "pager":
			out = append(out, hzCode(FlagExecOption, base+" "+o.String()+" runs a command", o.arg))
		case "H", "html":
			if o.hasArg {
				out = append(out, hzCode(FlagExecOption, base+" "+o.String()+" runs a browser", o.arg))
			} else {
				out = append(out, hz(FlagExecOption, base+" "+o.String()+" runs BROWSER"))
			}
		case "C", "config-file":
			out = append(out, hz(FlagExecOption, base+" "+o.String()+" reads config file "+o.arg.Value))
		}
	}
	return out
}

// ---------------------------------------------------------------------------
// sqlite3: dot-commands and SQL functions that run programs or load code.

var sqliteFunc = regexp.MustCompile(`(?i)\b(load_extension|edit)\s*\(`)

// sqliteRuns reports whether one SQL argument runs a program or loads code,
// and the command of a .shell or .system. An argument that starts with a
// dot is one dot-command, whose name may be abbreviated; any other is SQL.
func sqliteRuns(s string) (bool, *Word) {
	t := strings.TrimLeft(s, " \t\r\n")
	if !strings.HasPrefix(t, ".") {
		return sqliteFunc.MatchString(s), nil
	}
	fields := strings.Fields(t[1:])
	if len(fields) == 0 {
		return false, nil
	}
	name := strings.ToLower(fields[0])
	abbrev := func(full string, min int) bool { return len(name) >= min && strings.HasPrefix(full, name) }
	switch {
	case abbrev("shell", 2) || abbrev("system", 2):
		rest := t[strings.Index(t, fields[0])+len(fields[0]):]
		return true, &Word{Value: strings.TrimLeft(rest, " \t")}
	case abbrev("load", 2) || abbrev("excel", 3):
		return true, nil
	}
	for _, f := range fields[1:] {
		if strings.HasPrefix(strings.TrimLeft(f, `'"`), "|") {
			return true, nil // .output |cmd, .once |cmd, .import |cmd, .read |cmd
		}
		if name[0] == 'o' && (f == "-x" || f == "-e" || f == "--x" || f == "--e") {
			return true, nil // .once -x opens a spreadsheet or editor program
		}
	}
	return false, nil
}

// sqliteHazards: after the database name every operand is SQL or a
// dot-command; with none, sqlite3 reads them from stdin. -safe disables the
// dangerous ones.
func sqliteHazards(base string, args []Word) []hazard {
	var out []hazard
	var sql []Word
	safe, quiet, operands := false, false, 0
	for i := 0; i < len(args); i++ {
		w := args[i]
		v := litPrefix(w)
		if !strings.HasPrefix(v, "-") || isWord(w, "-") {
			if w.Dynamic && v == "" && mayBeOption(w) {
				out = append(out, opaqueArg(base))
			}
			if operands > 0 {
				sql = append(sql, w)
			}
			operands++
			continue
		}
		if w.Dynamic {
			out = append(out, opaqueArg(base))
			continue
		}
		switch strings.TrimLeft(v, "-") {
		case "cmd":
			if i+1 < len(args) {
				i++
				sql = append(sql, args[i])
			}
		case "init":
			if i+1 < len(args) {
				i++
				out = append(out, hz(FlagExecOption, base+" -init runs commands from "+args[i].Value))
			}
		case "safe":
			safe = true
		case "version", "help":
			quiet = true
		case "A":
			quiet = true
			i = len(args)
		case "separator", "newline", "nullvalue", "vfs", "mmap", "maxsize", "escape", "nonce", "heap", "zip":
			i++
		case "pagecache", "lookaside":
			i += 2
		}
	}
	if safe {
		return out // -safe refuses .shell, .system, .load and the like
	}
	for _, w := range sql {
		if w.Dynamic {
			out = append(out, hz(FlagOpaque, base+" SQL is dynamic"))
			continue
		}
		if ok, code := sqliteRuns(w.Value); ok && code != nil {
			out = append(out, hzCode(FlagInlineCode, base+" .shell runs a command", *code))
		} else if ok {
			out = append(out, hz(FlagInlineCode, base+" SQL runs a program or loads code"))
		}
	}
	if operands < 2 && !quiet {
		out = append(out, hz(FlagInlineCode, base+" reads SQL and dot-commands (.shell) from stdin"))
	}
	return out
}

// ---------------------------------------------------------------------------
// Debuggers: their command language runs shell commands.

// gdbHazards: gdb always runs debugger commands, from -ex/-x, init files
// (-batch) or stdin, and `shell`/`!` runs a shell command.
func gdbHazards(base string, args []Word) []hazard {
	var out []hazard
	batch := false
	for i := 0; i < len(args); i++ {
		v := litPrefix(args[i])
		if isWord(args[i], "--args", "-args") {
			break
		}
		if !strings.HasPrefix(v, "-") {
			continue
		}
		key, _, hasEq := strings.Cut(strings.TrimLeft(v, "-"), "=")
		val := func() Word {
			if hasEq {
				return Word{Value: args[i].Value[strings.IndexByte(args[i].Value, '=')+1:], Dynamic: args[i].Dynamic}
			}
			if i+1 < len(args) {
				i++
				return args[i]
			}
			return Word{}
		}
		switch key {
		case "ex", "eval-command", "iex", "init-eval-command":
			c := val()
			if sh, ok := gdbShell(c); ok {
				out = append(out, hzCode(FlagInlineCode, base+" -"+key+" runs a shell command", sh))
			} else {
				out = append(out, hz(FlagInlineCode, base+" -"+key+" runs debugger commands"))
			}
		case "x", "command", "ix", "init-command":
			out = append(out, hz(FlagInlineCode, base+" -"+key+" runs debugger commands from "+val().Value))
		case "batch":
			batch = true
		case "version", "help", "configuration":
			return nil
		case "p", "pid", "c", "core", "cd", "d", "directory", "s", "symbols", "e", "exec", "se",
			"b", "l", "tty", "t", "data-directory", "D", "i", "interpreter":
			val()
		}
	}
	if len(out) > 0 {
		return out
	}
	if batch {
		return []hazard{hz(FlagInlineCode, base+" -batch runs commands from init files")}
	}
	return []hazard{hz(FlagInlineCode, base+" reads debugger commands from stdin (shell runs a command)")}
}

// gdbShell extracts the command of a gdb `shell CMD` or `!CMD`.
func gdbShell(w Word) (Word, bool) {
	v := strings.TrimLeft(w.Value, " \t")
	switch {
	case strings.HasPrefix(v, "!"):
		return Word{Value: v[1:], Dynamic: w.Dynamic}, true
	case strings.HasPrefix(v, "shell ") || strings.HasPrefix(v, "shell\t"):
		return Word{Value: strings.TrimLeft(v[len("shell"):], " \t"), Dynamic: w.Dynamic}, true
	}
	return Word{}, false
}

// lldbHazards: like gdb; `platform shell` and `script` run code.
func lldbHazards(base string, args []Word) []hazard {
	for i := 0; i < len(args); i++ {
		v := litPrefix(args[i])
		switch v {
		case "-v", "--version", "-h", "--help":
			return nil
		case "-o", "--one-line", "-O", "--one-line-before-file", "-k", "--one-line-on-crash", "-K", "--source-on-crash", "-s", "--source", "-S", "--source-before-file":
			return []hazard{hz(FlagInlineCode, base+" "+v+" runs debugger commands")}
		}
	}
	return []hazard{hz(FlagInlineCode, base+" reads debugger commands from stdin (platform shell runs a command)")}
}

// ---------------------------------------------------------------------------
// Containers: exec and run start a command somewhere the analyzer cannot see.

var containerValueOpts = set("-c", "--context", "--config", "-H", "--host", "-l", "--log-level",
	"--tlscacert", "--tlscert", "--tlskey", "--connection", "--url", "--identity", "--root", "--runroot",
	"--storage-driver", "--cgroup-manager", "-n", "--namespace", "--kubeconfig", "-s", "--server",
	"--cluster", "--user", "--token", "--as", "--as-group", "--as-uid", "-v", "--v", "--request-timeout",
	"--certificate-authority", "--client-certificate", "--client-key", "--cache-dir", "--tls-server-name",
	"--profile", "--profile-output", "-a", "--address", "--snapshotter", "-f", "--file", "-p",
	"--project-name", "--env-file", "--project-directory", "--ansi", "--parallel", "--progress",
	"--runtime-endpoint", "-r", "--image-endpoint", "-i", "--timeout", "-t", "--remote", "--project")

// containerHazards finds the subcommand past global options (and docker
// container / docker compose) and reports exec, run, debug and rsh.
func containerHazards(base string, args []Word) []hazard {
	var out []hazard
	var ops []Word
	guess := false // an unknown option may have taken the first operand as its value
	for i := 0; i < len(args) && len(ops) < 3; i++ {
		w := args[i]
		v := litPrefix(w)
		switch {
		case w.Dynamic && (v == "" && mayBeOption(w) || v == "-" || v == "--"):
			out = append(out, opaqueArg(base))
		case isWord(w, "--"):
			i = len(args)
		case strings.HasPrefix(v, "-") && v != "-":
			if containerValueOpts[v] {
				i++
			} else if !strings.Contains(v, "=") && len(ops) == 0 {
				guess = true
			}
		default:
			ops = append(ops, w)
		}
	}
	if base != "docker-compose" && base != "podman-compose" && len(ops) > 0 && isWord(ops[0], "container", "compose") {
		ops = ops[1:]
	}
	kind := "a container"
	if base == "kubectl" || base == "oc" {
		kind = "a pod"
	}
	for k, w := range ops {
		if k > 1 || k == 1 && !guess {
			break
		}
		if isWord(w, "exec", "run", "debug", "rsh") {
			out = append(out, hz(FlagRemoteCommand, base+" "+w.Value+" runs a command in "+kind))
			break
		}
	}
	return out
}

// ---------------------------------------------------------------------------
// Schedulers and detached sessions: the command runs later, outside governance.

const laterDetail = " schedules a command to run later, outside governance"

var crontabGetopt = getopt{short: "u:n:"}

// crontabHazards: installing a crontab (a file, stdin or -e) schedules commands;
// listing or removing does not.
func crontabHazards(base string, args []Word) []hazard {
	p := crontabGetopt.parse(args)
	if len(p.operands) == 0 && p.has("l", "r", "V", "h", "T", "c") && !p.has("e") {
		return nil
	}
	return []hazard{hz(FlagExecOption, base+laterDetail)}
}

var atGetopt = getopt{short: "q:f:t:"}

// atHazards: at and batch queue a job unless they only list, remove or show.
func atHazards(base string, args []Word) []hazard {
	p := atGetopt.parse(args)
	if p.has("l", "r", "d", "c", "V", "h") {
		return nil
	}
	return []hazard{hz(FlagExecOption, base+laterDetail)}
}

// laterHazards: systemd-run starts the command as a unit, outside this shell.
func laterHazards(base string, args []Word) []hazard {
	return []hazard{hz(FlagExecOption, base+" runs a command outside governance")}
}

var tmuxRuns = set("new-session", "new", "new-window", "neww", "split-window", "splitw", "respawn-pane",
	"respawnp", "respawn-window", "respawnw", "run-shell", "run", "send-keys", "send", "if-shell", "if",
	"pipe-pane", "pipep", "display-popup", "popup", "source-file", "source")

var tmuxGetopt = getopt{short: "+c:f:L:S:T:"}

// tmuxHazards: tmux commands that start or type into a pane run commands in a
// server that outlives the governed shell.
func tmuxHazards(base string, args []Word) []hazard {
	p := tmuxGetopt.parse(args)
	for _, o := range p.opts {
		if o.id == "c" {
			return []hazard{hzCode(FlagExecOption, base+" -c runs a command", o.arg)}
		}
	}
	for _, w := range p.operands {
		if w.Dynamic {
			return []hazard{opaqueArg(base)}
		}
		if tmuxRuns[w.Value] {
			return []hazard{hz(FlagExecOption, base+" "+w.Value+" runs a command outside governance")}
		}
	}
	return nil
}

// screenHazards: screen starts a command or shell (or stuffs keys into one)
// unless it only lists or wipes sessions.
func screenHazards(base string, args []Word) []hazard {
	for _, w := range args {
		if isWord(w, "-ls", "-list", "-wipe", "-v", "--version", "-h", "--help") {
			return nil
		}
	}
	return []hazard{hz(FlagExecOption, base+" runs a command outside governance")}
}

// ---------------------------------------------------------------------------
// Network relays that run a program for each connection.

var ncGetopt = getopt{
	short: "c:e:g:G:i:I:m:M:O:o:p:P:q:s:T:V:w:W:x:X:",
	long:  longs("exec:", "sh-exec:", "lua-exec:", "proxy:", "proxy-type:", "proxy-auth:", "source:", "wait:", "idle-timeout:", "output:", "hex-dump:", "allow:", "deny:", "allowfile:", "denyfile:", "max-conns:"),
}

// ncHazards: -e runs a program on the socket, -c/--sh-exec a shell command.
func ncHazards(base string, args []Word) []hazard {
	p := ncGetopt.parse(args)
	out := unknownHazards(base, p)
	for _, o := range p.opts {
		switch o.id {
		case "e", "exec":
			out = append(out, hzCode(FlagExecOption, base+" "+o.String()+" runs a program", o.arg))
		case "c", "sh-exec":
			out = append(out, hzCode(FlagExecOption, base+" "+o.String()+" runs a command", o.arg))
		case "lua-exec":
			out = append(out, hz(FlagInlineCode, base+" --lua-exec runs a Lua script"))
		}
	}
	return out
}

// socatHazards: EXEC:, SYSTEM: and SHELL: addresses run a command.
func socatHazards(base string, args []Word) []hazard {
	var out []hazard
	for i := 0; i < len(args); i++ {
		w := args[i]
		v := litPrefix(w)
		if strings.HasPrefix(v, "-") && v != "-" {
			switch v {
			case "-b", "-t", "-T", "-lf", "-L", "-W", "-lp":
				i++
			}
			continue
		}
		for _, addr := range strings.Split(w.Value, "!!") {
			typ, params, _ := strings.Cut(addr, ":")
			typ = strings.ToUpper(typ)
			if w.Dynamic && !strings.Contains(litPrefix(Word{Value: addr, Dynamic: true}), ":") {
				out = append(out, hz(FlagOpaque, base+" address is dynamic"))
				continue
			}
			switch typ {
			case "EXEC", "SYSTEM", "SHELL":
				out = append(out, hzCode(FlagExecOption, base+" "+typ+": runs a command", Word{Value: socatParam(params), Dynamic: w.Dynamic}))
			}
		}
	}
	return out
}

// socatParam cuts an address's first parameter at the first unquoted comma.
func socatParam(s string) string {
	var b strings.Builder
	var q byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case q != 0 && c == q:
			q = 0
		case q != 0:
			b.WriteByte(c)
		case c == '"' || c == '\'':
			q = c
		case c == '\\' && i+1 < len(s):
			i++
			b.WriteByte(s[i])
		case c == ',':
			return b.String()
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// ---------------------------------------------------------------------------
// Tools that take a command as an option and run it through sh -c.

var scriptHazardGetopt = getopt{short: "c:E:I:O:B:T:t::m:", long: longs("command:", "log-io:", "log-in:",
	"log-out:", "log-timing:", "timing::", "logging-format:", "echo:", "output-limit:")}

// scriptHazards: script -c runs a command through $SHELL; without it, $SHELL
// reads stdin.
func scriptHazards(base string, args []Word) []hazard {
	p := scriptHazardGetopt.parse(args)
	out := unknownHazards(base, p)
	for _, o := range p.opts {
		if o.id == "c" || o.id == "command" {
			return append(out, hzCode(FlagExecOption, base+" "+o.String()+" runs a command", o.arg))
		}
	}
	if !p.has("V", "h", "version", "help") {
		out = append(out, hz(FlagExecOption, base+" runs $SHELL on stdin"))
	}
	return out
}

var flockHazardGetopt = getopt{short: "c:w:E:", long: longs("command:", "timeout:", "wait:",
	"conflict-exit-code:")}

// flockHazards: flock -c runs its argument through sh -c.
func flockHazards(base string, args []Word) []hazard {
	p := flockHazardGetopt.parse(args)
	out := unknownHazards(base, p)
	for _, o := range p.opts {
		if o.id == "c" || o.id == "command" {
			out = append(out, hzCode(FlagExecOption, base+" "+o.String()+" runs a command", o.arg))
		}
	}
	return out
}

var watchHazardGetopt = getopt{short: "+n:d::q:", long: longs("interval:", "differences::", "equexit:",
	"chgexit", "exec", "beep", "color", "no-title", "precise", "errexit"), exact: true}

// watchHazards: watch joins its operands and runs them through sh -c, or
// with -x runs them as an argv.
func watchHazards(base string, args []Word) []hazard {
	p := watchHazardGetopt.parse(args)
	out := unknownHazards(base, p)
	switch {
	case len(p.operands) > 0 && p.has("x", "exec"):
		out = append(out, hzCode(FlagExecOption, base+" runs a command repeatedly", quoteJoin(p.operands)))
	case len(p.operands) > 0: // joined with spaces and run by sh -c
		out = append(out, hzCode(FlagExecOption, base+" runs a command repeatedly", joinWords(p.operands)))
	}
	return out
}

var npmGetopt = getopt{short: "c:w:C:", long: longs("call:", "script-shell:", "workspace:", "prefix:",
	"package:"), exact: true}

// npmHazards: npm exec/npx -c runs a shell command; --script-shell swaps the
// shell that runs package scripts.
func npmHazards(base string, args []Word) []hazard {
	p := npmGetopt.parse(args)
	out := unknownHazards(base, p)
	isExec := base == "npx" || len(p.operands) > 0 && isWord(p.operands[0], "exec", "x")
	for _, o := range p.opts {
		switch {
		case (o.id == "c" || o.id == "call") && isExec:
			out = append(out, hzCode(FlagExecOption, base+" "+o.String()+" runs a command", o.arg))
		case o.id == "script-shell":
			out = append(out, hz(FlagExecOption, base+" --script-shell replaces the shell that runs scripts"))
		}
	}
	return out
}

var mysqlRuns = regexp.MustCompile(`(?i)(^|[;\s])(system|pager|edit)\b|\\[!Pe]`)
var psqlRuns = regexp.MustCompile(`(?i)\\!|\\(o|out|g|gx|w|write)\s*\||\\copy\b.*\bprogram\b|\bcopy\b.*\bprogram\b|\\setenv\b|\\e[fv]?\b`)

var mysqlGetopt = getopt{short: "e:u:p::h:P:D:S:", long: longs("execute:", "user:", "password::", "host:",
	"port:", "database:", "socket:")}

// mysqlHazards: the client's system, \! and pager commands run shell commands.
func mysqlHazards(base string, args []Word) []hazard {
	p := mysqlGetopt.parse(args)
	for _, o := range p.opts {
		if (o.id == "e" || o.id == "execute") && (o.arg.Dynamic || mysqlRuns.MatchString(o.arg.Value)) {
			return []hazard{hz(FlagInlineCode, base+" client command runs a shell command")}
		}
	}
	return nil
}

var psqlGetopt = getopt{short: "c:d:f:h:p:U:v:o:L:T:F:R:P:", long: longs("command:", "dbname:", "file:",
	"host:", "port:", "username:", "set:", "variable:", "output:", "log-file:")}

// psqlHazards: \!, piped \o and \g, \copy ... program and editors run commands.
func psqlHazards(base string, args []Word) []hazard {
	p := psqlGetopt.parse(args)
	for _, o := range p.opts {
		if (o.id == "c" || o.id == "command") && (o.arg.Dynamic || psqlRuns.MatchString(o.arg.Value)) {
			return []hazard{hz(FlagInlineCode, base+" meta-command runs a shell command")}
		}
	}
	return nil
}

// ---------------------------------------------------------------------------
// Environment.

// dangerousEnv reports whether an environment variable name, assigned in a command prefix or by env/export,
// changes what a later program executes or loads.
func dangerousEnv(name string) (why string, ok bool) {
	if why, ok := envNames[name]; ok {
		return why, true
	}
	for _, p := range envPrefixes {
		if strings.HasPrefix(name, p.prefix) {
			return p.why, true
		}
	}
	lower := strings.ToLower(name)
	switch {
	case strings.HasPrefix(lower, "npm_config_"):
		return "sets npm configuration (script-shell, registry, node-options)", true
	case lower == "http_proxy" || lower == "https_proxy" || lower == "all_proxy" || lower == "ftp_proxy" || lower == "no_proxy":
		return "changes where network traffic goes", true
	}
	return "", false
}

var envPrefixes = []struct{ prefix, why string }{
	{"LD_", "the dynamic linker loads or audits the libraries it names"},
	{"DYLD_", "the dynamic linker loads the libraries it names"},
	{"GIT_CONFIG_", "adds git configuration, which can name commands to run"},
	{"BASH_FUNC_", "imports a shell function into bash"},
	{"LUA_INIT", "lua runs it (or the file it names) at startup"},
	{"LUA_PATH", "changes which Lua modules load"},
	{"LUA_CPATH", "changes which Lua C modules load"},
	{"R_PROFILE", "R runs the profile it names at startup"},
	{"R_ENVIRON", "R reads the environment file it names at startup"},
	{"CARGO_TARGET_", "a target runner runs built programs"},
}

var envNames = map[string]string{
	"BASH_ENV":                     "bash sources the file it names before running a script",
	"ENV":                          "sh sources the file it names at startup",
	"PATH":                         "changes which program a command name runs",
	"PROMPT_COMMAND":               "bash runs it before each prompt",
	"PS4":                          "expanded (with command substitution) for each traced command under xtrace",
	"PS0":                          "expanded with command substitution by interactive bash",
	"IFS":                          "changes how the shell splits words",
	"SHELLOPTS":                    "turns on shell options in child bash processes",
	"BASHOPTS":                     "turns on shopt options in child bash processes",
	"BASH_LOADABLES_PATH":          "changes where enable -f loads builtins from",
	"ZDOTDIR":                      "changes which zsh startup files run",
	"FPATH":                        "changes where shell functions autoload from",
	"SHELL":                        "programs that spawn a shell run it",
	"XDG_CONFIG_HOME":              "changes which configuration files (and the commands they name) programs load",
	"XDG_CONFIG_DIRS":              "changes which configuration files programs load",
	"PAGER":                        "programs run it to page output",
	"GIT_PAGER":                    "git runs it to page output",
	"MANPAGER":                     "man runs it to page output",
	"SYSTEMD_PAGER":                "systemd tools run it to page output",
	"SYSTEMD_PAGERSECURE":          "lets the systemd pager run shell commands",
	"SYSTEMD_EDITOR":               "systemctl edit runs it",
	"MANOPT":                       "man reads options from it (-P runs a pager)",
	"LESS":                         "less reads options from it (+! runs a command)",
	"LESSOPEN":                     "less runs it as an input preprocessor",
	"LESSCLOSE":                    "less runs it as an input postprocessor",
	"LESSKEY":                      "less loads key bindings from it",
	"LESSKEYIN":                    "less loads key bindings from it",
	"LESSKEY_CONTENT":              "less loads key bindings from it",
	"LESSEDIT":                     "less runs it as the editor command",
	"EDITOR":                       "programs run it to edit text",
	"VISUAL":                       "programs run it to edit text",
	"SUDO_EDITOR":                  "sudoedit runs it",
	"FCEDIT":                       "fc runs it",
	"GIT_EDITOR":                   "git runs it to edit text",
	"GIT_SEQUENCE_EDITOR":          "git rebase -i runs it",
	"GIT_SSH":                      "git runs it in place of ssh",
	"GIT_SSH_COMMAND":              "git runs it in place of ssh",
	"GIT_PROXY_COMMAND":            "git runs it to connect",
	"GIT_EXTERNAL_DIFF":            "git runs it to show diffs",
	"GIT_ASKPASS":                  "git runs it to ask for credentials",
	"SSH_ASKPASS":                  "ssh runs it to ask for a passphrase",
	"SSH_ASKPASS_REQUIRE":          "makes ssh run SSH_ASKPASS",
	"SUDO_ASKPASS":                 "sudo -A runs it",
	"SSH_AUTH_SOCK":                "selects the ssh agent that signs for ssh and git",
	"GIT_CONFIG":                   "selects the git config file, which can name commands",
	"GIT_CONFIG_PARAMETERS":        "adds git configuration, which can name commands to run",
	"GIT_EXEC_PATH":                "changes where git finds its subcommands",
	"GIT_TEMPLATE_DIR":             "changes the hooks new repositories get",
	"GIT_DIR":                      "selects a repository whose config and hooks can run commands",
	"GIT_COMMON_DIR":               "selects a repository whose config and hooks can run commands",
	"GIT_ALLOW_PROTOCOL":           "may enable the ext:: transport, which runs commands",
	"GIT_SSL_NO_VERIFY":            "turns off TLS verification for git",
	"GIT_SSL_CAINFO":               "changes which certificates git trusts",
	"PERL5OPT":                     "perl reads switches (-M loads code) from it",
	"PERL5LIB":                     "changes which Perl modules load",
	"PERLLIB":                      "changes which Perl modules load",
	"PERL5DB":                      "perl -d runs it as the debugger",
	"PYTHONSTARTUP":                "python runs the file it names",
	"PYTHONPATH":                   "changes which Python modules load",
	"PYTHONHOME":                   "changes which Python standard library loads",
	"PYTHONINSPECT":                "makes python read code from stdin after the script",
	"PYTHONUSERBASE":               "changes the user site-packages, whose .pth files run code",
	"PYTHONBREAKPOINT":             "breakpoint() calls the callable it names",
	"PYTHONWARNINGS":               "a warning category names a module to import",
	"PYTHONHTTPSVERIFY":            "turns off TLS verification for python",
	"NODE_OPTIONS":                 "node reads options (--require loads code) from it",
	"NODE_PATH":                    "changes which Node modules load",
	"NODE_EXTRA_CA_CERTS":          "changes which certificates node trusts",
	"NODE_TLS_REJECT_UNAUTHORIZED": "turns off TLS verification for node",
	"RUBYOPT":                      "ruby reads switches (-r loads code) from it",
	"RUBYLIB":                      "changes which Ruby libraries load",
	"GEM_HOME":                     "changes which Ruby gems load",
	"GEM_PATH":                     "changes which Ruby gems load",
	"BUNDLE_GEMFILE":               "changes which Gemfile bundler loads",
	"PHPRC":                        "changes which php.ini loads (auto_prepend_file runs code)",
	"PHP_INI_SCAN_DIR":             "adds php.ini files (auto_prepend_file runs code)",
	"TCLLIBPATH":                   "changes which Tcl packages load",
	"JAVA_TOOL_OPTIONS":            "the JVM reads options (-javaagent loads code) from it",
	"_JAVA_OPTIONS":                "the JVM reads options (-javaagent loads code) from it",
	"JDK_JAVA_OPTIONS":             "the java launcher reads options from it",
	"CLASSPATH":                    "changes which Java classes load",
	"MAVEN_OPTS":                   "the JVM running Maven reads options from it",
	"GRADLE_OPTS":                  "the JVM running Gradle reads options from it",
	"GOFLAGS":                      "go reads flags (-toolexec runs a program) from it",
	"GOENV":                        "selects the go environment file",
	"GOPROXY":                      "changes where Go modules are downloaded from",
	"GONOSUMDB":                    "turns off checksum verification for Go modules",
	"GONOSUMCHECK":                 "turns off checksum verification for Go modules",
	"GOINSECURE":                   "allows insecure Go module downloads",
	"GOTOOLCHAIN":                  "makes go download and run another toolchain",
	"RUSTC_WRAPPER":                "cargo runs it around rustc",
	"RUSTC_WORKSPACE_WRAPPER":      "cargo runs it around rustc",
	"CARGO_BUILD_RUSTC_WRAPPER":    "cargo runs it around rustc",
	"RUSTC":                        "cargo runs it as the compiler",
	"CARGO_HOME":                   "changes cargo's config, which can name programs",
	"PIP_INDEX_URL":                "changes where pip installs packages from",
	"PIP_EXTRA_INDEX_URL":          "adds a place pip installs packages from",
	"PIP_CONFIG_FILE":              "selects pip's config file",
	"GCONV_PATH":                   "glibc loads charset modules from it",
	"OPENSSL_CONF":                 "OpenSSL loads a config that can load engines",
	"OPENSSL_ENGINES":              "changes where OpenSSL loads engines from",
	"OPENSSL_MODULES":              "changes where OpenSSL loads providers from",
	"SSL_CERT_FILE":                "changes which certificates are trusted",
	"SSL_CERT_DIR":                 "changes which certificates are trusted",
	"CURL_CA_BUNDLE":               "changes which certificates curl trusts",
	"REQUESTS_CA_BUNDLE":           "changes which certificates python requests trusts",
	"CURL_HOME":                    "changes which .curlrc curl reads",
	"WGETRC":                       "changes which wgetrc wget reads",
	"INPUTRC":                      "changes readline key bindings (macros type commands)",
	"BROWSER":                      "programs run it to open URLs",
	"KUBECONFIG":                   "selects the kube config, whose exec credential plugins run",
	"DOCKER_HOST":                  "selects the Docker daemon commands run on",
	"DOCKER_CONTEXT":               "selects the Docker daemon commands run on",
	"DOCKER_CONFIG":                "selects Docker's config, whose credential helpers run",
	"AWS_CONFIG_FILE":              "selects the AWS config, whose credential_process runs",
	"TAR_OPTIONS":                  "tar reads options (--to-command runs a command) from it",
	"ZIPOPT":                       "zip reads options (-TT runs a command) from it",
	"RSYNC_RSH":                    "rsync runs it as the remote shell",
	"RSYNC_CONNECT_PROG":           "rsync runs it to connect",
	"CVS_RSH":                      "cvs runs it as the remote shell",
	"MAKEFLAGS":                    "make reads options (--eval) from it",
	"GNUMAKEFLAGS":                 "make reads options (--eval) from it",
	"MAKEFILES":                    "make reads the makefiles it names",
	"VIMINIT":                      "vim runs it as ex commands at startup",
	"EXINIT":                       "ex and vi run it as commands at startup",
	"VIMRUNTIME":                   "changes which vim runtime scripts load",
	"MYVIMRC":                      "names the vimrc vim loads",
	"EMACSLOADPATH":                "changes which Emacs Lisp loads",
	"GTK_MODULES":                  "GTK programs load the modules it names",
	"GTK_PATH":                     "GTK programs load modules from it",
	"QT_PLUGIN_PATH":               "Qt programs load plugins from it",
}

// isStdinWord reports whether a program operand names standard input: "-"
// or an absolute path to descriptor 0 (/dev/stdin, /dev/fd/0,
// /proc/self/fd/0, ...).
func isStdinWord(w Word) bool {
	if isWord(w, "-") {
		return true
	}
	if w.Dynamic || !path.IsAbs(w.Value) {
		return false
	}
	fd, ok, _ := fdPath(w.Value)
	return ok && fd == 0
}
