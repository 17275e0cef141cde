package shell

import (
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// builtin handles the builtins that run code, change what names mean or
// move values between variables.
func (w *walker) builtin(args []arg, cmd *Command, fr frame) {
	name := args[0].Value
	if name == "exec" && len(args) == 1 && fr.stdinHere {
		// exec <file: the shell's stdin for the rest of the text.
		in := fr.in
		if fr.cond {
			in = stdin{dynamic: true}
		}
		w.execStdin = &in
		return
	}
	switch name {
	case "exec":
		// Every word exec is given lands in the new program's argv,
		// -a NAME as its argv[0].
		w.checkArgv(args[1:], cmd, "the program exec starts")
		w.wrapper(mustUnwrap(cmd.Argv), args, cmd, fr)
		return
	case "command", "builtin":
		w.wrapper(mustUnwrap(cmd.Argv), args, cmd, fr)
		return
	}
	rest := args[1:]
	switch name {
	case "eval":
		w.checkArgv(args, cmd, "eval (its arguments become code)")
		w.nested(joinWords(words(rest)), fr.dialect, cmd.Pos, fr, "eval")
	case "source", ".":
		ops := rest
		if len(ops) > 0 && ops[0].Value == "--" && !ops[0].Dynamic {
			ops = ops[1:]
		}
		if len(ops) == 0 {
			return
		}
		c := fr
		for _, a := range ops[1:] {
			if a.tainted != "" {
				c.posTaint = true
			}
		}
		w.scriptOperand(ops[0].Word, scriptSource, cmd.Pos, c, true)
	case "trap":
		ops := rest
		if len(ops) > 0 && ops[0].Value == "--" && !ops[0].Dynamic {
			ops = ops[1:]
		}
		if len(ops) >= 2 && !ops[0].Dynamic && (ops[0].Value == "-" || ops[0].Value == "") {
			return
		}
		if len(ops) >= 1 && !(!ops[0].Dynamic && strings.HasPrefix(ops[0].Value, "-")) {
			if len(ops) == 1 && !ops[0].Dynamic && isFD(ops[0].Value) {
				return // trap N: reset
			}
			w.checkArgv(ops[:1], cmd, "trap (its argument becomes code)")
			c := fr
			c.cond = true
			w.nested(ops[0].Word, fr.dialect, cmd.Pos, c, "trap")
			if !ops[0].Dynamic {
				w.setTrap(ops[0].Word, ops[1:], cmd.Pos, c) // and again where it fires
			}
		}
	case "read", "mapfile", "readarray", "getopts":
		w.readVars(name, rest, cmd, fr)
	case "printf":
		for i := 0; i+1 < len(rest); i++ {
			if rest[i].Value == "-v" && !rest[i].Dynamic {
				taint := false
				for _, a := range rest[i+2:] {
					if a.tainted != "" {
						taint = true
					}
				}
				w.checkVarName(rest[i+1].Value, cmd.Pos, "printf -v")
				w.setNamed(rest[i+1].Value, taint, fr)
				break
			}
			if rest[i].Value == "--" || !strings.HasPrefix(rest[i].Value, "-") {
				break
			}
		}
	case "set":
		w.setBuiltin(rest, fr)
	case "test", "[":
		for i := 0; i+1 < len(rest); i++ {
			if rest[i].Value == "-v" && !rest[i].Dynamic {
				if rest[i+1].Dynamic {
					w.flag(FlagOpaque, cmd.Pos, "test -v of a name known only at run time evaluates its subscript")
				} else {
					w.checkVarName(rest[i+1].Value, cmd.Pos, "test -v")
				}
			}
		}
	case "cd", "chdir", "pushd", "popd":
		w.noteDirs(rest, fr)
		w.cdBuiltin(name, rest, fr)
	case "dirs":
		for _, a := range rest {
			if a.Dynamic || strings.HasPrefix(a.Value, "-") && strings.Contains(a.Value, "c") {
				w.dirs = dirStack{unknown: a.Dynamic || fr.cond || w.dirs.unknown}
			}
		}
	case "unset":
		fn := false
		for _, a := range rest {
			switch {
			case a.Dynamic:
				w.flag(FlagOpaque, cmd.Pos, "unset of a name known only at run time")
			case a.Value == "-f":
				fn = true
			case a.Value == "-v" || a.Value == "-n":
			case fn:
				w.funcs.set(a.Value, nil)
			default:
				w.checkVarName(a.Value, cmd.Pos, "unset")
				w.setVar(a.Value, &value{known: true, unset: true}, fr)
			}
		}
	case "enable":
		for _, a := range rest {
			if a.Dynamic {
				w.flag(FlagEnableBuiltin, cmd.Pos, "enable with an argument known only at run time")
				w.builtinsDisabled = true
				continue
			}
			if strings.HasPrefix(a.Value, "-") && strings.Contains(a.Value, "f") {
				w.flag(FlagEnableBuiltin, cmd.Pos, "enable -f loads a shared object into the shell")
			}
			if strings.HasPrefix(a.Value, "-") && strings.Contains(a.Value, "n") {
				w.flag(FlagEnableBuiltin, cmd.Pos, "enable -n turns builtins off: their names then run programs")
				w.builtinsDisabled = true
			}
		}
	case "alias":
		if len(rest) > 0 {
			w.flag(FlagAlias, cmd.Pos, "alias redefines what a command name runs")
		}
		// Its value is code the shell reads where the name is used.
		w.checkArgv(rest, cmd, "alias (its value becomes code)")
		w.aliasBuiltin(rest, cmd.Pos)
	case "hash":
		w.hashBuiltin(rest, cmd.Pos)
	case "history":
		// history -w FILE and -a FILE create FILE: one named with a
		// credential is refused as a redirection to it is.
		writes := false
		for _, a := range rest {
			switch {
			case !writes && len(a.Value) > 1 && a.Value[0] == '-' && !a.Dynamic && strings.ContainsAny(a.Value, "wa"):
				writes = true
			case writes && a.tainted != "":
				w.denyFileName(a.tainted, "history "+rest[0].Value, cmd.Pos)
			}
		}
	case "shopt":
		for _, a := range rest {
			if a.Value == "expand_aliases" || a.Dynamic {
				w.flag(FlagAlias, cmd.Pos, "shopt %s may turn on alias expansion", a.Value)
			}
		}
		w.shoptBuiltin(rest, fr)
	case "declare", "typeset", "local", "export", "readonly":
		// Reached only through `builtin declare` or `command export`: the
		// parser saw words, not assignments.
		for _, a := range rest {
			if a.Dynamic {
				w.flag(FlagOpaque, cmd.Pos, "%s with an argument known only at run time may set any variable", name)
				w.forgetVars()
				continue
			}
			if i := strings.IndexByte(a.Value, '='); i > 0 {
				n := strings.TrimSuffix(a.Value[:i], "+")
				w.checkVarName(n, cmd.Pos, name)
				w.assignName(n, cmd.Pos)
				w.setVar(n, &value{tainted: a.tainted != ""}, fr)
			}
		}
	}
}

// mustUnwrap peels exec, command and builtin, which are always wrappers.
func mustUnwrap(argv []Word) unwrapped {
	u, ok := unwrap(argv)
	if !ok {
		return unwrapped{Wrapper: argv[0].Value, Opaque: argv[0].Value + ": options not understood"}
	}
	return u
}

// readVars handles builtins that assign what they read from stdin.
func (w *walker) readVars(name string, rest []arg, cmd *Command, fr frame) {
	taint := fr.in.taint != ""
	var names []string
	optArg := map[string]string{"read": "adinNptu", "mapfile": "dnOsuCc", "readarray": "dnOsuCc"}[name]
	callback := ""
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if name == "getopts" && i >= 2 {
			break // the words it parses instead of $@: data, not names
		}
		if a.Dynamic {
			w.flag(FlagOpaque, cmd.Pos, "%s with an argument known only at run time", name)
			w.forgetVars()
			return
		}
		if name != "getopts" && strings.HasPrefix(a.Value, "-") && len(a.Value) > 1 {
			flags := a.Value[1:]
			for j, c := range flags {
				if strings.ContainsRune(optArg, c) {
					val := flags[j+1:]
					if j == len(flags)-1 && i+1 < len(rest) {
						val = rest[i+1].Value
						i++
					}
					switch c {
					case 'a':
						names = append(names, val)
					case 'C':
						callback = val
					case 'u':
						// read -u N: the line comes from descriptor N.
						if w.fdTaint(val, &fr) != "" {
							taint = true
						}
					}
					break
				}
			}
			continue
		}
		names = append(names, a.Value)
	}
	switch name {
	case "read":
		if len(names) == 0 {
			names = []string{"REPLY"}
		}
	case "mapfile", "readarray":
		if len(names) == 0 {
			names = []string{"MAPFILE"}
		}
	case "getopts":
		if len(names) >= 2 {
			names = names[1:2]
		}
		names = append(names, "OPTARG")
		// getopts parses the words after the name, or else $@.
		taint = len(rest) <= 2 && (fr.posTaint || w.posTainted)
		for _, a := range rest {
			if a.tainted != "" {
				taint = true
			}
		}
	}
	for _, n := range names {
		w.checkVarName(n, cmd.Pos, name)
		if v, ok := w.vars.get(strings.SplitN(n, "[", 2)[0]); ok && v.integer {
			w.flag(FlagOpaque, cmd.Pos, "%s has the integer attribute: bash evaluates what %s stores in it as an arithmetic expression, which is known only at run time", n, name)
		}
		w.setNamed(n, taint, fr)
	}
	if callback != "" {
		// mapfile -C CODE: bash evaluates CODE with the index and the line
		// read as two more words, as eval would ("$@" stands for them).
		c := fr
		c.cond = true
		c.posTaint = taint
		w.nested(Word{Value: callback + ` "$@"`}, fr.dialect, cmd.Pos, c, name+" -C")
	}
}

