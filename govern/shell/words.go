package shell

import (
	"path"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"

	"github.com/mitrity/mitrity/govern"
)

// value is what the analyzer knows about one shell variable.
type value struct {
	known    bool     // the value is static
	list     []string // for arrays (isList)
	isList   bool
	str      string
	numeric  bool // only ever held an arithmetic result
	names    bool // only ever held a variable name or a number (what ${!x} may expand)
	integer  bool // declare -i: bash evaluates every value assigned to it as arithmetic
	tainted  bool // carries a credential value
	exported bool // visible to child processes
	assoc    bool // declare -A: subscripts are strings, not arithmetic
	nameref  string
	ref      bool   // declare -n: a name for the variable nameref names
	unset    bool   // known not to exist (unset, or never in the environment)
	credPath string // the value may name a credential file (see wordCredPath)
}

// env adapts the walker's variables to expand.Environ. Only variables whose
// values are known are visible; the static check keeps every other reference
// away from expand.
type env struct{ w *walker }

func (e env) Get(name string) expand.Variable {
	v, ok := e.w.vars.get(name)
	if !ok || !v.known {
		return expand.Variable{}
	}
	if v.isList {
		return expand.Variable{Set: true, Kind: expand.Indexed, List: v.list}
	}
	return expand.Variable{Set: true, Kind: expand.String, Str: v.str}
}

func (e env) Each(fn func(string, expand.Variable) bool) {
	stop := false
	e.w.vars.each(func(name string, _ *value) {
		if vr := e.Get(name); !stop && vr.IsSet() {
			stop = !fn(name, vr)
		}
	})
}

// src returns the source text of a node in the current frame.
func (fr *frame) srcOf(n syntax.Node) string {
	s, e := int(n.Pos().Offset()), int(n.End().Offset())
	if s < 0 || e > len(fr.src) || s > e {
		return ""
	}
	return fr.src[s:e]
}

func (fr *frame) pos(n syntax.Node) Pos {
	p := n.Pos()
	return Pos{File: fr.file, Line: p.Line(), Col: p.Col()}
}

// isStatic reports whether word can be resolved without running anything.
func (w *walker) isStatic(word *syntax.Word) bool {
	if len(word.Parts) > 0 {
		if lit, ok := word.Parts[0].(*syntax.Lit); ok && strings.HasPrefix(lit.Value, "~") {
			// ~ needs HOME; ~user needs the user database.
			name := lit.Value[1:]
			if i := strings.IndexByte(name, '/'); i >= 0 {
				name = name[:i]
			}
			if home, ok := w.vars.get("HOME"); name != "" || !ok || !home.known {
				return false
			}
		}
	}
	return w.staticParts(word.Parts, false)
}

func (w *walker) staticParts(parts []syntax.WordPart, quoted bool) bool {
	for _, p := range parts {
		switch p := p.(type) {
		case *syntax.Lit, *syntax.SglQuoted:
		case *syntax.DblQuoted:
			if !w.staticParts(p.Parts, true) {
				return false
			}
		case *syntax.ParamExp:
			if !w.staticParam(p, quoted) {
				return false
			}
		case *syntax.ExtGlob:
			// A pattern: kept as text, like any glob.
		case *syntax.ArithmExp:
			if !constArith(p.X) {
				return false
			}
		default: // CmdSubst, ProcSubst, BraceExp
			return false
		}
	}
	return true
}

