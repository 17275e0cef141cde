package shell

import (
	"fmt"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"

	"github.com/mitrity/mitrity/govern"
)

// frame is where the walker is: which text, which dialect, how deep.
type frame struct {
	src     string // the text positions index into
	file    string // "" for the command text, else the script or nested origin
	dialect Dialect
	context string
	depth   int
	// cond is true inside code that may or may not run, or may run many
	// times: assignments there leave the variable's value unknown.
	cond     bool
	posTaint bool // positional parameters carry a credential
	// in is the statement's stdin; shellIn is the stdin of the shell
	// running it (what its command substitutions read), before the
	// statement's own redirections.
	in, shellIn stdin
	// stdinHere: this statement redirects stdin itself (exec <file keeps it).
	stdinHere bool
	// prefix holds the command's own assignments (X=1 cmd): they are
	// exported to the child it starts.
	prefix []*syntax.Assign
	// fds names the credential each descriptor the statement opens
	// carries (cmd 3< file); see walker.fds for exec's.
	fds map[string]string
	// aliasSpans mark the alias values in an alias expansion's text.
	aliasSpans []aliasSpan
}

func (fr frame) with(ctx string) frame {
	if fr.context == "" {
		fr.context = ctx
	} else if ctx != "" {
		fr.context += " > " + ctx
	}
	return fr
}

// stdin is what a command's standard input is, as far as the analyzer
// knows. The zero value is the call's stdin (Input.Stdin).
type stdin struct {
	// piped: it comes from an earlier pipeline stage (or a tool's stream).
	piped bool
	// code is the here-document or here-string fed to the statement
	// (dynamic when it expands something known only at run time).
	code *Word
	// file is a file redirected to it (cmd < file); dynamic when its name,
	// or the descriptor copied (<&3), is known only at run time.
	file    string
	dynamic bool
	// taint names the credential it carries, if any; credPath the
	// credential file whose name it may carry.
	taint, credPath string
	// spent: it is not the call's: it is the code the shell is reading
	// (bash <<EOF, bash -s with the call's stdin), or a background job's
	// /dev/null. A command that reads it reads the rest of code already
	// walked, or nothing.
	spent bool
}

type write struct {
	path string
	pos  Pos
}

type walker struct {
	in      *Input
	a       *Analysis
	vars    *layered[*value]
	funcs   *layered[*funcDef]
	aliases *layered[*aliasDef] // alias.go
	// aliasAny is where an alias was defined with a name known only at
	// run time: any command name may be one.
	aliasAny *Pos
	declared []*funcDef       // every function definition, in order
	active   map[*funcDef]int // functions being walked (recursion guard)
	credVars map[string]bool
	writes   []write
	// dynWrites are writes to a path known only at run time (noteRun).
	dynWrites []Pos
	pinned    map[string]bool
	flagged   map[string]bool
	ncmd      int
	// nestedBytes and scriptBytes count what nested code and scripts
	// cost to parse (maxNestedBytes, maxScriptTotal).
	nestedBytes, scriptBytes int64
	expanded                 int // bytes of words expanded (maxExpandBytes)
	// nest counts the statements being walked inside each other (see
	// maxNesting).
	nest int
	// loopWalks counts loop bodies walked again (loop, maxLoopRewalks).
	loopWalks int
	// builtinsDisabled: after `enable -n`, a builtin name may run a binary.
	builtinsDisabled bool
	exhausted        bool
	// cwd is the shell's directory at this point, as $PWD names it (the
	// path cd made, symlinks and all); "" when it is unknown (cwd.go).
	cwd  string
	opts shellOpts
	dirs dirStack
	// execStdin is the stdin `exec <file` gave the shell for the statements
	// after it; nil when it was not changed.
	execStdin *stdin
	cfg       *expand.Config // reused for every expansion
	pathCache map[string]string
	realCache map[string]string
	// path is the PATH lookups use: the input's, until the text assigns
	// PATH; nil once it is assigned a value known only at run time.
	path      []string
	allexport bool // set -a
	// xtrace: set -x (or bash -x, set -o xtrace, an option set at run
	// time, an inherited SHELLOPTS) may be on somewhere in the run: bash
	// then prints each command's expanded words to stderr (see traced).
	// One flag for the whole run, and a hint for the walk again.
	xtrace bool
	// hashed are the names hash -p maps to a file (hashedAny: a name or
	// an option known only at run time): running one runs that file.
	// For the whole run, and a hint for the walk again.
	hashed    map[string]bool
	hashedAny bool
	// startPath is the PATH the run starts with (pathCandidate).
	startPath []string
	// rerooted: a wrapper (chroot, sudo -R) changed the root directory, so
	// no path the text names can be read from the host.
	rerooted bool
	// posTainted: `set --` put a credential into the positional parameters.
	posTainted bool
	// carries: the run has a credential in its environment or files
	// (Input.CredentialsInjected, a ${credential:<id>} in the text or env).
	carries bool
	trap    trapState // trap.go
	// unseen is the first thing the analyzer could not see through; in a
	// run that carries a credential it decides (checkUnseen).
	unseen *Flag
	// captures is the stack of regions whose output is being followed;
	// substOut is what each walked substitution may print (taint.go).
	captures []capture
	substOut map[syntax.Node]capture
	// taintedFiles are files the text wrote a credential to;
	// taintAnywhere is set once it wrote one to a file named at run time.
	taintedFiles  []string
	taintAnywhere string
	// fds and outFds are the descriptors exec opened for the rest of the
	// text: what each read one carries, where each written one goes.
	fds    map[string]string
	outFds map[string]string
	// credCwd: a cd went into the credential directory (where the
	// analyzer cannot follow: it does not exist at analysis time).
	credCwd     bool
	credDirList []string // see credDirs
	// hints are what an earlier walk of the same text learned too late;
	// fb is what this one learns for the next (feedback.go).
	hints *hints
	fb    feedback
	// argTaint, rematchTaint and dirTaint name the credential that the
	// variables bash sets itself carry (shellSet).
	argTaint, rematchTaint, dirTaint string
	// coprocs are the coprocesses started so far (any scope: their
	// descriptors are numbers anyone can name); sinks are the process
	// substitutions (and coprocesses) exec made a descriptor of the shell
	// for the rest of the text: they read everything printed after it.
	coprocs []Pos
	sinks   []Pos
}