// hashBuiltin records the names hash -p FILE NAME... maps to FILE: bash
// then runs FILE for NAME (hash -p ./x.sh ls; ls runs x.sh), which the
// analyzer does not follow, so running such a name is opaque (run).
func (w *walker) hashBuiltin(rest []arg, pos Pos) {
	for i, a := range rest {
		if a.Dynamic {
			w.hashedAny = true
			return
		}
		if a.Value == "--" || !strings.HasPrefix(a.Value, "-") {
			return
		}
		if !strings.Contains(a.Value, "p") {
			continue
		}
		w.flag(FlagAlias, pos, "hash -p maps a command name to another file")
		names := rest[i+1:]
		if !strings.HasSuffix(a.Value, "p") {
			// -pFILE: the path is attached.
		} else if len(names) > 0 {
			names = names[1:]
		}
		for _, n := range names {
			if n.Dynamic {
				w.hashedAny = true
				continue
			}
			if w.hashed == nil {
				w.hashed = map[string]bool{}
			}
			w.hashed[n.Value] = true
		}
		return
	}
}

// setNamed assigns a value known only at run time to a variable a builtin
// names (read, printf -v): NAME, or one element of an array (a[0]), whose
// taint then adds to the array's.
func (w *walker) setNamed(name string, tainted bool, fr frame) {
	base, _, sub := strings.Cut(name, "[")
	if !sub {
		w.setVar(name, &value{tainted: tainted}, fr)
		return
	}
	old, ok := w.vars.get(base)
	w.setVar(base, &value{tainted: tainted || ok && old.tainted, isList: true, assoc: ok && old.assoc, exported: ok && old.exported}, fr)
}

