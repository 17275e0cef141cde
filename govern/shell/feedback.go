package shell

import (
	"maps"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// This file handles values that flow backwards in the text: what a later
// statement writes into a coprocess or a process substitution started
// earlier, files read (by a background job, from a named pipe) before the
// text writes a credential to them, and the variables bash sets itself
// ($_, BASH_ARGV, BASH_REMATCH, PWD...) read in code walked before the
// command that fills them (a loop body, a trap, a function). The walk is
// one pass in text order, so it records what it learned too late as
// hints, and Analyze walks the whole text again with them, until nothing
// new is learned (at most maxPasses times; past that the text is opaque).

// maxPasses bounds the walks of one text.
const maxPasses = 4

// hints is what one walk hands the next.
type hints struct {
	// feeds: the stdin of the coprocess or >(...) at each position carries
	// this credential (something written to it later in the text).
	feeds map[Pos]string
	// Shell-set variables tainted from the start (see shellSet).
	args, rematch, dir string
	// Files a credential is written to anywhere in the text, taken as
	// holding it from the start.
	files    []string
	anywhere string
	// xtrace may be on (walker.xtrace).
	xtrace bool
	// hash -p names (walker.hashed, walker.hashedAny).
	hashed    map[string]bool
	hashedAny bool
}

// feedback is what the walk records for the next one.
type feedback struct {
	feeds map[Pos]string
	// missed: a shell-set variable or a file was read before this walk
	// learned it carries a credential.
	missed bool
	// reads are the files read while the walk knew them to be clean.
	reads []string
}

// feedIn is the credential the hints say later code writes into the
// coprocess or process substitution at pos.
func (w *walker) feedIn(pos Pos) string {
	if w.hints == nil {
		return ""
	}
	t := w.hints.feeds[pos]
	if t == "" {
		return ""
	}
	if syntax.ValidName(t) || isPositional(t) {
		t = "$" + t
	}
	return t + " (written later in the text into the input of the process at " + pos.String() + ")"
}

// feed records that a credential is written into the stdin of the
// coprocess or process substitution at pos.
func (w *walker) feed(pos Pos, taint string) {
	if taint == "" {
		return
	}
	if w.fb.feeds == nil {
		w.fb.feeds = map[Pos]string{}
	}
	if _, ok := w.fb.feeds[pos]; !ok {
		w.fb.feeds[pos] = taint
	}
}

// next returns the hints for another walk, or nil when this walk learned
// nothing it did not start with.
func (w *walker) next() *hints {
	h := &hints{feeds: map[Pos]string{}}
	old := w.hints
	if old == nil {
		old = &hints{}
	}
	changed := false
	for p, t := range old.feeds {
		h.feeds[p] = t
	}
	for p, t := range w.fb.feeds {
		if _, ok := h.feeds[p]; !ok {
			h.feeds[p] = t
			changed = true
		}
	}
	h.args, h.rematch, h.dir = w.argTaint, w.rematchTaint, w.dirTaint
	h.files, h.anywhere = w.taintedFiles, w.taintAnywhere
	h.xtrace = w.xtrace
	if h.xtrace && !old.xtrace {
		changed = true // commands walked before set -x may be traced too
	}
	h.hashed, h.hashedAny = w.hashed, w.hashedAny
	if h.hashedAny && !old.hashedAny || len(h.hashed) > len(old.hashed) {
		changed = true // a name run before the hash -p (a loop, a trap) may run the file
	}
	if w.fb.missed && (h.args != old.args || h.rematch != old.rematch || h.dir != old.dir ||
		len(h.files) != len(old.files) || h.anywhere != old.anywhere) {
		changed = true
	}
	if !changed {
		return nil
	}
	return h
}

// applyHints starts a walk with what the last one learned.
func (w *walker) applyHints(h *hints) {
	w.hints = h
	if h == nil {
		return
	}
	w.argTaint, w.rematchTaint, w.dirTaint = h.args, h.rematch, h.dir
	w.taintedFiles = append([]string(nil), h.files...)
	w.taintAnywhere = h.anywhere
	w.xtrace = h.xtrace
	w.hashedAny = h.hashedAny
	w.hashed = maps.Clone(h.hashed)
}

// noteRead records a file read while it holds no credential as far as
// the walk knows (see taintWrite).
func (w *walker) noteRead(p string) {
	if len(w.fb.reads) < 4096 {
		w.fb.reads = append(w.fb.reads, p)
	} else {
		w.fb.missed = true // too many to compare: assume one of them was written later
	}
}

// wroteRead marks the walk as having missed something when a file it
// now taints was read earlier in it.
func (w *walker) wroteRead(a string) {
	for _, r := range w.fb.reads {
		if couldMatch(r, a, true, false) || couldMatch(a, r, true, false) {
			w.fb.missed = true
			return
		}
	}
}

// The variables bash sets itself from data the script handled. Each is
// tracked by one flag for the whole run, in every scope and process,
// because following them exactly (which command was last, which [[ =~ ]]
// ran last, in which subshell) is not worth the risk of getting it wrong:
//
//   - _, BASH_ARGV, BASH_ALIASES, BASH_CMDS: once any command in the run
//     is given a credential as an argument ($_ is the last argument of the
//     previous command; BASH_ARGV, under extdebug, the arguments of the
//     calls being run; BASH_ALIASES and BASH_CMDS what alias and hash -p
//     were given). BASH_ARGC holds only counts.
//   - BASH_REMATCH: once any [[ =~ ]] matches a credential, or matches
//     against a pattern that holds one.
//   - PWD, OLDPWD, DIRSTACK: once any cd, pushd or popd goes to a
//     directory named with a credential (an operand, or CDPATH, HOME or
//     OLDPWD holding one).
//   - $0 when BASH_ARGV0, which sets it, holds one.
//
// BASH_COMMAND, BASH_EXECUTION_STRING, BASH_SOURCE and FUNCNAME hold the
// text of the code, which names a credential only by reference (code that
// is itself a credential value is code the analyzer cannot see, refused
// already); the others hold numbers, names or the shell's own settings.
// REPLY (read, select), OPTARG (getopts) and MAPFILE are assigned where
// their builtins are walked.

// shellSet names the credential a variable bash sets itself carries, or
// "" (also for a variable it does not set).
func (w *walker) shellSet(name string) string {
	which := ""
	switch name {
	case "_", "BASH_ARGV", "BASH_ALIASES", "BASH_CMDS":
		which = w.argTaint
	case "BASH_REMATCH":
		which = w.rematchTaint
	case "PWD", "OLDPWD", "DIRSTACK":
		which = w.dirTaint
	default:
		return ""
	}
	if which == "" {
		w.fb.missed = true // it may be set later (a loop, a trap): see hints
		return ""
	}
	return which
}

// noteArgs records a command's arguments for $_ and the other variables
// bash fills from them.
func (w *walker) noteArgs(args []arg) {
	if w.argTaint != "" {
		return
	}
	for _, a := range args {
		if a.tainted != "" {
			w.argTaint = a.tainted
			return
		}
	}
}

// noteRematch records a [[ x =~ re ]]: BASH_REMATCH holds what matched.
func (w *walker) noteRematch(b *syntax.BinaryTest, fr *frame) {
	if b.Op != syntax.TsReMatch || w.rematchTaint != "" {
		return
	}
	for _, side := range []syntax.TestExpr{b.X, b.Y} {
		syntax.Walk(side, func(n syntax.Node) bool {
			if wd, ok := n.(*syntax.Word); ok && w.rematchTaint == "" {
				w.rematchTaint = w.taintOf(wd, fr)
				return false
			}
			return w.rematchTaint == ""
		})
	}
}

// noteDirs records a cd, pushd or popd whose destination may carry a
// credential: PWD, OLDPWD and DIRSTACK then hold it.
func (w *walker) noteDirs(rest []arg, fr frame) {
	if w.dirTaint != "" {
		return
	}
	for _, a := range rest {
		if a.tainted != "" {
			w.dirTaint = a.tainted
			return
		}
	}
	for _, n := range []string{"CDPATH", "HOME", "OLDPWD", "PWD"} {
		if v, absent := w.envValue(n, fr); !absent && (v.tainted || w.isTainted(n)) {
			w.dirTaint = n
			return
		}
	}
}

// dirPrinters print the directory or the pushd stack.
var dirPrinters = setOf("pwd", "dirs", "cd", "chdir", "pushd", "popd")

// tablePrinters print what earlier commands stored in the shell (aliases,
// hashed paths, completions, history).
var tablePrinters = setOf("alias", "hash", "type", "complete", "compgen", "history", "fc")

// shellSetOutput names the credential a builtin (or pwd) may print from
// what the shell set earlier.
func (w *walker) shellSetOutput(name string) string {
	switch {
	case dirPrinters[name]:
		return w.shellSet("PWD")
	case tablePrinters[name]:
		return w.shellSet("_")
	}
	return ""
}

// outProcs returns the positions of the >(...) substitutions in a
// statement's own words (its redirections and arguments; nested statements
// and substitutions own theirs): they read what the statement writes to
// the path each expands to.
func outProcs(st *syntax.Stmt, fr frame) []Pos {
	var out []Pos
	visit := func(n syntax.Node) {
		if n == nil {
			return
		}
		syntax.Walk(n, func(n syntax.Node) bool {
			switch n := n.(type) {
			case *syntax.ProcSubst:
				if n.Op == syntax.CmdOut {
					out = append(out, fr.pos(n))
				}
				return false
			case *syntax.CmdSubst:
				return false
			}
			return true
		})
	}
	for _, r := range st.Redirs {
		if r.Word != nil {
			visit(r.Word)
		}
	}
	switch c := st.Cmd.(type) {
	case *syntax.CallExpr:
		for _, a := range c.Args {
			visit(a)
		}
		for _, as := range c.Assigns {
			visit(as)
		}
	case *syntax.DeclClause:
		for _, as := range c.Args {
			visit(as)
		}
	}
	return out
}

// unnamedOut reports whether a statement writes to a descriptor the
// analyzer cannot tell apart from a coprocess's input: >&WORD known only
// at run time, >&N for a descriptor exec did not open on a file, or a
// /dev/fd/N or /proc/*/fd/N path.
func (w *walker) unnamedOut(st *syntax.Stmt) bool {
	for _, r := range st.Redirs {
		switch r.Op {
		case syntax.DplOut:
			s, ok := w.literal(r.Word)
			if !ok {
				return true
			}
			s = strings.TrimSuffix(s, "-")
			if s == "" || s == "1" || s == "2" || !isFD(s) {
				continue
			}
			if p, open := w.outFds[s]; !open || p == "" {
				return true
			}
		case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrAll, syntax.AppAll, syntax.RdrInOut, syntax.RdrAllClob, syntax.AppAllClob:
			s, ok := w.literal(r.Word)
			if !ok {
				return true
			}
			if fd, isFD, other := fdPath(w.abs(s)); isFD && fd > 2 || other {
				return true
			}
		}
	}
	return false
}