func newWalker(in *Input, a *Analysis) *walker {
	if in.MaxScriptDepth <= 0 {
		in.MaxScriptDepth = defaultMaxScriptDepth
	}
	if in.MaxScriptBytes <= 0 {
		in.MaxScriptBytes = defaultMaxScriptBytes
	}
	w := &walker{in: in, a: a, vars: newLayered(func(v *value) bool { return v.exported }), funcs: newLayered(func(*funcDef) bool { return false }),
		aliases:  newLayered(func(*aliasDef) bool { return false }),
		active:   map[*funcDef]int{},
		credVars: map[string]bool{}, pathCache: map[string]string{}, realCache: map[string]string{}, pinned: map[string]bool{}, flagged: map[string]bool{},
		substOut: map[syntax.Node]capture{}}
	w.vars.same = sameValue
	// A definition walked again (in a loop) is the same definition.
	w.funcs.same = func(a, b *funcDef) bool {
		return a == b || a != nil && b != nil && a.decl == b.decl && a.fr.context == b.fr.context && a.fr.dialect == b.fr.dialect
	}
	w.carries = in.CredentialsInjected || len(a.Credentials) > 0
	for _, n := range in.CredentialVars {
		w.credVars[n] = true
	}
	for _, id := range a.Credentials {
		w.credVars[CredentialVar(id)] = true
	}
	if in.CredentialDir != "" {
		w.vars.set(CredentialDirVar, &value{known: true, str: in.CredentialDir, exported: true})
	}
	w.path = in.Path
	if in.Home != "" {
		w.vars.set("HOME", &value{known: true, str: in.Home, exported: true})
	}
	w.startEnv()
	// bash and dash set IFS at start-up; it is never inherited.
	w.vars.set("IFS", &value{known: true, str: " \t\n"})
	return w
}

// startEnv loads the environment the command starts with: the executor's
// PWD (the working directory) and the call's own variables; the other
// variables the directory model reads are unset, since the executor never
// passes them on.
func (w *walker) startEnv() {
	w.a.env = maps.Clone(w.in.Env)
	if path.IsAbs(w.in.Cwd) {
		w.cwd = path.Clean(w.in.Cwd)
	}
	for _, n := range []string{"CDPATH", "OLDPWD", "POSIXLY_CORRECT"} {
		w.vars.set(n, &value{known: true, unset: true})
	}
	w.vars.set("PWD", &value{known: w.cwd != "", str: w.cwd, exported: true})
	if _, ok := w.vars.get("HOME"); !ok {
		w.vars.set("HOME", &value{exported: true}) // Input.Home unset: unknown, not absent
	}
	for k, v := range w.in.Env {
		if !syntax.ValidName(k) || k == "IFS" {
			continue
		}
		if _, ids := RewriteCredentials(v); len(ids) == 1 && v == "${credential:"+ids[0]+"}" {
			// The executor injects the credential's value under this name.
			w.credVars[k] = true
			w.carries = true
			w.vars.set(k, &value{tainted: true, exported: true})
			continue
		}
		w.vars.set(k, &value{known: true, str: v, exported: true})
		if k == "PATH" {
			w.setPath(v)
		}
	}
	w.startPath = slices.Clone(w.path)
	w.startDir()
}

func (w *walker) flag(kind FlagKind, pos Pos, format string, args ...any) {
	w.addFlag(kind, pos, fmt.Sprintf(format, args...), true)
}

// addFlag records a flag; an opaque one is also something the analyzer
// could not see through (unseenAt) when unseen is true.
func (w *walker) addFlag(kind FlagKind, pos Pos, detail string, unseen bool) {
	key := string(kind) + "\x00" + pos.String() + "\x00" + detail
	if w.flagged[key] {
		return
	}
	w.flagged[key] = true
	w.a.Flags = append(w.a.Flags, Flag{Kind: kind, Pos: pos, Detail: detail})
	switch kind {
	case FlagOpaque, FlagDynamicCommand, FlagDepthExceeded, FlagPromptExpansion:
		if unseen {
			w.unseenAt(pos, detail)
		}
	}
}

func (w *walker) deny(reason govern.Reason, pos Pos, msg string) {
	if w.a.Denial == nil {
		w.a.Denial = &Denial{Reason: reason, Pos: pos, Message: msg}
	}
}

// parseBudget counts n more bytes of nested code (or of a script) to
// parse; false once there is too much, after which it is opaque.
func (w *walker) parseBudget(n int, script bool, pos Pos, what string) bool {
	used, limit := &w.nestedBytes, int64(maxNestedBytes)
	if script {
		used, limit = &w.scriptBytes, maxScriptTotal*w.in.MaxScriptBytes
	}
	*used += int64(n)
	if *used > limit {
		w.flag(FlagDepthExceeded, pos, "%s: more than %d bytes of nested code (or of scripts) to parse in all; the rest is opaque", what, limit)
		return false
	}
	return true
}

// budget counts one unit of work; false once the analysis is too large to
// finish, after which everything left is opaque.
func (w *walker) budget(pos Pos) bool {
	w.ncmd++
	if w.ncmd > maxCommands {
		if !w.exhausted {
			w.exhausted = true
			w.flag(FlagDepthExceeded, pos, "analysis stopped after %d commands; the rest is opaque", maxCommands)
		}
		return false
	}
	return true
}

func (w *walker) walkFile(f *syntax.File, fr frame) {
	w.walkStmts(f.Stmts, fr)
}

func (w *walker) walkStmts(stmts []*syntax.Stmt, fr frame) {
	for _, st := range stmts {
		w.walkStmt(st, fr)
	}
}

// inheritedStdin reports whether a frame's stdin is the shell's own: no
// statement around it redirected it.
func inheritedStdin(fr frame) bool { return fr.in == stdin{} }

// subshell runs fn with a copy of the variables, as the shell forks.
func (w *walker) subshell(fn func()) { w.scope(false, fn) }

// scope runs fn in a new layer of variables and functions; a barrier layer
// is a new process, which sees only exported variables and no functions.
func (w *walker) scope(barrier bool, fn func()) {
	cwd, path, allexport, disabled, rerooted := w.cwd, w.path, w.allexport, w.builtinsDisabled, w.rerooted
	opts, dirs, execStdin, fds, outFds, sinks := w.opts, w.dirs.clone(), w.execStdin, w.fds, w.outFds, w.sinks
	w.vars.push(barrier)
	w.funcs.push(barrier)
	w.aliases.push(barrier)
	fn()
	w.fireTraps(len(w.vars.maps)) // traps the scope set fire as it ends
	w.vars.pop()
	w.funcs.pop()
	w.aliases.pop()
	w.cwd, w.allexport, w.builtinsDisabled, w.rerooted = cwd, allexport, disabled, rerooted
	w.opts, w.dirs, w.execStdin, w.fds, w.outFds, w.sinks = opts, dirs, execStdin, fds, outFds, sinks
	if !sameSlice(w.path, path) {
		w.path = path
		clear(w.pathCache)
	}
}

