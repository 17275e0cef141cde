package shell

import (
	"os"
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/mitrity/mitrity/govern"
)

// callExpr handles one simple command: assignments, words, redirections.
func (w *walker) callExpr(ce *syntax.CallExpr, redirs []Redirect, fr frame) {
	for _, as := range ce.Assigns {
		w.assignSubst(as, fr)
	}
	fr.prefix = nil
	for _, word := range ce.Args {
		w.substitutions(word, fr)
	}
	pos := fr.pos(ce)
	if len(ce.Args) == 0 {
		// Plain assignments change the shell's own variables.
		for _, as := range ce.Assigns {
			if as.Name != nil {
				w.assignName(as.Name.Value, pos)
			}
			w.assign(as, fr, false)
		}
		return
	}
	fr.prefix = ce.Assigns
	var prefix []string
	for _, as := range ce.Assigns {
		if as.Name == nil {
			continue
		}
		prefix = append(prefix, as.Name.Value)
		w.prefixAssign(as.Name.Value, pos, fr)
		if as.Name.Value == "PS4" {
			w.promptVar(w.assignValue(as, fr, false), pos, fr)
		}
	}
	args := w.resolveArgs(ce.Args, &fr)
	if len(args) > 0 && !args[0].Dynamic && (hasGlob(ce.Args[0]) || unquotedParam(ce.Args[0]) && isGlobPattern(args[0].Value, false)) {
		w.flag(FlagGlobCommand, pos, "command name %q has glob characters: the file it runs is chosen at run time", args[0].Value)
		args[0].Dynamic = true
	}
	w.run(args, &Command{Pos: pos, Assigns: prefix, Redirects: redirs}, fr, lookupAll)
}

// lookup says which kinds of command a name may resolve to: wrappers such
// as env and sudo only ever run programs, `command` skips functions and
// `builtin` runs only builtins.
type lookup int

const (
	lookupAll lookup = iota
	lookupNoFunc
	lookupExternal
	lookupBuiltin
)

// prefixAssign checks an environment assignment that applies to one command.
func (w *walker) prefixAssign(name string, pos Pos, fr frame) {
	if why, ok := dangerousEnv(name); ok {
		w.flag(FlagDangerousEnv, pos, "%s=: %s", name, why)
	}
}

func (w *walker) assignSubst(as *syntax.Assign, fr frame) {
	if as.Value != nil {
		w.substitutions(as.Value, fr)
	}
	if as.Index != nil {
		w.subscript(as.Name, as.Index, fr)
	}
	if as.Array != nil {
		for _, el := range as.Array.Elems {
			if el.Index != nil {
				w.subscript(as.Name, el.Index, fr)
			}
			w.substitutions(el.Value, fr)
		}
	}
}

// subscript walks an array subscript: arithmetic for indexed arrays, a
// string for associative ones.
func (w *walker) subscript(name *syntax.Lit, x syntax.ArithmExpr, fr frame) {
	if name != nil {
		if v, ok := w.vars.get(name.Value); ok && v.assoc {
			w.substNode(x, fr)
			return
		}
	}
	w.arith(x, fr)
}

// assign records a shell variable assignment (a=b, declare a=b, a+=(x)).
func (w *walker) assign(as *syntax.Assign, fr frame, numeric bool) {
	if as.Name == nil {
		return
	}
	v := w.assignValue(as, fr, numeric)
	if as.Name.Value == "DIRSTACK" {
		w.dirs = dirStack{unknown: true} // bash lets it rewrite the pushd stack
	}
	if v.known && !v.isList && as.Name.Value == "PATH" {
		w.setPath(v.str)
	} else if as.Name.Value == "PATH" {
		w.setPath("\x00")
	}
	if as.Name.Value == "PS4" {
		w.promptVar(v, fr.pos(as), fr)
	}
	w.setVar(as.Name.Value, v, fr)
}

