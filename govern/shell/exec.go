package shell

import (
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// wrapper handles a command that runs other commands: env, sudo, timeout,
// xargs, find -exec, exec, command, builtin...
func (w *walker) wrapper(u unwrapped, args []arg, cmd *Command, fr frame) {
	if u.Opaque != "" {
		cmd.Opaque = u.Opaque
		w.flag(FlagOpaque, cmd.Pos, "%s: %s", u.Wrapper, u.Opaque)
	}
	if u.Privilege {
		w.flag(FlagPrivilege, cmd.Pos, "%s changes the user or root the command runs as", u.Wrapper)
	}
	var prefix []string
	for _, a := range u.Assigns {
		name, _, _ := strings.Cut(a.Value, "=")
		if a.Dynamic {
			w.flag(FlagOpaque, cmd.Pos, "%s sets an environment variable named at run time", u.Wrapper)
			continue
		}
		prefix = append(prefix, name)
		w.prefixAssign(name, cmd.Pos, fr)
		if name == "PS4" {
			_, val, _ := strings.Cut(a.Value, "=")
			w.promptVar(&value{known: true, str: val}, cmd.Pos, fr)
		}
	}
	// Words read at run time (xargs, parallel) come from stdin or from
	// argument files.
	readTaint := fr.in.taint
	for _, f := range u.ArgFiles {
		if readTaint != "" {
			break
		}
		if !f.Dynamic {
			readTaint = w.pathTaint(f.Value, &fr)
		} else if a := w.mapBack([]Word{f}, args); len(a) == 1 && w.credPathOf(&a[0], &fr) != "" {
			readTaint = a[0].credPath
		} else {
			readTaint = w.taintAnywhere
		}
	}
	for _, code := range u.Code {
		w.checkArgv(w.mapBack([]Word{code}, args), cmd, u.Wrapper+" (its argument becomes code)")
		if u.StdinArgs && readTaint != "" {
			w.denyArgv(readTaint, u.Wrapper+" (the words it reads are added to the code a shell runs)", cmd.Pos)
		}
		w.child(fr, func() { w.nested(code, DialectSh, cmd.Pos, fr, u.Wrapper) })
	}
	mode := lookupExternal
	switch u.Wrapper {
	case "command":
		mode = lookupNoFunc
	case "builtin":
		mode = lookupBuiltin
	}
	wrappers := append(append([]string(nil), cmd.Wrappers...), u.Wrapper)
	runInners := func() {
		for _, inner := range u.Inners {
			innerArgs := w.mapBack(inner, args)
			if u.StdinArgs {
				what := "(arguments read from stdin)"
				if len(u.ArgFiles) > 0 {
					what = "(arguments read from a file)"
				}
				innerArgs = append(innerArgs, arg{Word: Word{Value: what, Dynamic: true}, tainted: readTaint, credPath: fr.in.credPath, pos: cmd.Pos})
			}
			c := &Command{Pos: cmd.Pos, Wrappers: wrappers, Assigns: prefix}
			w.run(innerArgs, c, fr, mode)
		}
	}
	if mode != lookupExternal {
		runInners() // command and builtin run in this shell
		return
	}
	// Everything else starts a new process, in the environment, directory
	// and root the wrapper sets up.
	w.child(fr, func() {
		if u.ClearEnv {
			w.vars.each(func(name string, _ *value) { w.vars.set(name, &value{known: true, unset: true}) })
			for _, name := range WorkdirVars {
				w.vars.set(name, &value{known: true, unset: true})
			}
		}
		for _, name := range u.Unsets {
			w.vars.set(name, &value{known: true, unset: true})
		}
		if u.Privilege {
			// sudo and the like reset or rebuild the environment: what the
			// directory model reads there is unknown, and $PWD may or may
			// not reach the command.
			for _, name := range []string{"CDPATH", "HOME", "OLDPWD", "POSIXLY_CORRECT"} {
				w.vars.set(name, &value{exported: true})
			}
			if w.cwd != "" && w.realPath(w.cwd) != w.cwd {
				w.cwd = ""
			}
		}
		for _, a := range u.Assigns {
			name, val, _ := strings.Cut(a.Value, "=")
			if a.Dynamic {
				if syntax.ValidName(name) {
					w.vars.set(name, &value{exported: true})
				}
				continue
			}
			w.vars.set(name, &value{known: true, str: val, exported: true})
		}
		if u.Chdir != nil {
			// The wrapper calls chdir(2): the kernel resolves the name, and
			// a shell it starts finds $PWD naming another directory.
			dir := ""
			if !u.Chdir.Dynamic {
				dir = w.abs(u.Chdir.Value)
			}
			w.cwd = dir
		}
		if u.Root != nil {
			w.cwd, w.rerooted = "", true
		}
		runInners()
	})
}

// mapBack recovers each inner word's origin (its taint) from the outer argv.
// Words a wrapper built itself (env -S) take the taint of the whole argv.
func (w *walker) mapBack(inner []Word, args []arg) []arg {
	out := make([]arg, len(inner))
	for k := 0; k+len(inner) <= len(args); k++ {
		match := true
		for i := range inner {
			if args[k+i].Value != inner[i].Value {
				match = false
				break
			}
		}
		if match {
			copy(out, args[k:k+len(inner)])
			for i := range out {
				out[i].Word = inner[i] // the wrapper may mark a word dynamic ({})
			}
			return out
		}
	}
	taint := ""
	pos := Pos{}
	for _, a := range args {
		if a.tainted != "" {
			taint = a.tainted
		}
		pos = a.pos
	}
	for i, wd := range inner {
		out[i] = arg{Word: wd, tainted: taint, pos: pos}
	}
	return out
}

// shell handles bash/sh/dash invocations: -c code, a script operand, or
// code read from stdin.
func (w *walker) shell(args []arg, d Dialect, cmd *Command, fr frame) {
	base := path.Base(args[0].Value)
	cmode, stdinMode := false, false
	// Options that change how the new shell's cd resolves, applied inside it.
	var setOpts []func()
	setOpt := func(name string, v tri) {
		setOpts = append(setOpts, func() { w.setOption(name, v, frame{dialect: d}) })
	}
	i := 1
opts:
	for ; i < len(args); i++ {
		a := args[i]
		if a.Dynamic {
			if cmode {
				break opts // the code itself; nested reports it
			}
			cmd.Opaque = base + " argument known only at run time (an option, or the script to run)"
			w.flag(FlagOpaque, cmd.Pos, "%s: %s", cmd.Opaque, a.Value)
			return
		}
		v := a.Value
		switch {
		case v == "--" || v == "-":
			i++
			break opts
		case strings.HasPrefix(v, "--"):
			switch v {
			case "--rcfile", "--init-file":
				i++
			case "--posix":
				setOpt("posix", on)
			case "--noprofile", "--norc", "--login", "--restricted", "--verbose", "--noediting", "--debugger", "--dump-strings", "--dump-po-strings", "--wordexp", "--protected", "--pretty-print":
			case "--help", "--version":
				return
			default:
				cmd.Opaque = base + ": unknown option " + v
				w.flag(FlagOpaque, cmd.Pos, "%s", cmd.Opaque)
				return
			}
		case (strings.HasPrefix(v, "-") || strings.HasPrefix(v, "+")) && len(v) > 1:
			state := on
			if v[0] == '+' {
				state = off
			}
			for j := 1; j < len(v); j++ {
				switch c := v[j]; c {
				case 'c':
					cmode = true
				case 's':
					stdinMode = true
				case 'o', 'O':
					i++ // takes the option name
					if i < len(args) {
						if args[i].Dynamic {
							setOpt("", maybe)
						} else {
							setOpt(args[i].Value, state)
						}
					}
				case 'P':
					setOpt("physical", state)
				case 'x':
					setOpt("xtrace", state)
				case 'p':
					setOpt("privileged", state)
				case 'm':
					setOpt("monitor", state)
				case 'i':
					w.flag(FlagOpaque, cmd.Pos, "%s -i is interactive and reads startup files", base)
				case 'e', 'u', 'v', 'n', 'l', 'a', 'b', 'f', 'h', 'k', 't', 'B', 'C', 'E', 'H', 'T', 'r', 'D':
				default:
					cmd.Opaque = base + ": unknown option " + v
					w.flag(FlagOpaque, cmd.Pos, "%s", cmd.Opaque)
					return
				}
			}
		default:
			break opts
		}
	}
	ops := []arg(nil)
	if i < len(args) {
		ops = args[i:]
	}
	c := fr
	c.posTaint = false
	child := func(fn func()) {
		w.child(c, func() {
			for _, set := range setOpts {
				set()
			}
			fn()
		})
	}
	switch {
	case cmode:
		if len(ops) == 0 {
			cmd.Opaque = base + " -c without code"
			w.flag(FlagOpaque, cmd.Pos, "%s", cmd.Opaque)
			return
		}
		for _, a := range ops[1:] {
			if a.tainted != "" {
				c.posTaint = true
			}
		}
		child(func() { w.nested(ops[0].Word, d, cmd.Pos, c, base+" -c") })
	case len(ops) > 0 && !stdinMode:
		for _, a := range ops[1:] {
			if a.tainted != "" {
				c.posTaint = true
			}
		}
		mode := scriptBash
		if d == DialectSh {
			mode = scriptSh
		}
		child(func() { w.scriptOperandDialect(ops[0].Word, mode, d, cmd.Pos, c) })
	default:
		for _, a := range ops {
			if a.tainted != "" {
				c.posTaint = true
			}
		}
		child(func() {
			if why := w.readStdin(d, base, cmd.Pos, c); why != "" {
				cmd.Opaque = why
			}
		})
	}
}

// readStdin walks the code a shell reads from its standard input (bash -s,
// bash /dev/stdin, source /dev/fd/0) in dialect d; what names the reader.
// It returns why that code cannot be known, or "".
func (w *walker) readStdin(d Dialect, what string, pos Pos, fr frame) string {
	c := fr
	// Commands in that code reading stdin read the rest of it, or nothing.
	c.in = stdin{spent: true}
	c.shellIn = c.in
	switch in := fr.in; {
	case in.code != nil:
		w.nested(*in.code, d, pos, c, what+" <<")
	case in.piped:
		w.flag(FlagOpaque, pos, "%s runs code piped into it from another command, which the analyzer cannot see", what)
		return what + " reads code from a pipe"
	case in.dynamic:
		why := what + " reads code from a file or descriptor known only at run time"
		w.flag(FlagOpaque, pos, "%s", why)
		return why
	case in.file != "":
		w.scriptOperandDialect(Word{Value: in.file}, scriptSh, d, pos, c)
	case !in.spent && w.in.Stdin != nil:
		w.nested(Word{Value: string(w.in.Stdin)}, d, pos, c, what+" <stdin>")
	}
	return ""
}

// hereCode resolves the text a here-document or here-string feeds.
func (w *walker) hereCode(r *syntax.Redirect, fr *frame) Word {
	if r.Op == syntax.WordHdoc {
		if s, ok := w.literal(r.Word); ok {
			return Word{Value: s + "\n"}
		}
		return Word{Value: fr.srcOf(r.Word), Dynamic: true}
	}
	if r.Hdoc == nil {
		return Word{}
	}
	if s, ok := w.document(r.Hdoc); ok {
		return Word{Value: s}
	}
	return Word{Value: strings.TrimSuffix(fr.srcOf(r.Hdoc), "\n"), Dynamic: true}
}

// document expands a here-document body without running anything.
func (w *walker) document(word *syntax.Word) (string, bool) {
	if !w.isStatic(word) {
		return "", false
	}
	s, err := expandDocument(w, word)
	return s, err == nil
}

// nested parses code a command hands to a shell (sh -c, eval, trap,
// here-documents) and walks it in place. Callers that fork (sh -c) wrap it
// in subshell; eval and trap run in the current shell.
func (w *walker) nested(code Word, d Dialect, pos Pos, fr frame, ctx string) {
	if code.Dynamic {
		w.flag(FlagOpaque, pos, "%s runs code known only at run time: %s", ctx, code.Value)
		return
	}
	if fr.depth+1 > w.in.MaxScriptDepth {
		w.flag(FlagDepthExceeded, pos, "%s nests deeper than %d levels; not analysed", ctx, w.in.MaxScriptDepth)
		return
	}
	if strings.IndexByte(code.Value, 0) >= 0 {
		w.flag(FlagOpaque, pos, "%s code holds a NUL byte", ctx)
		return
	}
	if !w.parseBudget(len(code.Value), false, pos, ctx) {
		return
	}
	f, err := parse(code.Value, "", d)
	if err != nil {
		w.flag(FlagOpaque, pos, "%s code does not parse: %s", ctx, parseDenial(err, "").Message)
		return
	}
	c := fr.with(ctx)
	c.src = code.Value
	c.aliasSpans = nil
	c.file = pos.String() + " " + ctx
	c.dialect = d
	c.depth = fr.depth + 1
	w.walkStmts(f.Stmts, c)
}
