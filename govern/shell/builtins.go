package shell

// Builtins run inside the shell process: their arguments never reach a
// child's command line. Lists follow bash 5.2 and dash 0.5.12 (Debian 12).
var bashBuiltins = setOf(":", ".", "[", "alias", "bg", "bind", "break", "builtin", "caller", "cd",
	"command", "compgen", "complete", "compopt", "continue", "declare", "dirs", "disown", "echo",
	"enable", "eval", "exec", "exit", "export", "false", "fc", "fg", "getopts", "hash", "help",
	"history", "jobs", "kill", "let", "local", "logout", "mapfile", "popd", "printf", "pushd", "pwd",
	"read", "readarray", "readonly", "return", "set", "shift", "shopt", "source", "suspend", "test",
	"times", "trap", "true", "type", "typeset", "ulimit", "umask", "unalias", "unset", "wait")

var shBuiltins = setOf(":", ".", "[", "alias", "bg", "break", "cd", "chdir", "command", "continue",
	"echo", "eval", "exec", "exit", "export", "false", "fc", "fg", "getopts", "hash", "jobs", "kill",
	"local", "printf", "pwd", "read", "readonly", "return", "set", "shift", "test", "times", "trap",
	"true", "type", "ulimit", "umask", "unalias", "unset", "wait")

// shells are the interpreters whose code the analyzer can read, with the
// dialect each one parses.
var shells = map[string]Dialect{
	"bash": DialectBash, "rbash": DialectBash,
	"sh": DialectSh, "dash": DialectSh, "ash": DialectSh, "posh": DialectSh,
}

// otherShells run code in a grammar the analyzer does not model.
var otherShells = setOf("zsh", "ksh", "ksh93", "mksh", "csh", "tcsh", "fish", "pwsh", "powershell", "yash", "xonsh", "nu", "elvish", "oil", "osh", "ysh")

// interpreters run a script file named as their first operand.
var interpreters = setOf("python", "python2", "python3", "perl", "ruby", "node", "nodejs", "php", "lua", "Rscript", "tclsh", "deno", "bun")

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

func (w *walker) isBuiltin(name string, d Dialect) bool {
	if w.builtinsDisabled {
		return false
	}
	if d == DialectSh {
		return shBuiltins[name]
	}
	return bashBuiltins[name]
}