// promptVar walks the code a PS4 value holds: under set -x (or xtrace in
// an exported SHELLOPTS) bash expands it, command substitutions and all,
// before every command it traces. The code is walked once, as code that
// may run.
func (w *walker) promptVar(v *value, pos Pos, fr frame) {
	if !v.known || v.isList {
		w.flag(FlagOpaque, pos, "PS4 is set to a value known only at run time; under set -x bash expands it, command substitutions and all, before each command")
		return
	}
	if inertText(v.str) {
		return
	}
	word, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Document(strings.NewReader(v.str))
	if err != nil {
		w.flag(FlagOpaque, pos, "PS4 does not parse as a prompt string: %v", err)
		return
	}
	c := fr.with("PS4")
	c.cond = true
	c.src = v.str
	c.aliasSpans = nil
	c.file = pos.String() + " PS4"
	w.substitutions(word, c)
}

// inertText reports whether a prompt string expands nothing.
func inertText(s string) bool { return !strings.ContainsAny(s, "$`\\") }

// assignValue computes what an assignment stores, without storing it.
func (w *walker) assignValue(as *syntax.Assign, fr frame, numeric bool) *value {
	name := as.Name.Value
	v := &value{}
	if old, ok := w.vars.get(name); ok && old.exported || w.allexport {
		v.exported = true
	}
	if old, ok := w.vars.get(name); numeric || ok && old.integer {
		// declare -i i=$y, or i=$y after it: bash evaluates the value as
		// arithmetic (y='a[$(id)]' runs id).
		v.integer, numeric = true, true
		w.integerValues(as, fr)
	}
	switch {
	case as.Array != nil:
		v.isList = true
		v.known = !as.Append && as.Index == nil
		for _, el := range as.Array.Elems {
			if t := w.taintOf(el.Value, &fr); t != "" {
				v.tainted = true
			}
			if el.Index != nil || el.Value == nil || !w.isStatic(el.Value) {
				v.known = false
				continue
			}
			fs, ok := w.fields(el.Value, fr.dialect)
			if !ok {
				v.known = false
				continue
			}
			v.list = append(v.list, fs...)
		}
	case as.Value != nil:
		v.tainted = w.taintOf(as.Value, &fr) != ""
		v.credPath = w.wordCredPath(as.Value)
		if as.Index == nil && !as.Append {
			if s, ok := w.literal(as.Value); ok {
				v.known, v.str = true, s
				v.numeric = isInteger(s)
			} else {
				v.numeric = numericWord(as.Value)
			}
		} else if as.Append {
			if old, ok := w.vars.get(name); ok && old.known && !old.isList && as.Index == nil {
				if s, ok := w.literal(as.Value); ok {
					v.known, v.str = true, old.str+s
				}
			}
		}
	default:
		v.known, v.str = true, ""
	}
	if old, ok := w.vars.get(name); ok && old.assoc {
		v.assoc = true
	}
	if numeric {
		if v.known && !v.tainted {
			// declare -i i=T stores T's value.
			v.tainted = w.identTaint(v.str, 0) != ""
		}
		v.numeric = !v.tainted
		v.known = v.known && isInteger(v.str)
	}
	if old, ok := w.vars.get(name); ok && (as.Append || as.Index != nil) && old.tainted {
		v.tainted = true
	}
	if v.known && valueBytes(v) > maxValueBytes {
		// x=$x$x doubles: thirty of them are gigabytes. Such a value is
		// treated as known only at run time.
		v.known, v.str, v.list = false, "", nil
	}
	if name == "IFS" && !v.known {
		w.flag(FlagOpaque, fr.pos(as), "IFS is set to a value known only at run time: word splitting cannot be resolved")
	}
	return v
}

// integerValues checks what an assignment to a variable with the integer
// attribute stores: bash evaluates each value as an arithmetic expression.
func (w *walker) integerValues(as *syntax.Assign, fr frame) {
	if as.Array != nil {
		for _, el := range as.Array.Elems {
			w.integerValue(el.Value, as.Name.Value, fr)
		}
		return
	}
	w.integerValue(as.Value, as.Name.Value, fr)
}