func (w *walker) staticParam(p *syntax.ParamExp, quoted bool) bool {
	if p.Param == nil || p.Excl || p.Names != 0 || p.Width || p.IsSet || p.Flags != nil || p.NestedParam != nil {
		return false
	}
	if p.Slice != nil {
		return false
	}
	v, ok := w.vars.get(p.Param.Value)
	if !ok || !v.known {
		return false
	}
	if p.Index != nil {
		// ${a[@]}, ${a[*]} and ${a[2]} of a known array; any other
		// subscript is arithmetic over run-time values.
		wd, isWord := p.Index.(*syntax.Word)
		lit, isLit := "", false
		if isWord {
			lit, isLit = plainLit(wd)
		}
		if !isLit || lit != "@" && lit != "*" && !isInteger(lit) || strings.HasPrefix(lit, "-") {
			return false
		}
	}
	if !quoted && !p.Length {
		if ifs, set := w.vars.get("IFS"); set && !ifs.known {
			return false
		}
	}
	if p.Repl != nil {
		if p.Repl.Orig != nil && !w.staticParts(p.Repl.Orig.Parts, true) || p.Repl.With != nil && !w.staticParts(p.Repl.With.Parts, true) {
			return false
		}
	}
	if p.Exp != nil {
		if p.Exp.Op == syntax.OtherParamOps {
			return false // ${x@P}, ${x@Q}...: evaluated by the shell
		}
		if p.Exp.Word != nil && !w.staticParts(p.Exp.Word.Parts, true) {
			return false
		}
		switch p.Exp.Op {
		case syntax.AssignUnset, syntax.AssignUnsetOrNull, syntax.ErrorUnset, syntax.ErrorUnsetOrNull:
			return false // side effects
		}
	}
	return true
}

// noBraces returns word with its unquoted braces escaped: POSIX sh has no
// brace expansion, but expand always performs it.
func noBraces(word *syntax.Word) *syntax.Word {
	var parts []syntax.WordPart
	for i, p := range word.Parts {
		if l, ok := p.(*syntax.Lit); ok && strings.ContainsAny(l.Value, "{}") {
			if parts == nil {
				parts = append([]syntax.WordPart(nil), word.Parts...)
			}
			c := *l
			var b strings.Builder
			for j := 0; j < len(l.Value); j++ {
				ch := l.Value[j]
				switch {
				case ch == '\\' && j+1 < len(l.Value):
					b.WriteByte(ch)
					j++
					ch = l.Value[j]
				case ch == '{' || ch == '}':
					b.WriteByte('\\')
				}
				b.WriteByte(ch)
			}
			c.Value = b.String()
			parts[i] = &c
		}
	}
	if parts == nil {
		return word
	}
	return &syntax.Word{Parts: parts}
}

// constArith reports whether an arithmetic expression has only number
// literals, so expand can evaluate it without reading any variable.
func constArith(x syntax.ArithmExpr) bool {
	ok := true
	syntax.Walk(x, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Word:
			lit, isLit := plainLit(n)
			if !isLit || !isInteger(lit) {
				ok = false
			}
			return false
		case *syntax.BinaryArithm:
			if isAssignOp(n.Op) {
				ok = false
			}
		case *syntax.UnaryArithm:
			if n.Op == syntax.Inc || n.Op == syntax.Dec {
				ok = false
			}
		}
		return ok
	})
	return ok
}

// fields resolves a static word into the fields it expands to. ok is false
// when expansion failed or produced more than maxFields fields.
func (w *walker) fields(word *syntax.Word, d Dialect) ([]string, bool) {
	if s, ok := plainLit(word); ok {
		return []string{s}, true
	}
	if d == DialectSh {
		word = noBraces(word)
	}
	if w.cfg == nil {
		w.cfg = &expand.Config{Env: env{w}}
	}
	if w.expanded > maxExpandBytes {
		return nil, false
	}
	var out []string
	for f, err := range expand.FieldsSeq(w.cfg, word) {
		if err != nil {
			return nil, false
		}
		out = append(out, f)
		w.expanded += len(f)
		if len(out) > maxFields {
			return nil, false
		}
	}
	return out, true
}

// maxExpandBytes bounds what the analyzer expands in all: each command
// that expands a large known value copies it (64 KiB of `: "$x"` with a
// 64 KiB $x is a gigabyte). Past it words are known only at run time.
const maxExpandBytes = 16 << 20