func (w *walker) walkStmt(st *syntax.Stmt, fr frame) {
	if st == nil || !w.budget(fr.pos(st)) {
		return
	}
	if w.nest >= maxNesting {
		w.flag(FlagDepthExceeded, fr.pos(st), "commands nest deeper than %d levels (substitutions, subshells, groups, functions, nested code); the rest is opaque", maxNesting)
		return
	}
	w.nest++
	defer func() { w.nest-- }()
	if w.execStdin != nil && inheritedStdin(fr) {
		fr.in = *w.execStdin
	}
	fr.stdinHere = false
	if st.Background || st.Coprocess {
		fr.cond = true
		// Without job control an asynchronous command reads /dev/null; a
		// coprocess reads what the shell writes to it.
		fr.in = stdin{piped: st.Coprocess, spent: !st.Coprocess}
	}
	fr.shellIn = fr.in
	// Substitutions in redirections run before the command, and what they
	// print is known before stdin is.
	for _, r := range st.Redirs {
		w.substitutions(r.Word, fr)
		if r.Hdoc != nil {
			w.substitutions(r.Hdoc, fr)
		}
	}
	// Here-documents, here-strings and stdin redirects feed the command.
	for _, r := range st.Redirs {
		if r.N != nil && r.N.Value != "0" {
			w.openDescriptor(r, &fr)
			continue
		}
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
			code := w.hereCode(r, &fr)
			fr.in = stdin{code: &code, taint: w.taintOf(r.Hdoc, &fr)}
			if r.Op == syntax.WordHdoc {
				fr.in.taint = w.taintOf(r.Word, &fr)
			}
			fr.stdinHere = true
		case syntax.RdrIn, syntax.RdrInOut:
			s, ok := w.literal(r.Word)
			if ok {
				if fd, isFD, other := fdPath(w.abs(s)); isFD && fd == 0 {
					continue // stdin from itself: unchanged
				} else if isFD || other {
					ok = false // another descriptor: not modelled
				}
			}
			fr.in = stdin{file: s, dynamic: !ok}
			if !ok {
				fr.in.file = ""
			}
			// Reading a credential file (or a credential-named path) is a value.
			fr.in.taint = w.readTaint(r.Word, &fr)
			if fr.in.taint == "" {
				fr.in.taint = w.stmtsReferenceWord(r.Word)
			}
			fr.stdinHere = true
		case syntax.DplIn:
			// <&N: stdin becomes a copy of descriptor N; <&- closes it.
			s, ok := w.literal(r.Word)
			if ok && s == "0" {
				continue
			}
			fr.in = stdin{dynamic: !ok || s != "-"}
			if ok && s == "-" {
				fr.in.code = &Word{} // closed: a shell reading it reads nothing
			} else if ok {
				fr.in.taint = w.fdTaint(strings.TrimSuffix(s, "-"), &fr)
			} else {
				fr.in.taint = w.fdTaint("*", &fr)
			}
			fr.stdinHere = true
		}
	}
	redirs := w.walkRedirects(st.Redirs, fr)
	// What a statement that writes to a file prints is followed there; so
	// is what it writes into a >(...) it names, or into a descriptor that
	// may be a coprocess's input.
	procs := outProcs(st, fr)
	toCoproc := len(w.coprocs) > 0 && w.unnamedOut(st)
	follow := writesOut(redirs) || len(w.outFds) > 0 || len(procs) > 0 || toCoproc
	if follow {
		w.pushCapture()
	}
	switch cmd := st.Cmd.(type) {
	case nil:
		// $(< file) prints the file.
		if fr.stdinHere && fr.in.taint != "" {
			w.outputs(fr.in.taint, "")
		}
	case *syntax.CallExpr:
		w.aliasCommand(cmd.Args, int(cmd.Pos().Offset()), int(cmd.End().Offset()), fr)
		w.callExpr(cmd, redirs, fr)
	case *syntax.IfClause:
		w.ifClause(cmd, fr, false)
	case *syntax.WhileClause:
		c := fr
		c.cond = true
		w.loop(fr.pos(cmd), func() {
			w.walkStmts(cmd.Cond, c)
			w.walkStmts(cmd.Do, c)
		})
	case *syntax.ForClause:
		c := fr
		c.cond = true
		switch loop := cmd.Loop.(type) {
		case *syntax.WordIter:
			taint := ""
			numeric, names := len(loop.Items) > 0, len(loop.Items) > 0
			for _, item := range loop.Items {
				w.substitutions(item, fr)
				if t := w.taintOf(item, &fr); t != "" {
					taint = t
				}
				if numeric || names {
					fs, ok := []string(nil), w.isStatic(item)
					if ok {
						fs, ok = w.fields(item, fr.dialect)
					}
					num, nam := ok, ok
					for _, f := range fs {
						num = num && isInteger(f)
						nam = nam && (isInteger(f) || syntax.ValidName(f))
					}
					numeric, names = numeric && num, names && nam
				}
			}
			if v, ok := w.vars.get(loop.Name.Value); ok && v.integer && !numeric {
				w.flag(FlagOpaque, fr.pos(loop.Name), "%s has the integer attribute: bash evaluates each word the loop assigns to it as an arithmetic expression", loop.Name.Value)
			}
			w.setVar(loop.Name.Value, &value{tainted: taint != "", numeric: numeric && taint == "", names: names && taint == ""}, c)
			if cmd.Select {
				// select reads the choice into REPLY from stdin.
				w.setVar("REPLY", &value{tainted: fr.in.taint != ""}, c)
			}
		case *syntax.CStyleLoop:
			w.arith(loop.Init, fr)
			w.arith(loop.Cond, c)
			w.arith(loop.Post, c)
		}
		w.loop(fr.pos(cmd), func() { w.walkStmts(cmd.Do, c) })
	case *syntax.CaseClause:
		w.substitutions(cmd.Word, fr)
		c := fr
		c.cond = true
		for _, item := range cmd.Items {
			for _, p := range item.Patterns {
				w.substitutions(p, c)
			}
			w.walkStmts(item.Stmts, c)
		}
	case *syntax.Block:
		w.walkStmts(cmd.Stmts, fr)
	case *syntax.Subshell:
		w.subshell(func() { w.walkStmts(cmd.Stmts, fr.with("subshell")) })
	case *syntax.BinaryCmd:
		w.binaryCmd(cmd, fr)
	case *syntax.FuncDecl:
		w.funcDecl(cmd, fr)
	case *syntax.ArithmCmd:
		w.arith(cmd.X, fr)
	case *syntax.TestClause:
		w.testExpr(cmd.X, fr)
	case *syntax.DeclClause:
		// declare, export, local...: builtins, which an alias can replace.
		w.aliasCommand([]*syntax.Word{{Parts: []syntax.WordPart{cmd.Variant}}}, int(cmd.Pos().Offset()), int(cmd.End().Offset()), fr)
		w.declClause(cmd, redirs, fr)
	case *syntax.LetClause:
		w.aliasCommand([]*syntax.Word{{Parts: []syntax.WordPart{&syntax.Lit{ValuePos: cmd.Let, ValueEnd: syntax.NewPos(cmd.Let.Offset()+3, cmd.Let.Line(), cmd.Let.Col()+3), Value: "let"}}}}, int(cmd.Pos().Offset()), int(cmd.End().Offset()), fr)
		for _, x := range cmd.Exprs {
			w.arith(x, fr)
		}
	case *syntax.TimeClause:
		w.walkStmt(cmd.Stmt, fr)
	case *syntax.CoprocClause:
		c := fr
		c.cond = true
		// It reads what the shell writes to ${COPROC[1]}, which may come
		// later in the text (feedback.go).
		pos := fr.pos(cmd)
		c.in = stdin{piped: true, taint: w.feedIn(pos)}
		c.shellIn = c.in
		w.coprocs = append(w.coprocs, pos)
		out := w.capturing(func() { w.subshell(func() { w.walkStmt(cmd.Stmt, c.with("coproc")) }) })
		if out.taint != "" {
			// Read back through ${COPROC[0]}, a descriptor chosen at run time.
			f := frame{fds: w.fds}
			f.openFD("*", out.taint)
			w.fds = f.fds
		}
	default:
		w.flag(FlagOpaque, fr.pos(st), "unsupported construct %T", cmd)
	}
	if w.xtrace {
		if t := w.traced(st.Cmd, &fr); t != "" {
			w.outputs(t, "")
		}
	}
	if !follow {
		if bareExec(st) {
			w.execDescriptors(st, fr)
		}
		return
	}
	out := w.popCapture()
	for _, p := range procs {
		w.feed(p, out.taint)
	}
	if toCoproc && out.taint != "" {
		// A coprocess may be what it wrote to: its output, and any
		// descriptor that may be it, can give the value back.
		for _, p := range w.coprocs {
			w.feed(p, out.taint)
		}
		f := frame{fds: w.fds}
		f.openFD("*", out.taint)
		w.fds = f.fds
	}
	if out.taint != "" {
		// What the statement printed went to the files it redirects to.
		for _, r := range redirs {
			if r.Write && !r.Network {
				p := r.Path
				if r.Dynamic {
					p = ""
				}
				w.taintWrite(p, out.taint, r.Pos)
			}
		}
		for _, r := range st.Redirs {
			fd := ""
			if s, ok := w.literal(r.Word); ok {
				switch {
				case r.Op == syntax.DplOut:
					fd = strings.TrimSuffix(s, "-")
				case r.Op != syntax.DplIn && r.Op != syntax.RdrIn && r.N == nil:
					if n, isFD, _ := fdPath(w.abs(s)); isFD && n > 2 {
						fd = strconv.Itoa(n) // >/dev/fd/3 writes descriptor 3
					}
				}
			}
			if p, open := w.outFds[fd]; open && fd != "" {
				w.taintWrite(p, out.taint, fr.pos(r))
			}
			if fd != "" && fd != "1" && fd != "2" && isFD(fd) {
				// Read back through the same descriptor (exec 3<>f) or
				// /dev/fd/N, which opens its file again from the start.
				f := frame{fds: w.fds}
				f.openFD(fd, out.taint)
				w.fds = f.fds
			}
		}
	}
	if bareExec(st) {
		w.execDescriptors(st, fr)
		w.execSinks(procs, toCoproc)
	}
}