func (w *walker) integerValue(wd *syntax.Word, name string, fr frame) {
	if wd == nil {
		return
	}
	if s, ok := w.literal(wd); ok {
		if !isInteger(s) {
			w.arithText(s, fr.pos(wd), fr)
		}
		return
	}
	if numericWord(wd) {
		return
	}
	if n := wordName(wd); n != "" {
		w.arithVar(n, fr.pos(wd), fr)
		return
	}
	w.flag(FlagOpaque, fr.pos(wd), "%s has the integer attribute: bash evaluates the value assigned to it, %s, as an arithmetic expression, and it is known only at run time", name, fr.srcOf(wd))
}

// maxValueBytes bounds a value the analyzer keeps as known.
const maxValueBytes = MaxCommandBytes

func valueBytes(v *value) int {
	n := len(v.str)
	for _, s := range v.list {
		n += len(s)
	}
	return n
}

func isInteger(s string) bool {
	s = strings.TrimPrefix(strings.TrimSpace(s), "-")
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// numericWord reports whether a word only ever yields a number: $((...)),
// ${#x}, $#, $?.
func numericWord(wd *syntax.Word) bool {
	if len(wd.Parts) != 1 {
		return false
	}
	p := wd.Parts[0]
	if dq, ok := p.(*syntax.DblQuoted); ok && len(dq.Parts) == 1 {
		p = dq.Parts[0]
	}
	switch p := p.(type) {
	case *syntax.ArithmExp:
		return true
	case *syntax.ParamExp:
		if p.Length {
			return true
		}
		if p.Param != nil && (p.Param.Value == "#" || p.Param.Value == "?" || p.Param.Value == "$" || p.Param.Value == "!") && p.Exp == nil {
			return true
		}
	}
	return false
}

// run dispatches one resolved command: functions, builtins, wrappers,
// shells, and external programs.
func (w *walker) run(args []arg, cmd *Command, fr frame, mode lookup) {
	if len(args) == 0 || !w.budget(cmd.Pos) {
		return
	}
	cmd.Context = fr.context
	cmd.Argv = words(args)
	w.noteArgs(args)
	// The command is listed before what it runs; its slot is filled when
	// everything about it is known.
	idx := len(w.a.Commands)
	w.a.Commands = append(w.a.Commands, Command{})
	defer func() { w.a.Commands[idx] = *cmd }()

	name := args[0]
	if name.Dynamic {
		cmd.Kind = "unknown"
		cmd.Opaque = "the command name is known only at run time"
		w.flag(FlagDynamicCommand, cmd.Pos, "command name %s is known only at run time", name.Value)
		w.checkArgv(args, cmd, "a command whose name is known only at run time")
		w.commandOutput(args, cmd.Kind, fr)
		return
	}
	base := path.Base(name.Value)
	bare := !strings.Contains(name.Value, "/")
	if bare && mode == lookupAll {
		// A trap fires while any definition of the name may be current.
		w.trapFuncs(name.Value, args, fr)
	}
	switch {
	case bare && mode == lookupAll && w.fn(name.Value) != nil:
		cmd.Kind = "function"
		def := w.fn(name.Value)
		w.commandOutput(args, cmd.Kind, fr)
		w.withPrefix(fr, false, func() { w.callFunc(def, args, fr) })
		return
	case bare && (mode == lookupAll || mode == lookupNoFunc || mode == lookupBuiltin) && w.isBuiltin(name.Value, fr.dialect):
		cmd.Kind = "builtin"
		w.commandOutput(args, cmd.Kind, fr)
		if runsCode[name.Value] || mode == lookupAll && specialBuiltins[name.Value] {
			w.withPrefix(fr, mode == lookupAll && specialBuiltins[name.Value], func() { w.builtin(args, cmd, fr) })
			return
		}
		w.builtin(args, cmd, fr)
		return
	case mode == lookupBuiltin:
		cmd.Kind = "builtin"
		cmd.Opaque = name.Value + " is not a builtin"
		return
	}
	cmd.Kind = "external"
	if bare && (w.hashed[name.Value] || w.hashedAny) {
		cmd.Opaque = "hash -p maps " + name.Value + " to a file the analyzer does not follow"
		w.flag(FlagOpaque, cmd.Pos, "%s: what runs is that file, not %s", cmd.Opaque, name.Value)
	}
	w.checkArgv(args, cmd, base)
	w.commandOutput(args, cmd.Kind, fr)
	if !bare {
		w.commandPath(name.Value, cmd.Pos, fr)
	} else if p, known := w.pathCandidate(name.Value); !known {
		w.flag(FlagScriptNotInspected, cmd.Pos, "%s: PATH, or the directory an entry of it names, is known only at run time", name.Value)
		w.unseenAt(cmd.Pos, name.Value+" is looked up in a PATH known only at run time, so the analyzer cannot tell what runs")
	} else if p != "" {
		w.commandPath(p, cmd.Pos, fr)
	} else if p, ok := w.lookPath(name.Value); ok && w.underInspection(p) {
		w.inspectExecutable(p, name.Value, cmd.Pos, fr)
	}
	if u, ok := unwrap(cmd.Argv); ok {
		w.wrapper(u, args, cmd, fr)
		return
	}
	if d, ok := shells[base]; ok {
		w.shell(args, d, cmd, fr)
		return
	}
	if otherShells[base] {
		cmd.Opaque = base + " runs code in a grammar the analyzer does not model"
		w.flag(FlagOpaque, cmd.Pos, "%s", cmd.Opaque)
	}
	w.external(args, cmd, fr)
}

// specialBuiltins are POSIX's special builtins: in dash and in bash's POSIX
// mode, prefix assignments to them (X=1 :) stay after they return. exec is
// left out: what it runs is a new process, which child handles.
var specialBuiltins = setOf(":", ".", "break", "continue", "eval", "exit", "export", "readonly", "return", "set", "shift", "times", "trap", "unset")

// runsCode are the builtins that run code in this shell, which sees the
// command's prefix assignments.
var runsCode = setOf("eval", ".", "source")

// withPrefix runs fn, a builtin or function the shell runs itself, with
// the command's prefix assignments (X=1 eval ..., X=1 f) in its
// environment. Afterwards a special builtin keeps them, with whatever value
// fn left, in dash and in bash's POSIX mode; otherwise each variable gets
// back the value it had before.
func (w *walker) withPrefix(fr frame, special bool, fn func()) {
	type saved struct {
		name     string
		old      *value
		had      bool
		exported bool
	}
	var olds []saved
	var vals []*value
	for _, as := range fr.prefix {
		if as.Name != nil {
			vals = append(vals, w.assignValue(as, fr, false))
		}
	}
	if len(vals) == 0 {
		fn()
		return
	}
	posix := w.posixMode(fr)
	path := w.path
	i := 0
	for _, as := range fr.prefix {
		if as.Name == nil {
			continue
		}
		name := as.Name.Value
		old, had := w.vars.top(name)
		vis, ok := w.vars.get(name)
		olds = append(olds, saved{name, old, had, ok && vis.exported || w.allexport})
		v := *vals[i]
		i++
		v.exported = true
		w.vars.set(name, &v)
		w.noteAssign(name, v.tainted)
		if name == "PATH" {
			if v.known && !v.isList {
				w.setPath(v.str)
			} else {
				w.setPath("\x00")
			}
		}
	}
	fn()
	keep := special && (fr.dialect == DialectSh || posix == on)
	for _, o := range olds {
		switch {
		case keep && fr.dialect == DialectSh:
			// dash keeps the value but not the export.
			if cur, ok := w.vars.top(o.name); ok {
				c := *cur
				c.exported = o.exported
				w.vars.set(o.name, &c)
			}
		case keep:
		case special && fr.dialect == DialectBash && posix == maybe:
			cur, _ := w.vars.get(o.name)
			w.vars.set(o.name, &value{tainted: cur != nil && cur.tainted || o.old != nil && o.old.tainted, exported: cur != nil && cur.exported})
			if o.name == "PATH" {
				w.setPath("\x00")
			}
		case o.had:
			w.vars.set(o.name, o.old)
		default:
			w.vars.del(o.name)
		}
	}
	if !keep && !(special && posix == maybe) && !sameSlice(w.path, path) {
		w.path = path
		clear(w.pathCache)
	}
}

func words(args []arg) []Word {
	out := make([]Word, len(args))
	for i, a := range args {
		out[i] = a.Word
	}
	return out
}

func (w *walker) emit(cmd *Command) {
	w.a.Commands = append(w.a.Commands, *cmd)
}

// checkArgv denies a credential value in the argument list of a process.
func (w *walker) checkArgv(args []arg, cmd *Command, what string) {
	for _, a := range args {
		if a.tainted == "" {
			continue
		}
		w.denyArgv(a.tainted, what, a.pos)
		return
	}
}

func (w *walker) denyArgv(variable, what string, pos Pos) {
	ref := refOf(variable)
	w.deny(govern.ReasonCredentialInArgv, pos, "the value of "+ref+" would be placed on the command line of "+what+
		" at "+pos.String()+", where every process of the same user can read it. "+sanctionedForms)
}

// refOf spells a taint for a message: $NAME for a variable or a positional
// parameter; anything else is a description, kept as it is.
func refOf(variable string) string {
	if syntax.ValidName(variable) || isPositional(variable) {
		return "$" + variable
	}
	return variable
}

// external handles what an external program does beyond its argv: scripts
// it runs, code it evaluates, files it writes.
func (w *walker) external(args []arg, cmd *Command, fr frame) {
	argv := cmd.Argv
	base := path.Base(argv[0].Value)
	for _, h := range toolHazards(argv) {
		// A dynamic word where a tool's grammar must look, or a program in
		// another language known only at run time, is not shell code the
		// analyzer could have read: it does not decide a run that carries
		// a credential (code the tool hands to a shell does, in nested).
		w.addFlag(h.Kind, cmd.Pos, h.Detail, false)
		if h.Code != nil {
			// The tool feeds the command its own stream (a socket, archive
			// data, a pager's text): a shell there reads code nobody sees.
			c := fr
			c.in = stdin{piped: true, taint: fr.in.taint}
			w.child(c, func() { w.nested(*h.Code, DialectSh, cmd.Pos, c, base+" "+string(h.Kind)) })
		}
	}
	if interpreters[strings.TrimRight(base, "0123456789.")] {
		w.interpreterScript(argv, cmd.Pos, fr)
	}
	before := len(w.writes)
	w.fileWrites(argv, cmd.Pos, fr)
	w.taintFileWrites(args, before, fr)
	switch base {
	case "sudo", "doas", "su", "runuser", "pkexec":
		w.flag(FlagPrivilege, cmd.Pos, "%s changes the user commands run as", base)
	}
}

// fileWrites records files the common tools write, for write-then-run links.
func (w *walker) fileWrites(argv []Word, pos Pos, fr frame) {
	base := path.Base(argv[0].Value)
	ops := operands(argv[1:])
	switch base {
	case "tee":
		for _, o := range ops {
			w.noteWrite(o, pos, fr)
		}
	case "cp", "mv", "install", "ln":
		if len(ops) >= 2 {
			dst := ops[len(ops)-1]
			// A directory that is there now (not a link to one) only gets
			// new entries, unless -T makes it the target itself; anything
			// else (a link ln -n or mv replaces, a file) is replaced, which
			// changes every path below it.
			if !w.isRealDir(dst) || noTargetDir(argv) || w.changed(dst) {
				w.noteWrite(dst, pos, fr)
			}
			for _, src := range ops[:len(ops)-1] {
				if base == "mv" {
					w.noteWrite(src, pos, fr) // moved away: the name is free for another file
				}
				w.noteWrite(path.Join(dst, path.Base(src)), pos, fr)
			}
		}
	case "sed":
		inPlace := false
		for _, a := range argv[1:] {
			if strings.HasPrefix(a.Value, "-i") || strings.HasPrefix(a.Value, "--in-place") {
				inPlace = true
			}
		}
		if inPlace {
			for _, o := range ops {
				w.noteWrite(o, pos, fr)
			}
		}
	case "curl":
		for _, f := range optionValues(argv, "AbcCdDeEFHKmoPQrTuUwxXyYz", 'o', "--output") {
			w.noteWrite(f, pos, fr)
		}
	case "wget":
		for _, f := range optionValues(argv, "aAbBDeiIlOoPQRtTUwXY", 'O', "--output-document") {
			w.noteWrite(f, pos, fr)
		}
	case "dd":
		for _, a := range argv[1:] {
			if strings.HasPrefix(a.Value, "of=") && !a.Dynamic {
				w.noteWrite(a.Value[3:], pos, fr)
			}
		}
	case "chmod", "touch", "truncate", "rm", "rmdir", "unlink":
		// These change, create or remove files that may run later (a
		// removed directory can be made again, or replaced by a link).
		for _, o := range ops {
			if !strings.HasPrefix(o, "+") && !strings.ContainsAny(o, "=") {
				w.noteWrite(o, pos, fr)
			}
		}
	}
	// A target known only at run time may be any script run later.
	switch base {
	case "chmod", "touch", "truncate", "rm", "rmdir", "unlink":
		for _, a := range argv[1:] {
			if a.Dynamic {
				w.noteDynWrite(pos)
			}
		}
	default:
		if dynWriteTarget(argv) > 0 {
			w.noteDynWrite(pos)
		}
	}
}

// optionValues returns the values of one option in getopt-style argv:
// short options may be clustered (-fsSLo FILE, -qOfile), withArg lists the
// short options that take a value, and long is the option's long name
// (--output FILE or --output=FILE).
func optionValues(argv []Word, withArg string, short byte, long string) []string {
	var out []string
	for i := 1; i < len(argv); i++ {
		v := argv[i].Value
		if argv[i].Dynamic {
			continue
		}
		switch {
		case v == "--":
			return out
		case v == long:
			if i+1 < len(argv) && !argv[i+1].Dynamic {
				out = append(out, argv[i+1].Value)
			}
			i++
		case strings.HasPrefix(v, long+"="):
			out = append(out, v[len(long)+1:])
		case strings.HasPrefix(v, "--"):
		case len(v) > 1 && v[0] == '-':
			for j := 1; j < len(v); j++ {
				if strings.IndexByte(withArg, v[j]) < 0 {
					continue
				}
				val := v[j+1:]
				if val == "" && i+1 < len(argv) {
					i++
					if argv[i].Dynamic {
						break
					}
					val = argv[i].Value
				}
				if v[j] == short && val != "" {
					out = append(out, val)
				}
				break
			}
		}
	}
	return out
}

// operands returns the static words that are not options.
func operands(argv []Word) []string {
	var out []string
	dash := false
	for _, a := range argv {
		if a.Dynamic {
			continue
		}
		if !dash && a.Value == "--" {
			dash = true
			continue
		}
		if !dash && strings.HasPrefix(a.Value, "-") && a.Value != "-" {
			continue
		}
		out = append(out, a.Value)
	}
	return out
}

// isRealDir reports whether p names a directory now, not through a
// symlink at its last component.
func (w *walker) isRealDir(p string) bool {
	a := w.abs(p)
	if a == "" {
		return false
	}
	st, err := os.Lstat(a)
	return err == nil && st.IsDir()
}

// changed reports whether the text changed p, or a directory above it,
// before this point: the tree at analysis time no longer says what it is.
func (w *walker) changed(p string) bool {
	a := w.abs(p)
	if a == "" || len(w.dynWrites) > 0 {
		return true
	}
	for _, wr := range w.writes {
		if wr.path == a || strings.HasPrefix(a, wr.path+"/") {
			return true
		}
	}
	return false
}

// noTargetDir reports -T (--no-target-directory): the last operand is
// replaced even when it is a directory.
func noTargetDir(argv []Word) bool {
	for _, a := range argv[1:] {
		v := a.Value
		if a.Dynamic || v == "--" {
			return a.Dynamic
		}
		if v == "--no-target-directory" || strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "--") && strings.Contains(v, "T") {
			return true
		}
	}
	return false
}