// plainLit returns the value of a word that is one literal needing no
// expansion at all (the common case, resolved without expand).
func plainLit(word *syntax.Word) (string, bool) {
	if len(word.Parts) != 1 {
		return "", false
	}
	switch p := word.Parts[0].(type) {
	case *syntax.Lit:
		if strings.ContainsAny(p.Value, "\\{~*?[") {
			return "", false
		}
		return p.Value, true
	case *syntax.SglQuoted:
		if p.Dollar {
			return "", false
		}
		return p.Value, true
	}
	return "", false
}

// inert reports whether a word holds only literal text: no expansion,
// substitution or arithmetic, so nothing in it runs or carries a value.
func inert(word *syntax.Word) bool {
	for _, p := range word.Parts {
		switch p := p.(type) {
		case *syntax.Lit, *syntax.SglQuoted:
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if _, ok := q.(*syntax.Lit); !ok {
					return false
				}
			}
		default:
			return false
		}
	}
	return true
}

// literal resolves a static word as a single string without splitting (for
// assignment values, redirect targets and here-strings).
func (w *walker) literal(word *syntax.Word) (string, bool) {
	if word == nil {
		return "", true
	}
	if !w.isStatic(word) {
		return "", false
	}
	if s, ok := plainLit(word); ok {
		return s, true
	}
	if w.cfg == nil {
		w.cfg = &expand.Config{Env: env{w}}
	}
	if w.expanded > maxExpandBytes {
		return "", false
	}
	s, err := expand.Literal(w.cfg, word)
	w.expanded += len(s)
	return s, err == nil
}

// arg is one resolved argv word with what the analyzer knows of its origin.
type arg struct {
	Word
	tainted string // the credential-bearing variable it carries, if any
	// credPath names the credential file the word may name (a path is not
	// the value: only what reads the file carries it). For a static word
	// it is worked out when first needed (credPathOf): that takes file
	// system lookups.
	credPath  string
	credKnown bool
	pos       Pos
}

// resolveArgs expands the argument words of a simple command.
func (w *walker) resolveArgs(words []*syntax.Word, fr *frame) []arg {
	out := make([]arg, 0, len(words))
	for _, word := range words {
		t := w.taintOf(word, fr)
		pos := fr.pos(word)
		if w.isStatic(word) {
			if fs, ok := w.fields(word, fr.dialect); ok {
				for _, f := range fs {
					out = append(out, arg{Word: Word{Value: f}, tainted: t, pos: pos})
				}
				continue
			}
		}
		out = append(out, arg{Word: Word{Value: fr.srcOf(word), Dynamic: true}, tainted: t, credPath: w.dynCredPath(word), credKnown: true, pos: pos})
	}
	return out
}

// taintOf names the credential-bearing variable whose value word would
// carry, or "" when it carries none. A command substitution inside the word
// that reads a credential (or the credential directory) taints it too.
func (w *walker) taintOf(word *syntax.Word, fr *frame) string {
	if word == nil || inert(word) {
		return ""
	}
	found := ""
	syntax.Walk(word, func(n syntax.Node) bool {
		if found != "" {
			return false
		}
		switch n := n.(type) {
		case *syntax.ParamExp:
			found = w.paramTaint(n, fr)
		case *syntax.CmdSubst:
			// What the walk saw it print, or (not walked yet) any
			// credential it names.
			if c, ok := w.substOut[n]; ok {
				found = c.taint
			} else if name := w.stmtsReference(n.Stmts, true); name != "" {
				found = name
			}
			return false
		case *syntax.ProcSubst:
			return false // yields a /dev/fd path, not a value
		case *syntax.ArithmExp:
			found = w.arithTaint(n.X, fr)
			return false
		}
		return found == ""
	})
	return found
}