// execSinks keeps what a bare exec made a descriptor of the shell: a
// >(...) (exec > >(cmd), exec 3> >(cmd)) or, through a descriptor it
// cannot tell apart from one, a coprocess. Everything printed after it
// may go there. Which descriptor each later command writes to is not
// followed: all of them count.
func (w *walker) execSinks(procs []Pos, toCoproc bool) {
	if len(procs) == 0 && !toCoproc {
		return
	}
	sinks := append([]Pos(nil), w.sinks...)
	sinks = append(sinks, procs...)
	if toCoproc {
		sinks = append(sinks, w.coprocs...)
	}
	w.sinks = sinks
}

// writesOut reports whether a statement sends output to a file (a
// descriptor exec opened on one is checked by the caller): what it prints
// is followed there.
func writesOut(redirs []Redirect) bool {
	for _, r := range redirs {
		if r.Write {
			return true
		}
	}
	return false
}

func (w *walker) ifClause(c *syntax.IfClause, fr frame, inElse bool) {
	if c == nil {
		return
	}
	cf := fr
	cf.cond = true
	if inElse {
		w.walkStmts(c.Cond, cf)
	} else {
		w.walkStmts(c.Cond, fr)
	}
	w.walkStmts(c.Then, cf)
	w.ifClause(c.Else, fr, true)
}

func (w *walker) binaryCmd(b *syntax.BinaryCmd, fr frame) {
	switch b.Op {
	case syntax.AndStmt, syntax.OrStmt:
		w.walkStmt(b.X, fr)
		c := fr
		c.cond = true
		w.walkStmt(b.Y, c)
	case syntax.Pipe, syntax.PipeAll:
		// Every stage of a pipeline runs in its own subshell, except the
		// last one in bash with lastpipe on and job control off.
		w.pushCapture()
		w.subshell(func() { w.walkStmt(b.X, fr.with("")) })
		left := w.popCapture()
		right := fr
		right.in = stdin{piped: true, taint: left.taint, credPath: left.path}
		last := off
		if fr.dialect == DialectBash && w.opts.monitor != on {
			last = w.opts.lastpipe
			if last == on && w.opts.monitor == maybe {
				last = maybe
			}
		}
		switch last {
		case on:
			w.walkStmt(b.Y, right)
		case maybe:
			right.cond = true
			w.walkStmt(b.Y, right)
		default:
			w.subshell(func() { w.walkStmt(b.Y, right) })
		}
	default:
		w.walkStmt(b.X, fr)
		w.walkStmt(b.Y, fr)
	}
}

// child runs fn as a new process started by the shell sees things: only
// exported variables (plus the command's own prefix assignments) and no
// functions; IFS is reset; other variables hold whatever the environment
// had, which is unknown.
func (w *walker) child(fr frame, fn func()) {
	var prefix []*value
	for _, as := range fr.prefix {
		if as.Name != nil {
			prefix = append(prefix, w.assignValue(as, fr, false))
		}
	}
	w.scope(true, func() {
		w.vars.set("IFS", &value{known: true, str: " \t\n"})
		w.allexport, w.builtinsDisabled = false, false
		i := 0
		for _, as := range fr.prefix {
			if as.Name != nil {
				v := prefix[i]
				v.exported = true
				w.vars.set(as.Name.Value, v)
				i++
			}
		}
		w.startProcess()
		c := fr
		c.prefix = nil
		fn()
	})
}

// startProcess resets what a new process does not inherit: set -o options
// (unless SHELLOPTS is exported), shopt options (unless BASHOPTS is), the
// pushd stack, a stdin that exec gave the parent (the child gets it through
// its frame), and the directory as its $PWD names it.
func (w *walker) startProcess() {
	if v, ok := w.vars.get("SHELLOPTS"); ok && v.exported && (!v.known || strings.Contains(v.str, "xtrace")) {
		w.xtrace = true
	}
	if v, ok := w.vars.get("SHELLOPTS"); !ok || !v.exported {
		w.opts.physical, w.opts.privileged, w.opts.monitor = off, off, off
	}
	if v, ok := w.vars.get("BASHOPTS"); !ok || !v.exported {
		w.opts.lastpipe, w.opts.expandAliases = off, off
	}
	w.dirs = dirStack{}
	w.execStdin = nil
	w.startDir()
}