// checkVarName flags a variable name argument whose array subscript the
// builtin will evaluate as arithmetic: a[$(cmd)] runs cmd, and a[x] runs
// whatever code x's value holds.
func (w *walker) checkVarName(name string, pos Pos, builtin string) {
	i := strings.IndexByte(name, '[')
	if i < 0 {
		return
	}
	sub := strings.TrimSuffix(name[i+1:], "]")
	switch {
	case strings.ContainsAny(sub, "$`[("):
		w.flag(FlagOpaque, pos, "%s evaluates the subscript of %s as arithmetic, which can run commands", builtin, name)
	case syntax.ValidName(sub):
		w.arithVar(sub, pos, frame{})
	}
}

func (w *walker) setPositional(args []arg, fr frame) {
	_ = fr
	for _, a := range args {
		if a.tainted != "" {
			w.posTainted = true
		}
	}
}

// forgetVars drops every known value: something assigned a variable the
// analyzer cannot name.
func (w *walker) forgetVars() {
	w.noteForget()
	w.vars.each(func(name string, v *value) {
		w.vars.set(name, &value{tainted: v.tainted, exported: v.exported})
	})
	// It may have set and exported any of them.
	for _, name := range WorkdirVars {
		w.vars.set(name, &value{exported: true})
	}
	w.vars.set("IFS", &value{})
}

// assignName flags assignments to variables that change what runs.
func (w *walker) assignName(name string, pos Pos) {
	if why, ok := dangerousEnv(name); ok {
		w.flag(FlagDangerousEnv, pos, "%s=: %s", name, why)
	}
}