// arithTaint names the credential an arithmetic expression's value may
// carry. Bash evaluates a variable named in it, T as well as $T, to its
// value, and a value that is an expression in turn: $((T)), $((T + 0))
// and (( x = T )) are a numeric credential's digits.
func (w *walker) arithTaint(x syntax.ArithmExpr, fr *frame) string {
	found := ""
	syntax.Walk(x, func(n syntax.Node) bool {
		if found != "" {
			return false
		}
		wd, ok := n.(*syntax.Word)
		if !ok {
			return true
		}
		if name := wordName(wd); name != "" {
			found = w.nameTaint(name, 0)
		}
		if found == "" {
			found = w.taintOf(wd, fr)
		}
		return false
	})
	return found
}

// nameTaint is the credential the variable name evaluates to in
// arithmetic: its own, or that of a name its known value refers to
// (y=T; $((y))), a few levels deep.
func (w *walker) nameTaint(name string, depth int) string {
	if w.isTainted(name) {
		return name
	}
	if v, ok := w.vars.get(name); ok && v.known && !v.isList && depth < 4 {
		return w.identTaint(v.str, depth+1)
	}
	return ""
}

// identTaint is nameTaint of the first identifier in the arithmetic text
// s that carries a credential (declare -i i=T stores T's value).
func (w *walker) identTaint(s string, depth int) string {
	for _, id := range strings.FieldsFunc(s, func(r rune) bool {
		return !(r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) {
		if id[0] >= '0' && id[0] <= '9' {
			continue
		}
		if t := w.nameTaint(id, depth); t != "" {
			return t
		}
	}
	return ""
}

func (w *walker) paramTaint(p *syntax.ParamExp, fr *frame) string {
	if p.Names != 0 && p.Param != nil {
		// ${!PREFIX*}: the names of credential variables.
		for name := range w.credVars {
			if strings.HasPrefix(name, p.Param.Value) {
				return "${!" + p.Param.Value + "*}"
			}
		}
		if strings.HasPrefix(CredentialPrefix, p.Param.Value) || strings.HasPrefix(p.Param.Value, CredentialPrefix) {
			return "${!" + p.Param.Value + "*}"
		}
		return ""
	}
	if p.Param == nil {
		return ""
	}
	name := p.Param.Value
	if p.Excl {
		// ${!x}: indirection; tainted unless x statically names a clean variable.
		v, ok := w.vars.get(name)
		if !ok || !v.known || v.isList {
			return "${!" + name + "}"
		}
		if w.isTainted(v.str) {
			return v.str
		}
		return ""
	}
	if p.Length {
		return ""
	}
	if t := w.shellSet(name); t != "" {
		if syntax.ValidName(t) || isPositional(t) {
			t = "$" + t
		}
		return "$" + name + " (bash sets it from the value of " + t + " earlier in the run)"
	}
	if w.isTainted(name) {
		return name
	}
	if name == "0" && w.isTainted("BASH_ARGV0") {
		return "$0 (assigned through BASH_ARGV0)"
	}
	if (fr.posTaint || w.posTainted) && isPositional(name) {
		return "$" + name
	}
	return ""
}

func isPositional(name string) bool {
	if name == "@" || name == "*" {
		return true
	}
	_, err := strconv.Atoi(name)
	return err == nil && name != "0"
}

// isTainted reports whether a variable carries a credential value.
func (w *walker) isTainted(name string) bool {
	if w.credVars[name] {
		return true
	}
	if strings.HasPrefix(name, CredentialPrefix) && name != CredentialDirVar {
		return true
	}
	if w.shellSet(name) != "" {
		return true
	}
	if v, ok := w.vars.get(name); ok {
		if v.tainted {
			return true
		}
		if v.nameref != "" && v.nameref != name {
			return w.isTainted(v.nameref)
		}
	}
	return false
}

// stmtsReference names a credential variable (or, when withDir, the
// credential directory) referenced anywhere in stmts, or "".
func (w *walker) stmtsReference(stmts []*syntax.Stmt, withDir bool) string {
	found := ""
	for _, st := range stmts {
		syntax.Walk(st, func(n syntax.Node) bool {
			if found != "" {
				return false
			}
			if ce, ok := n.(*syntax.CallExpr); ok && len(ce.Args) > 0 {
				if dump := w.envDump(ce); dump != "" {
					found = dump
					return false
				}
			}
			if dc, ok := n.(*syntax.DeclClause); ok {
				if dump := w.declDump(dc); dump != "" {
					found = dump
					return false
				}
			}
			if withDir {
				lit := ""
				switch l := n.(type) {
				case *syntax.Lit:
					lit = l.Value
				case *syntax.SglQuoted:
					lit = l.Value
				}
				if strings.Contains(lit, govern.CredentialDir) {
					found = "a credential file (" + lit + ")"
					return false
				}
			}
			if p, ok := n.(*syntax.ParamExp); ok && p.Param != nil {
				name := p.Param.Value
				if p.Excl || p.Names != 0 {
					if t := w.paramTaint(p, &frame{}); t != "" {
						found = t
					}
				} else if w.isTainted(name) || withDir && name == CredentialDirVar {
					found = name
				}
			}
			return true
		})
		if found != "" {
			break
		}
	}
	return found
}

// envDump names a command that prints the environment (or a variable of
// it) and so can carry a credential value: printenv, env, set, export -p,
// declare -p, and anything reading /proc/*/environ.
func (w *walker) envDump(ce *syntax.CallExpr) string {
	name, _ := plainLit(ce.Args[0])
	switch path.Base(name) {
	case "printenv":
		if len(ce.Args) == 1 {
			return "the environment (printenv)"
		}
		for _, a := range ce.Args[1:] {
			v, ok := plainLit(a)
			if !ok || w.isTainted(v) || strings.HasPrefix(v, "-") {
				return "the environment (printenv " + v + ")"
			}
		}
	case "env":
		if len(ce.Args) == 1 {
			return "the environment (env)"
		}
	case "set", "export", "declare", "typeset", "compgen":
		if len(ce.Args) == 1 || len(ce.Args) >= 2 && strings.HasPrefix(litOf(ce.Args[1]), "-") {
			return "the environment (" + name + ")"
		}
	}
	for _, a := range ce.Args {
		for _, p := range a.Parts {
			if l, ok := p.(*syntax.Lit); ok && strings.Contains(l.Value, "environ") {
				return "the environment (/proc/*/environ)"
			}
			if q, ok := p.(*syntax.SglQuoted); ok && strings.Contains(q.Value, "environ") {
				return "the environment (/proc/*/environ)"
			}
		}
	}
	return ""
}

func litOf(w *syntax.Word) string {
	s, _ := plainLit(w)
	return s
}

// hasGlob reports whether a word has an unquoted glob pattern, so the
// shell would match it against file names.
func hasGlob(word *syntax.Word) bool {
	var lits strings.Builder
	for _, p := range word.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			lits.WriteString(p.Value)
		case *syntax.ExtGlob:
			return true
		default:
			lits.WriteByte(0) // a quoted part separates literal runs
		}
	}
	return isGlobPattern(lits.String(), true)
}

// isGlobPattern reports whether s holds *, ? or a [...] bracket
// expression; with escapes, a backslash quotes the next character.
func isGlobPattern(s string, escapes bool) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if escapes {
				i++
			}
		case '*', '?':
			return true
		case '[':
			if j := strings.IndexByte(s[i+1:], ']'); j > 0 {
				return true
			}
		}
	}
	return false
}

// unquotedParam reports whether a word has an unquoted parameter
// expansion, whose value the shell would split and glob.
func unquotedParam(word *syntax.Word) bool {
	for _, p := range word.Parts {
		if _, ok := p.(*syntax.ParamExp); ok {
			return true
		}
	}
	return false
}

// stmtsReferenceWord names a credential variable, or the credential
// directory, referenced anywhere in word.
func (w *walker) stmtsReferenceWord(word *syntax.Word) string {
	if word == nil {
		return ""
	}
	return w.stmtsReference([]*syntax.Stmt{{Cmd: &syntax.CallExpr{Args: []*syntax.Word{word}}}}, true)
}