func sameSlice(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// setPath changes the PATH later lookups use; "\x00" means unknown.
func (w *walker) setPath(v string) {
	if v == "\x00" {
		w.path = []string{unknownPath} // see pathCandidate
	} else {
		w.path = strings.Split(v, ":")
	}
	clear(w.pathCache)
}

func (w *walker) funcDecl(fd *syntax.FuncDecl, fr frame) {
	if fd.Name == nil {
		// The parser accepts forms (an anonymous function) that bash and
		// dash reject: the shell would not run what we would judge.
		w.flag(FlagOpaque, fr.pos(fd), "function definition without a name")
		c := fr
		c.cond = true
		w.walkStmt(fd.Body, c)
		return
	}
	name := fd.Name.Value
	def := &funcDef{decl: fd, fr: fr}
	w.funcs.set(name, def)
	w.declared = append(w.declared, def)
	if w.isBuiltin(name, fr.dialect) || w.inPath(name) || shells[name] != "" || wrapperNames[name] {
		w.flag(FlagFunctionShadow, fr.pos(fd), "function %s shadows the command of that name where it is called", name)
	}
}

// funcDef is one function definition and where it was written.
type funcDef struct {
	decl   *syntax.FuncDecl
	fr     frame
	walked bool
}

// callFunc walks a function body where it is called, with positional
// parameters tainted when any argument carried a credential.
func (w *walker) callFunc(def *funcDef, args []arg, fr frame) {
	def.walked = true
	if w.active[def] > 0 || fr.depth >= w.in.MaxScriptDepth*4 {
		return // recursion: the body is already being walked
	}
	w.active[def]++
	defer func() { w.active[def]-- }()
	c := def.fr
	c.cond = true
	c.depth = fr.depth + 1
	c.context = fr.context
	// The body reads the stdin of the call, not of the definition.
	c.in, c.shellIn = fr.in, fr.in
	c = c.with("function:" + def.decl.Name.Value)
	c.posTaint = false
	for _, a := range args[1:] {
		if a.tainted != "" {
			c.posTaint = true
			w.trap.posEver = true
		}
	}
	w.walkStmt(def.decl.Body, c)
}

// finish walks the functions that were defined but never called (or
// unset, or defined in a subshell), so no part of the text goes unlisted.
func (w *walker) finish() {
	w.fireTraps(0)
	for _, def := range w.declared {
		if !def.walked {
			w.callFunc(def, []arg{{}}, def.fr)
		}
	}
	w.fireTraps(0) // set by those functions
	w.checkUnseen()
}

// maxLoopWalks bounds how often one loop's body is walked (see loop), and
// maxLoopRewalks the walks again of all loops of one analysis: loops
// inside loops multiply them.
const (
	maxLoopWalks   = 8
	maxLoopRewalks = 1000
)

// loop walks a loop's body until what is known of the variables and
// functions stops changing: the body runs again with what its last run
// left (`for i in 1 2; do tool "$x"; x=$T; done` puts the token on the
// second run's command line). The body is conditional code, so a walk
// only takes knowledge away (a value becomes unknown, taint accumulates):
// a few walks reach the end. Past maxLoopWalks the loop is opaque. A
// command a later walk finds as an earlier one did is listed once.
func (w *walker) loop(pos Pos, body func()) {
	seen := map[string]bool{}
	vd, fd := w.vars.depth(), w.funcs.depth()
	for i := 0; ; i++ {
		before := w.loopState(vd, fd)
		from := len(w.a.Commands)
		body()
		kept := w.a.Commands[:from]
		for _, c := range w.a.Commands[from:] {
			if k := fmt.Sprintf("%+v", c); !seen[k] {
				seen[k] = true
				kept = append(kept, c)
			}
		}
		w.a.Commands = kept
		if w.exhausted || w.loopState(vd, fd) == before {
			return
		}
		if i+1 == maxLoopWalks {
			w.flag(FlagOpaque, pos, "what this loop's variables hold kept changing after %d walks of its body", maxLoopWalks)
			return
		}
		if w.loopWalks++; w.loopWalks > maxLoopRewalks {
			w.flag(FlagDepthExceeded, pos, "more than %d walks of loop bodies again; the rest of this loop is opaque", maxLoopRewalks)
			return
		}
	}
}

// loopState is what loop compares: the versions of the variables and of
// the functions in the layers the loop itself writes to (what a subshell
// inside it sets is forgotten when it ends).
func (w *walker) loopState(vd, fd int) [2]int {
	return [2]int{w.vars.version(vd), w.funcs.version(fd)}
}

// sameValue: writing b over a changes nothing the walk knows.
func sameValue(a, b *value) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.known == b.known && a.isList == b.isList && a.str == b.str && slices.Equal(a.list, b.list) &&
		a.numeric == b.numeric && a.names == b.names && a.integer == b.integer && a.tainted == b.tainted && a.exported == b.exported && a.assoc == b.assoc &&
		a.nameref == b.nameref && a.ref == b.ref && a.unset == b.unset && a.credPath == b.credPath
}

// setVar records an assignment. In conditional code the value becomes
// unknown, and taint only ever accumulates there.
func (w *walker) setVar(name string, v *value, fr frame) {
	w.setVarDepth(name, v, fr, 0)
}

func (w *walker) setVarDepth(name string, v *value, fr frame, depth int) {
	w.noteAssign(name, v.tainted)
	old, had := w.vars.get(name)
	if had && old.ref && !v.ref && depth < 8 {
		// Assigning to a nameref assigns the variable it names; one with
		// no target yet takes the value as its target's name (bash).
		switch {
		case old.nameref != "" && old.nameref != name:
			w.setVarDepth(old.nameref, v, fr, depth+1)
			return
		case old.nameref == "" && !old.tainted:
			target := ""
			if v.known && !v.isList && syntax.ValidName(v.str) {
				target = v.str
			}
			nv := &value{ref: true, nameref: target, tainted: target == "" || v.tainted, exported: old.exported}
			if fr.cond {
				nv = &value{ref: true, tainted: true}
			}
			w.vars.set(name, nv)
			return
		}
	}
	if had && old.integer && !v.integer {
		// The attribute stays with the variable (loops, read, printf -v
		// are checked where they assign).
		c := *v
		c.integer = true
		v = &c
	}
	if fr.cond {
		nv := &value{tainted: v.tainted || had && old.tainted, numeric: v.numeric && (!had || old.numeric),
			names: plainName(v) && (!had || plainName(old)), integer: v.integer}
		w.vars.set(name, nv)
		return
	}
	w.vars.set(name, v)
}

// substitutions walks the command and process substitutions inside a word,
// which run before the command that holds the word, and checks arithmetic
// inside it.
func (w *walker) substitutions(word *syntax.Word, fr frame) {
	if word == nil || inert(word) {
		return
	}
	w.substNode(word, fr)
}