// declClause handles declare, typeset, local, export, readonly, nameref.
func (w *walker) declClause(dc *syntax.DeclClause, redirs []Redirect, fr frame) {
	pos := fr.pos(dc)
	argv := []Word{{Value: dc.Variant.Value}}
	nameref, integer, funcs, assoc := dc.Variant.Value == "nameref", false, false, false
	export := dc.Variant.Value == "export"
	unexport := false
	for _, as := range dc.Args {
		if as.Name != nil && assoc {
			w.vars.set(as.Name.Value, &value{assoc: true, isList: true})
		}
		w.assignSubst(as, fr)
		if as.Name == nil {
			// An option or a word known only at run time.
			lit, static := "", false
			if as.Value != nil && w.isStatic(as.Value) {
				lit, static = w.literal(as.Value) // false past maxExpandBytes
			}
			if static {
				s := lit
				argv = append(argv, Word{Value: s})
				if strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+") {
					// export -n takes the export attribute away.
					unexport = unexport || dc.Variant.Value == "export" && strings.HasPrefix(s, "-") && strings.Contains(s, "n")
					nameref = nameref || dc.Variant.Value != "export" && strings.HasPrefix(s, "-") && strings.Contains(s, "n")
					integer = integer || strings.HasPrefix(s, "-") && strings.Contains(s, "i")
					funcs = funcs || strings.ContainsAny(s, "fF")
					export = export || strings.HasPrefix(s, "-") && strings.Contains(s, "x")
					assoc = assoc || strings.HasPrefix(s, "-") && strings.Contains(s, "A")
					continue
				}
				if i := strings.IndexByte(s, '='); i > 0 {
					// declare "x=y": the parser keeps it as a word.
					n := strings.TrimSuffix(s[:i], "+")
					w.checkVarName(n, pos, dc.Variant.Value)
					w.assignName(n, pos)
					w.setVar(n, &value{tainted: w.taintOf(as.Value, &fr) != ""}, fr)
				}
				continue
			}
			if as.Value != nil {
				argv = append(argv, Word{Value: fr.srcOf(as.Value), Dynamic: true})
			}
			w.flag(FlagOpaque, pos, "%s with an argument known only at run time may set any variable", dc.Variant.Value)
			w.forgetVars()
			continue
		}
		if as.Value != nil && !as.Naked {
			if val, ok := w.literal(as.Value); ok && as.Index == nil {
				argv = append(argv, Word{Value: as.Name.Value + "=" + val})
			} else {
				argv = append(argv, Word{Value: fr.srcOf(as), Dynamic: true})
			}
		} else {
			argv = append(argv, Word{Value: fr.srcOf(as), Dynamic: as.Array != nil || as.Index != nil})
		}
		if funcs {
			continue
		}
		name := as.Name.Value
		w.assignName(name, pos)
		if nameref {
			target, ok := w.literal(as.Value)
			w.flag(FlagNameref, pos, "declare -n makes %s another name for %s", name, target)
			// Every use of the nameref evaluates a subscript in its
			// target (declare -n r='a[$(id)]'; echo "$r" runs id); one
			// known only at run time is flagged where it is used.
			w.checkVarName(target, pos, dc.Variant.Value+" -n")
			if !ok {
				w.flag(FlagOpaque, pos, "%s -n %s names a variable known only at run time: a subscript in that name (a[$(id)]) runs code wherever %s is used", dc.Variant.Value, name, name)
			}
			if !ok || target != "" && !syntax.ValidName(strings.SplitN(target, "[", 2)[0]) {
				w.setVar(name, &value{ref: true, tainted: true}, fr)
				continue
			}
			w.setVar(name, &value{ref: true, nameref: strings.SplitN(target, "[", 2)[0]}, fr)
			continue
		}
		if as.Naked && integer {
			// declare -i x: what is assigned to x later is arithmetic.
			nv := &value{integer: true}
			if v, ok := w.vars.get(name); ok {
				c := *v
				c.integer = true
				nv = &c
			}
			w.vars.set(name, nv)
		}
		if as.Naked {
			// export x: attributes only.
			if unexport {
				if v, ok := w.vars.get(name); ok {
					c := *v
					c.exported = false
					w.vars.set(name, &c)
				}
				continue
			}
			if export {
				v, ok := w.vars.get(name)
				nv := &value{exported: true}
				if ok {
					c := *v
					c.exported = true
					nv = &c
				}
				w.vars.set(name, nv)
			}
			continue
		}
		w.assign(as, fr, integer)
		if v, ok := w.vars.get(name); ok && (export || unexport) {
			v.exported = !unexport
		}
	}
	if dump := w.declDump(dc); dump != "" {
		w.outputs(dump, "")
	}
	for _, as := range dc.Args {
		// export X=$T: $_ is the last argument, X=value.
		if t := w.taintOf(as.Value, &fr); t != "" && w.argTaint == "" {
			w.argTaint = t
		}
		if as.Array != nil {
			for _, el := range as.Array.Elems {
				if t := w.taintOf(el.Value, &fr); t != "" && w.argTaint == "" {
					w.argTaint = t
				}
			}
		}
	}
	cmd := &Command{Pos: pos, Argv: argv, Kind: "builtin", Context: fr.context, Redirects: redirs}
	w.emit(cmd)
}

// isSystemPath reports whether a program path is in the host's standard
// binary directories, which are read-only in the sandbox.
func isSystemPath(p string) bool {
	for _, dir := range []string{"/bin/", "/sbin/", "/usr/bin/", "/usr/sbin/", "/usr/local/bin/", "/usr/local/sbin/", "/usr/lib/", "/usr/libexec/", "/usr/local/lib/"} {
		if strings.HasPrefix(path.Clean(p), dir) {
			return true
		}
	}
	return false
}