func (w *walker) substNode(node syntax.Node, fr frame) {
	syntax.Walk(node, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CmdSubst:
			c := fr
			c.in = fr.shellIn // expanded before the statement's redirections
			w.substOut[n] = w.capturing(func() { w.subshell(func() { w.walkStmts(n.Stmts, c.with("cmdsubst")) }) })
			return false
		case *syntax.ProcSubst:
			c := fr
			c.cond = true
			c.in = fr.shellIn
			if n.Op == syntax.CmdOut {
				// >(cmd) reads what is written to its path, by the
				// command that names it or, after exec, by everything
				// later (feedback.go).
				c.in = stdin{piped: true, taint: w.feedIn(fr.pos(n))}
			}
			w.substOut[n] = w.capturing(func() { w.subshell(func() { w.walkStmts(n.Stmts, c.with("procsubst")) }) })
			return false
		case *syntax.ArithmExp:
			w.arith(n.X, fr)
			return false
		case *syntax.ParamExp:
			if n.Exp != nil && n.Exp.Op == syntax.OtherParamOps && n.Exp.Word != nil && strings.Contains(fr.srcOf(n.Exp.Word), "P") {
				w.flag(FlagPromptExpansion, fr.pos(n), "${%s@P} expands the value as a prompt string, which can run command substitutions", paramName(n))
			}
			if n.Excl || n.Names != 0 {
				w.flag(FlagIndirection, fr.pos(n), "%s expands a variable named at run time", fr.srcOf(n))
			}
			if n.Excl && n.Names == 0 && !keysOf(n) {
				w.indirectName(n, fr)
			} else if v, ok := w.vars.get(paramName(n)); ok && v.ref && v.nameref == "" && !n.Excl {
				w.flag(FlagOpaque, fr.pos(n), "%s is a nameref to a variable named at run time: a subscript in that name (a[$(id)]) runs code", fr.srcOf(n))
			}
			if n.Index != nil {
				w.arith(n.Index, fr)
			}
			if n.Slice != nil {
				w.arith(n.Slice.Offset, fr)
				w.arith(n.Slice.Length, fr)
			}
			if n.Exp != nil && n.Exp.Word != nil {
				switch n.Exp.Op {
				case syntax.AssignUnset, syntax.AssignUnsetOrNull:
					if n.Param != nil {
						w.setVar(n.Param.Value, &value{tainted: w.taintOf(n.Exp.Word, &fr) != ""}, fr)
					}
				}
			}
			return true
		}
		return true
	})
}

// traced names the credential that set -x prints of a command: bash writes
// each simple command's expanded words and assignments to stderr (+ X=VALUE
// cmd ARG), [[ ]], (( )) and for's words too, before it runs them. What
// : "$T" and GH_TOKEN=$T cmd print then carries the value.
func (w *walker) traced(cmd syntax.Command, fr *frame) string {
	var ws []*syntax.Word
	assigns := func(as []*syntax.Assign) {
		for _, a := range as {
			ws = append(ws, a.Value)
			if a.Array != nil {
				for _, el := range a.Array.Elems {
					ws = append(ws, el.Value)
				}
			}
		}
	}
	switch cmd := cmd.(type) {
	case *syntax.CallExpr:
		assigns(cmd.Assigns)
		ws = append(ws, cmd.Args...)
	case *syntax.DeclClause:
		assigns(cmd.Args)
	case *syntax.ForClause:
		if it, ok := cmd.Loop.(*syntax.WordIter); ok {
			ws = append(ws, it.Items...)
		}
	case *syntax.CaseClause:
		ws = append(ws, cmd.Word)
	case *syntax.TestClause, *syntax.ArithmCmd, *syntax.LetClause:
		syntax.Walk(cmd, func(n syntax.Node) bool {
			if wd, ok := n.(*syntax.Word); ok {
				ws = append(ws, wd)
				return false
			}
			return true
		})
	}
	for _, wd := range ws {
		if wd == nil {
			continue
		}
		if t := w.taintOf(wd, fr); t != "" {
			return t + " (printed by set -x)"
		}
	}
	return ""
}

// keysOf reports whether p is ${!a[@]} or ${!a[*]}: the array's keys,
// not an indirection.
func keysOf(p *syntax.ParamExp) bool {
	if p.Index == nil {
		return false
	}
	wd, ok := p.Index.(*syntax.Word)
	if !ok {
		return false
	}
	s, ok := plainLit(wd)
	return ok && (s == "@" || s == "*")
}

// indirectName checks the name ${!x} expands: bash evaluates a subscript
// in it (x='a[$(id)]'; echo "${!x}" runs id), so a name known only at
// run time is code the analyzer cannot see, and a known one is checked as
// a builtin's variable name is.
func (w *walker) indirectName(p *syntax.ParamExp, fr frame) {
	name := paramName(p)
	v, ok := w.vars.get(name)
	if p.Index == nil && ok && v.known && !v.isList {
		w.checkVarName(v.str, fr.pos(p), fr.srcOf(p))
		return
	}
	if p.Index == nil && ok && plainName(v) {
		return // for v in HOME PATH; do echo "${!v}"; done
	}
	if p.Index == nil && isSpecialParam(name) {
		return // ${!#}: the last positional parameter's value, a word
	}
	w.flag(FlagOpaque, fr.pos(p), "%s expands the variable that %s names, which is known only at run time: a subscript in that name (a[$(id)]) runs code", fr.srcOf(p), name)
}

// plainName reports whether a variable only ever held a name or a number:
// as the name ${!x} expands, it has no subscript to evaluate.
func plainName(v *value) bool {
	return v.names || v.numeric || v.known && !v.isList && (syntax.ValidName(v.str) || isInteger(v.str))
}

// isSpecialParam reports whether name is one of bash's special parameters
// whose value bash sets itself and that cannot hold a subscript.
func isSpecialParam(name string) bool {
	switch name {
	case "#", "?", "$", "!", "-":
		return true
	}
	return false
}

func paramName(p *syntax.ParamExp) string {
	if p.Param == nil {
		return ""
	}
	return p.Param.Value
}

// arith walks an arithmetic expression. Bash evaluates the value of every
// variable named in arithmetic as an expression in turn, so a value that is
// not known to be a number is code the analyzer cannot see.
func (w *walker) arith(x syntax.ArithmExpr, fr frame) {
	if x == nil {
		return
	}
	syntax.Walk(x, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CmdSubst, *syntax.ProcSubst:
			w.flag(FlagOpaque, fr.pos(n), "the output of %s is evaluated as an arithmetic expression, which can run commands", fr.srcOf(n))
			w.substNode(n, fr)
			return false
		case *syntax.BinaryArithm:
			if isAssignOp(n.Op) {
				if wd, ok := n.X.(*syntax.Word); ok {
					if name := wordName(wd); name != "" {
						t := w.arithTaint(n.Y, &fr)
						if n.Op != syntax.Assgn && t == "" {
							t = w.nameTaint(name, 0) // x += T keeps x's
						}
						w.setVar(name, &value{numeric: t == "", tainted: t != ""}, fr)
					}
				}
			}
		case *syntax.UnaryArithm:
			if n.Op == syntax.Inc || n.Op == syntax.Dec {
				if wd, ok := n.X.(*syntax.Word); ok {
					if name := wordName(wd); name != "" {
						if v, ok := w.vars.get(name); !ok || v.numeric {
							w.setVar(name, &value{numeric: true}, fr)
						}
					}
				}
			}
		case *syntax.Word:
			w.arithOperand(n, fr)
			return true
		case *syntax.ParamExp:
			if n.Index != nil {
				w.arith(n.Index, fr)
			}
			return false
		}
		return true
	})
}

func isAssignOp(op syntax.BinAritOperator) bool {
	switch op {
	case syntax.Assgn, syntax.AddAssgn, syntax.SubAssgn, syntax.MulAssgn, syntax.QuoAssgn,
		syntax.RemAssgn, syntax.AndAssgn, syntax.OrAssgn, syntax.XorAssgn, syntax.ShlAssgn, syntax.ShrAssgn:
		return true
	}
	return false
}

// wordName returns the variable a bare arithmetic word names, or "".
func wordName(wd *syntax.Word) string {
	if len(wd.Parts) != 1 {
		return ""
	}
	switch p := wd.Parts[0].(type) {
	case *syntax.Lit:
		if syntax.ValidName(p.Value) {
			return p.Value
		}
	case *syntax.ParamExp:
		if p.Length {
			return "" // ${#x} is a number
		}
		if p.Param != nil && p.Short || p.Param != nil && p.Exp == nil && p.Index == nil {
			return p.Param.Value
		}
	}
	return ""
}

// arithOperand checks one operand of an arithmetic expression. A number
// is a literal (wordName gives none); $1 and $0 are not numbers but what
// the caller passed, so they are checked like any variable.
func (w *walker) arithOperand(wd *syntax.Word, fr frame) {
	if name := wordName(wd); name != "" {
		w.arithVar(name, fr.pos(wd), fr)
		return
	}
	// $(...) and friends are walked by arith; literals are numbers.
	quoted := false
	for _, p := range wd.Parts {
		switch p := p.(type) {
		case *syntax.ParamExp:
			if p.Param != nil && !p.Length {
				w.arithVar(p.Param.Value, fr.pos(wd), fr)
			}
		case *syntax.SglQuoted:
			quoted = true
		case *syntax.DblQuoted:
			quoted = true
			for _, q := range p.Parts {
				if pe, ok := q.(*syntax.ParamExp); ok && pe.Param != nil && !pe.Length {
					w.arithVar(pe.Param.Value, fr.pos(wd), fr)
				}
			}
		}
	}
	if !quoted {
		return
	}
	// Bash removes the quotes and evaluates the text that is left:
	// let 'n = a[$(id)]' and x='a[$(id)]'; (( "$x" )) run id. A value
	// known only at run time was flagged above.
	if s, ok := w.literal(wd); ok && !isArithSafe(s) {
		w.arithText(s, fr.pos(wd), fr)
	}
}

// arithText walks text that bash evaluates as one arithmetic expression,
// as the code (( TEXT )). Text that is not exactly one expression there
// (it would close the parentheses and go on) is opaque: bash refuses it,
// but the analyzer does not guess how.
func (w *walker) arithText(s string, pos Pos, fr frame) {
	code := "(( " + s + " ))"
	if f, err := parse(code, "", fr.dialect); err == nil && len(f.Stmts) == 1 {
		st := f.Stmts[0]
		if _, ok := st.Cmd.(*syntax.ArithmCmd); ok && len(st.Redirs) == 0 && !st.Background && !st.Coprocess &&
			!st.Negated && int(st.End().Offset()) == len(code) {
			w.nested(Word{Value: code}, fr.dialect, pos, fr, "arithmetic")
			return
		}
	}
	w.flag(FlagOpaque, pos, "arithmetic evaluates the text %q, which is not one arithmetic expression", s)
}

func (w *walker) arithVar(name string, pos Pos, fr frame) {
	switch name {
	case "#", "?", "$", "!", "RANDOM", "SECONDS", "LINENO", "BASHPID", "PPID", "UID", "EUID", "OPTIND", "SRANDOM", "EPOCHSECONDS":
		return
	}
	v, ok := w.vars.get(name)
	if ok && (v.numeric || v.known && !v.isList && isArithSafe(v.str)) {
		return
	}
	label := name
	if name[0] >= '0' && name[0] <= '9' {
		label = "$" + name // a positional parameter
	}
	w.flag(FlagOpaque, pos, "arithmetic evaluates the value of %s as an expression, and that value is not known to be a number", label)
}

// isArithSafe reports whether a static value, evaluated as arithmetic,
// cannot run anything: no substitution and no array subscript.
func isArithSafe(s string) bool {
	return !strings.ContainsAny(s, "$`[")
}

func (w *walker) testExpr(x syntax.TestExpr, fr frame) {
	syntax.Walk(x, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Word:
			w.substitutions(n, fr)
			return false
		case *syntax.BinaryTest:
			w.noteRematch(n, &fr)
			switch n.Op {
			case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
				// [[ a -eq b ]] evaluates both sides as arithmetic.
				for _, side := range []syntax.TestExpr{n.X, n.Y} {
					if wd, ok := side.(*syntax.Word); ok {
						w.arithOperandWord(wd, fr)
					}
				}
			}
		case *syntax.UnaryTest:
			if n.Op == syntax.TsVarSet {
				if wd, ok := n.X.(*syntax.Word); ok && strings.ContainsAny(fr.srcOf(wd), "[$`") {
					w.flag(FlagOpaque, fr.pos(wd), "[[ -v %s ]] evaluates an array subscript", fr.srcOf(wd))
				}
			}
		}
		return true
	})
}

func (w *walker) arithOperandWord(wd *syntax.Word, fr frame) {
	if w.isStatic(wd) {
		if s, ok := w.literal(wd); ok && isArithSafe(s) {
			return
		}
	}
	for _, p := range wd.Parts {
		if pe, ok := p.(*syntax.ParamExp); ok && pe.Param != nil {
			w.arithVar(pe.Param.Value, fr.pos(wd), fr)
			return
		}
		if dq, ok := p.(*syntax.DblQuoted); ok {
			for _, q := range dq.Parts {
				if pe, ok := q.(*syntax.ParamExp); ok && pe.Param != nil {
					w.arithVar(pe.Param.Value, fr.pos(wd), fr)
					return
				}
			}
		}
	}
	w.flag(FlagOpaque, fr.pos(wd), "arithmetic comparison evaluates %s as an expression", fr.srcOf(wd))
}

// walkRedirects resolves redirection targets and records reads and writes
// (walkStmt has walked the substitutions in them).
func (w *walker) walkRedirects(rs []*syntax.Redirect, fr frame) []Redirect {
	var out []Redirect
	for _, r := range rs {
		if createsFile(r.Op) {
			if t := w.taintOf(r.Word, &fr); t != "" {
				w.denyFileName(t, "the redirection", fr.pos(r))
			}
		}
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc, syntax.DplIn, syntax.DplOut:
			if r.Op == syntax.DplOut || r.Op == syntax.DplIn {
				// >&file (bash) writes a file when the word is not a number or -.
				if s, ok := w.literal(r.Word); ok && !isFD(s) {
					red := Redirect{Op: r.Op.String(), Path: s, Write: r.Op == syntax.DplOut, Pos: fr.pos(r)}
					w.noteRedirect(&red, fr)
					out = append(out, red)
				}
			}
			continue
		}
		red := Redirect{Op: r.Op.String(), Pos: fr.pos(r)}
		switch r.Op {
		case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.RdrAll, syntax.AppAll, syntax.RdrInOut, syntax.AppClob, syntax.RdrAllClob, syntax.AppAllClob:
			red.Write = true
		}
		if s, ok := w.literal(r.Word); ok {
			red.Path = s
		} else {
			red.Path = fr.srcOf(r.Word)
			red.Dynamic = true
		}
		w.noteRedirect(&red, fr)
		out = append(out, red)
	}
	return out
}

// createsFile reports whether a redirection may create the file its word
// names (>&word does when the word is not a descriptor).
func createsFile(op syntax.RedirOperator) bool {
	switch op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.RdrAll, syntax.AppAll, syntax.RdrInOut, syntax.AppClob,
		syntax.RdrAllClob, syntax.AppAllClob, syntax.DplOut:
		return true
	}
	return false
}

// denyFileName refuses a redirection whose target is named with a
// credential: the value becomes a file's name, which every process that
// lists the directory reads (on the host, in a workspace root, after the
// run too), and which a later glob or ls puts on a command line the
// analyzer does not see (: > "x$T"; curl x*).
func (w *walker) denyFileName(variable, what string, pos Pos) {
	w.deny(govern.ReasonCredentialInArgv, pos, "the value of "+refOf(variable)+" would be the name of the file "+what+" at "+pos.String()+
		" creates, which every process that lists its directory can read, and which a glob or ls would put on a command line. "+
		"Name the file with something else and write the value into it. "+sanctionedForms)
}

func isFD(s string) bool {
	if s == "-" {
		return true
	}
	s = strings.TrimSuffix(s, "-")
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

func (w *walker) noteRedirect(r *Redirect, fr frame) {
	if r.Dynamic {
		if strings.Contains(r.Path, "/dev/tcp") || strings.Contains(r.Path, "/dev/udp") {
			r.Network = true
		}
	} else if strings.HasPrefix(r.Path, "/dev/tcp/") || strings.HasPrefix(r.Path, "/dev/udp/") {
		r.Network = true
	}
	if r.Network {
		w.flag(FlagNetworkRedirect, r.Pos, "redirection %s %s opens a network connection", r.Op, r.Path)
		return
	}
	if r.Write && !r.Dynamic {
		w.noteWrite(r.Path, r.Pos, fr)
	} else if r.Write {
		w.noteDynWrite(r.Pos)
	}
}

func (w *walker) noteWrite(p string, pos Pos, fr frame) {
	if a := w.abs(p); a != "" {
		w.writes = append(w.writes, write{path: a, pos: pos})
	} else {
		w.noteDynWrite(pos) // relative to a directory known only at run time
	}
}

// noteDynWrite records a write (or a link, move or removal) whose target is
// known only at run time: it may be any script run later, or a directory
// above one.
func (w *walker) noteDynWrite(pos Pos) {
	if len(w.dynWrites) == 0 || w.dynWrites[len(w.dynWrites)-1] != pos {
		w.dynWrites = append(w.dynWrites, pos)
	}
}

// noteRun links a file about to run with an earlier write of it, or of a
// directory above it (ln -sfn e L re-points L/s.sh; mv, cp -r and rm of a
// directory change what is under it), as named and after symlinks, or
// with a write whose target is known only at run time; it reports whether
// there was one.
func (w *walker) noteRun(p string, pos Pos, fr frame) bool {
	a := w.abs(p)
	if a == "" {
		return false
	}
	at, detail, ok := w.writeBefore(a)
	if ok {
		w.a.Links = append(w.a.Links, Link{Path: a, Write: at, Run: pos})
		w.flag(FlagWriteThenRun, pos, "%s", detail)
	}
	return ok
}

// writeBefore finds an earlier write of the absolute path a: of a itself,
// of a directory above it (as named or after symlinks), or of a target
// known only at run time; detail says which, for the flag.
func (w *walker) writeBefore(a string) (at Pos, detail string, ok bool) {
	for _, wr := range w.writes {
		if wr.path == a {
			return wr.pos, fmt.Sprintf("%s was written at %s and is run here", a, wr.pos), true
		}
	}
	real := w.realPath(a)
	for _, wr := range w.writes {
		wreal := w.realPath(wr.path)
		if strings.HasPrefix(a, wr.path+"/") || wreal == real || strings.HasPrefix(real, wreal+"/") {
			return wr.pos, fmt.Sprintf("%s is run here, and %s, which names it or a directory above it, was changed at %s", a, wr.path, wr.pos), true
		}
	}
	if len(w.dynWrites) > 0 {
		wp := w.dynWrites[0]
		return wp, fmt.Sprintf("%s is run here, and the command at %s changed a file or directory named only at run time, which may be it or a directory above it", a, wp), true
	}
	return Pos{}, "", false
}

// inPath reports whether name is found as a file in the run's PATH.
func (w *walker) inPath(name string) bool {
	_, ok := w.lookPath(name)
	return ok
}

// unknownPath stands for a PATH the text set to a value known only at run
// time.
const unknownPath = "\x00"

// pathCandidate is the file a bare name runs when it is not what lookPath
// reports: through a relative PATH entry the text set (".", or an empty
// entry: the current directory), or an entry outside the system
// directories that holds no such file now but comes first, where the text
// can create it before the command runs (PATH=/tmp/b:$PATH after writing
// /tmp/b/tool): any entry the text added, and one of the PATH the run
// starts with when the text writes there first. dir is false when the file is not known: PATH, or the
// directory a relative entry names, is known only at run time. "" with
// dir true: the name runs what lookPath finds, or nothing the text can
// make.
func (w *walker) pathCandidate(name string) (cand string, dir bool) {
	for _, entry := range w.path {
		d, ok := w.pathDir(entry)
		if !ok {
			return "", false
		}
		rel := d != entry
		p := filepath.Join(d, name)
		switch {
		case isRegular(p):
			if rel {
				return p, true
			}
			return "", true // lookPath's
		case !isSystemPath(p):
			if _, _, written := w.writeBefore(p); written || rel || !slices.Contains(w.startPath, d) {
				return p, true
			}
		}
	}
	return "", true
}

// lookPath finds name in the run's PATH. The executor sets only absolute
// entries, but the text may set relative ones (PATH=sub:$PATH; source
// x.sh reads sub/x.sh): those, and an empty entry, are the current
// directory's, and a lookup that meets one in a directory known only at
// run time, or a PATH known only at run time, finds nothing (pathUnknown).
// Results are cached per analysis while every entry is absolute.
func (w *walker) lookPath(name string) (string, bool) {
	if strings.Contains(name, "/") || name == "" {
		return "", false
	}
	rel := false
	for _, dir := range w.path {
		rel = rel || !filepath.IsAbs(dir)
	}
	if p, ok := w.pathCache[name]; ok && !rel {
		return p, p != ""
	}
	found := ""
	for _, entry := range w.path {
		dir, ok := w.pathDir(entry)
		if !ok {
			break
		}
		p := filepath.Join(dir, name)
		if isRegular(p) {
			found = p
			break
		}
	}
	if !rel {
		w.pathCache[name] = found
	}
	return found, found != ""
}

// pathDir is the directory a PATH entry names: a relative or empty one is
// the current directory's; false when that, or PATH, is known only at run
// time.
func (w *walker) pathDir(entry string) (string, bool) {
	switch {
	case entry == unknownPath:
		return "", false
	case filepath.IsAbs(entry):
		return entry, true
	case w.cwd == "":
		return "", false
	}
	return filepath.Join(w.cwd, entry), true
}

// pathUnknown reports whether a PATH lookup can miss what runs: PATH is
// known only at run time, or has a relative entry in a directory that is.
func (w *walker) pathUnknown() bool {
	for _, entry := range w.path {
		if _, ok := w.pathDir(entry); !ok {
			return true
		}
	}
	return false
}

// fn returns the function a name is defined as at this point, or nil.
func (w *walker) fn(name string) *funcDef {
	fd, _ := w.funcs.get(name)
	return fd
}
