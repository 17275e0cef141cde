package shell

import (
	"path"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/mitrity/mitrity/govern"
)

// This file follows a credential value through what the text prints,
// writes, reads back and cannot show: command output (a capture), files,
// descriptors, and code the analyzer cannot see while a credential is in
// the environment.

// capture is what a region being walked (a command substitution, a
// pipeline stage, a statement) may print: a credential value, or the name
// of a file that holds one.
type capture struct {
	taint string // names the credential a value printed may carry
	path  string // names the credential file a path printed may name
}

// capturing walks fn and returns what it may print. What it prints also
// counts for every capture around it.
func (w *walker) capturing(fn func()) capture {
	w.pushCapture()
	fn()
	return w.popCapture()
}

// pushCapture and popCapture are capturing without a closure, for the
// walker's hot path.
func (w *walker) pushCapture() { w.captures = append(w.captures, capture{}) }

func (w *walker) popCapture() capture {
	c := w.captures[len(w.captures)-1]
	w.captures = w.captures[:len(w.captures)-1]
	return c
}

// outputs records that the command being walked may print a credential
// value (taint) or a credential file's name (credPath).
func (w *walker) outputs(taint, credPath string) {
	for _, p := range w.sinks {
		w.feed(p, taint)
	}
	for i := range w.captures {
		c := &w.captures[i]
		if c.taint == "" {
			c.taint = taint
		}
		if c.path == "" {
			c.path = credPath
		}
	}
}

// quietBuiltins print nothing of their arguments or their stdin: a
// credential handed to them does not reach their output.
var quietBuiltins = setOf("test", "[", ":", "true", "false", "read", "mapfile", "readarray", "cd", "chdir",
	"unset", "shift", "exit", "return", "getopts", "wait", "eval", "source", ".", "trap", "command",
	"builtin", "exec", "let", "set", "export", "readonly", "local", "declare", "typeset", "kill", "break",
	"continue", "enable", "shopt", "umask", "hash", "alias", "unalias", "disown", "suspend", "logout")

// silentBuiltins never print, not even an error naming an argument.
var silentBuiltins = setOf(":", "true", "false")

// commandOutput records what one simple command may print: a credential it
// is handed (argument or stdin), a file of one it reads, or the
// environment it dumps.
func (w *walker) commandOutput(args []arg, kind string, fr frame) {
	if kind == "builtin" {
		switch args[0].Value {
		case "cd", "chdir", "pushd":
			// cd into the credential directory: a relative name read
			// later, in a directory the analyzer cannot follow there, may
			// be a credential file.
			for i := range args[1:] {
				if w.credPathOf(&args[1+i], &fr) != "" {
					w.credCwd = true
				}
			}
		}
	}
	if len(w.captures) == 0 && len(w.sinks) == 0 {
		return // nothing follows this command's output
	}
	taint, credPath := w.carried(args, kind, fr)
	if taint != "" || credPath != "" {
		w.outputs(taint, credPath)
	}
}

// credPathOf is a.credPath, worked out for a static word on first use.
func (w *walker) credPathOf(a *arg, fr *frame) string {
	if !a.credKnown {
		a.credKnown = true
		if !a.Dynamic {
			a.credPath = w.argCredPath(a.Value, fr)
		}
	}
	return a.credPath
}

// readerBuiltins read the files their arguments name into what they print.
var readerBuiltins = setOf("history", "fc")

// carried names the credential a command's output may carry (taint) and
// the credential file a path it prints may name (credPath). Builtins never
// read the files their arguments name (but history and fc).
func (w *walker) carried(args []arg, kind string, fr frame) (taint, credPath string) {
	name := args[0].Value
	builtin := kind == "builtin"
	if builtin || path.Base(name) == "pwd" {
		if t := w.shellSetOutput(path.Base(name)); t != "" {
			return t, "" // what bash stored from a credential earlier
		}
	}
	if builtin && (quietBuiltins[name] || name == "printf" && len(args) > 1 && args[1].Value == "-v") {
		if !silentBuiltins[name] {
			// Their error messages repeat the word they reject (test:
			// SECRET: integer expression expected), on stderr, which 2>&1
			// or exec 2> sends on.
			for _, a := range args[1:] {
				if a.tainted != "" {
					return a.tainted, ""
				}
			}
		}
		return w.envDumpArgs(args, kind), ""
	}
	for i := range args[1:] {
		a := &args[1+i]
		if a.tainted != "" && taint == "" {
			taint = a.tainted
		}
		if credPath == "" {
			credPath = w.credPathOf(a, &fr)
		}
	}
	if taint == "" && fr.in.taint != "" {
		taint = fr.in.taint
	}
	if taint == "" && credPath != "" && (!builtin || readerBuiltins[name]) && !printsNames(args) {
		// A program handed a credential file may print what it holds.
		taint = credPath
	}
	if credPath == "" {
		credPath = fr.in.credPath // names read from stdin, printed again
	}
	if taint == "" {
		taint = w.envDumpArgs(args, kind)
	}
	return taint, credPath
}

// pathPrinters print names and metadata of the files they are given, never
// their contents.
var pathPrinters = setOf("ls", "basename", "dirname", "realpath", "readlink", "stat", "du", "file",
	"md5sum", "sha1sum", "sha224sum", "sha256sum", "sha384sum", "sha512sum", "b2sum", "cksum", "test", "[", "find", "tree")

// printsNames reports whether a command only prints the names of the files
// it is given (find only when it runs nothing on them).
func printsNames(args []arg) bool {
	base := path.Base(args[0].Value)
	if !pathPrinters[base] {
		return false
	}
	if base == "find" {
		for _, a := range args[1:] {
			switch a.Value {
			case "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls":
				return false
			}
			if a.Dynamic {
				return false
			}
		}
	}
	return true
}

// taintFileWrites marks the files an external command writes (fileWrites
// recorded them from before on) when what it carries is a credential.
func (w *walker) taintFileWrites(args []arg, before int, fr frame) {
	dyn := 0
	if dynWriters[path.Base(args[0].Value)] {
		dyn = dynWriteTarget(words(args))
	}
	if len(w.writes) == before && dyn == 0 {
		return
	}
	taint, _ := w.carried(args, "external", fr)
	if taint == "" {
		return
	}
	for _, wr := range w.writes[before:] {
		w.taintWrite(wr.path, taint, wr.pos)
	}
	if dyn > 0 {
		w.taintWrite("", taint, args[dyn].pos) // a file named at run time
	}
}

var dynWriters = setOf("tee", "cp", "mv", "install", "ln", "sed", "curl", "wget", "dd")

// dynWriteTarget returns the index of a word known only at run time that
// names a file the tools fileWrites follows write (0 when there is none).
func dynWriteTarget(argv []Word) int {
	last := len(argv) - 1
	switch path.Base(argv[0].Value) {
	case "tee":
		for i := 1; i <= last; i++ {
			if argv[i].Dynamic {
				return i
			}
		}
	case "cp", "mv", "install", "ln":
		if last > 1 && argv[last].Dynamic {
			return last
		}
	case "sed":
		inPlace := false
		for _, a := range argv[1:] {
			inPlace = inPlace || strings.HasPrefix(a.Value, "-i") || strings.HasPrefix(a.Value, "--in-place")
		}
		for i := 1; inPlace && i <= last; i++ {
			if argv[i].Dynamic {
				return i
			}
		}
	case "curl", "wget", "dd":
		for i := 1; i <= last; i++ {
			v := argv[i].Value
			switch {
			case (v == "-o" || v == "--output" || v == "-O" || v == "--output-document") && i < last && argv[i+1].Dynamic:
				return i + 1
			case argv[i].Dynamic && (strings.HasPrefix(v, "-o") || strings.HasPrefix(v, "--output") || strings.HasPrefix(v, "-O") || strings.HasPrefix(v, "of=")):
				return i
			}
		}
	}
	return 0
}

// envDumpArgs names the environment when a resolved command prints it (or
// a variable of it): env with no command, printenv, set with no
// arguments, declare/export -p, compgen, ps e, and inline programs that
// read the environment (awk ENVIRON, os.environ, process.env, %ENV...).
func (w *walker) envDumpArgs(args []arg, kind string) string {
	name := args[0].Value
	base := path.Base(name)
	rest := args[1:]
	if kind == "builtin" {
		switch name {
		case "set":
			if len(rest) == 0 {
				return "the environment (set)"
			}
		case "declare", "typeset", "export", "readonly", "local":
			if dumpsVars(words(rest)) {
				return "the environment (" + name + ")"
			}
		case "compgen":
			return "the environment (compgen)"
		}
		return ""
	}
	switch base {
	case "printenv":
		if len(rest) == 0 {
			return "the environment (printenv)"
		}
		for _, a := range rest {
			if a.Dynamic || w.isTainted(a.Value) || strings.HasPrefix(a.Value, "-") {
				return "the environment (printenv " + a.Value + ")"
			}
		}
	case "env":
		if u, ok := unwrap(words(args)); ok && u.Opaque == "" && len(u.Inners) == 0 && len(u.Code) == 0 {
			return "the environment (env)"
		}
	case "ps":
		for _, a := range rest {
			if !strings.HasPrefix(a.Value, "-") && strings.Contains(a.Value, "e") {
				return "the environment (ps " + a.Value + ")"
			}
		}
	case "envsubst":
		// Its input with $NAME and ${NAME} replaced by their values.
		return "the environment (envsubst)"
	case "jq", "gojq", "jaq", "yq":
		// env, $ENV, strenv(NAME) in the program; one known only at run
		// time may hold them.
		for _, a := range rest {
			if a.Dynamic || jqEnv(a.Value) {
				return "the environment (" + base + " env)"
			}
		}
	case "make", "gmake":
		// -p prints make's database, the environment's variables in it.
		for _, a := range rest {
			if a.Value == "--print-data-base" || len(a.Value) > 1 && a.Value[0] == '-' && a.Value[1] != '-' && strings.Contains(a.Value, "p") {
				return "the environment (" + base + " " + a.Value + ")"
			}
		}
	case "php", "php-cgi":
		for _, a := range rest {
			if a.Value == "-i" || a.Value == "--info" {
				return "the environment (" + base + " " + a.Value + ")"
			}
		}
	}
	for _, a := range rest {
		if envReader(a.Value) {
			return "the environment (" + base + " reads it)"
		}
	}
	return ""
}

// jqEnv reports whether a jq (or yq) program reads the environment: $ENV,
// strenv(NAME), or the word env (env.T, env | .T, env(T)).
func jqEnv(s string) bool {
	if strings.Contains(s, "$ENV") || strings.Contains(s, "strenv(") {
		return true
	}
	ident := func(i int) bool {
		if i < 0 || i >= len(s) {
			return false
		}
		c := s[i]
		return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	for i := strings.Index(s, "env"); i >= 0; {
		if !ident(i-1) && !ident(i+3) {
			return true
		}
		j := strings.Index(s[i+1:], "env")
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return false
}

// envReader reports whether program text reads the environment.
func envReader(s string) bool {
	for _, k := range []string{"environ", "ENVIRON", "getenv", "process.env", "ENV[", "ENV{", "%ENV", "$ENV", "ENV.fetch", "_ENV", "Deno.env"} {
		if strings.Contains(s, k) {
			return true
		}
	}
	return false
}

// dumpsVars reports whether declare-like arguments print variables: no
// arguments, or only options (declare -p, export -p, declare -x).
func dumpsVars(args []Word) bool {
	for _, a := range args {
		if a.Dynamic {
			return true
		}
		if !strings.HasPrefix(a.Value, "-") && !strings.HasPrefix(a.Value, "+") {
			return false
		}
		if strings.Contains(a.Value, "p") {
			return true
		}
	}
	return true
}

// declDump names the environment when a declare/export/typeset/readonly/
// local clause prints variables rather than setting them.
func (w *walker) declDump(dc *syntax.DeclClause) string {
	print := true
	for _, as := range dc.Args {
		switch {
		case as.Name == nil && as.Value != nil:
			s, ok := plainLit(as.Value)
			if !ok {
				return "the environment (" + dc.Variant.Value + ")"
			}
			if strings.HasPrefix(s, "-") && strings.Contains(s, "p") {
				return "the environment (" + dc.Variant.Value + " " + s + ")"
			}
			if !strings.HasPrefix(s, "-") && !strings.HasPrefix(s, "+") {
				print = false
			}
		case as.Name != nil:
			print = false
		}
	}
	if print {
		return "the environment (" + dc.Variant.Value + ")"
	}
	return ""
}

// taintWrite records that a file now holds a credential value; p is a
// path as written ("" when it is known only at run time).
func (w *walker) taintWrite(p, taint string, pos Pos) {
	if taint == "" {
		return
	}
	a := w.abs(p)
	if p == "" || a == "" {
		if w.taintAnywhere == "" {
			w.fb.missed = true // a read walked before may name it
			w.taintAnywhere = "a file a credential was written to at " + pos.String()
		}
		w.unseenAt(pos, "a credential is written to a file named only at run time, which the analyzer cannot follow to where it is read")
		return
	}
	if procComm(a) {
		w.deny(govern.ReasonCredentialInArgv, pos, "the credential "+refOf(taint)+" would be written to "+p+" at "+pos.String()+
			": that is a process's name (comm), which every process on the host reads in /proc and ps, as it reads a command line. "+sanctionedForms)
		return
	}
	for _, f := range w.taintedFiles {
		if f == a {
			return
		}
	}
	// A background job, a pipeline stage or a named pipe's reader may
	// read it after this, though walked before (feedback.go).
	w.wroteRead(a)
	w.taintedFiles = append(w.taintedFiles, a)
}

// procComm reports whether the absolute path a (a glob too) may be a
// process's or a thread's name: /proc/PID/comm, /proc/PID/task/TID/comm,
// through /proc/PID/root/ as well.
func procComm(a string) bool {
	c := strings.Split(strings.TrimPrefix(path.Clean(a), "/"), "/")
	for len(c) > 3 && c[0] == "proc" && c[2] == "root" {
		c = c[3:]
	}
	switch {
	case len(c) == 3:
		return c[0] == "proc" && couldMatch(c[2], "comm", false, false)
	case len(c) == 5:
		return c[0] == "proc" && couldMatch(c[2], "task", false, false) && couldMatch(c[4], "comm", false, false)
	}
	return false
}

func (w *walker) underWritable(p string) bool {
	for _, root := range w.in.WritableRoots {
		if within(p, root) {
			return true
		}
	}
	return false
}

// credDirs are the directories credential files live in at run time:
// govern.CredentialDir, and Input.CredentialDir when it names another.
func (w *walker) credDirs() []string {
	if w.credDirList == nil {
		w.credDirList = []string{govern.CredentialDir}
		if d := path.Clean(w.in.CredentialDir); w.in.CredentialDir != "" && d != govern.CredentialDir {
			w.credDirList = append(w.credDirList, d)
		}
	}
	return w.credDirList
}

// pathTaint names the credential a file read through p would carry: a
// file in the credential directory (or that directory, or its parents
// below /, read recursively), a file the text wrote a credential to, a
// descriptor opened on one, or a process's environ. p may be a glob
// pattern; "" means it is none of these.
func (w *walker) pathTaint(p string, fr *frame) string {
	if p == "" {
		return ""
	}
	cands := make([]string, 0, 2)
	if a := w.abs(p); a != "" {
		cands = append(cands, a)
	}
	if path.IsAbs(p) {
		cands = append(cands, path.Clean(p))
	} else if w.cwd != "" {
		cands = append(cands, path.Clean(w.cwd+"/"+p))
	}
	for _, c := range cands {
		if t := w.absPathTaint(c, fr); t != "" {
			return t
		}
		if w.underWritable(c) {
			// A symlink an earlier run left in the workspace.
			if r := w.realPath(c); r != c {
				if t := w.absPathTaint(r, fr); t != "" {
					return t
				}
			}
		}
	}
	if len(cands) > 0 && w.taintAnywhere != "" && strings.Contains(p, "/") {
		return w.taintAnywhere
	}
	if len(cands) == 0 && !path.IsAbs(p) && w.credCwd {
		return "a credential file (" + p + ", after a cd into the credential directory)"
	}
	if len(cands) == 0 && !path.IsAbs(p) && strings.ContainsAny(p, "/.") && (w.taintAnywhere != "" || len(w.taintedFiles) > 0) {
		// A file name, relative to a directory known only at run time.
		return "a file a credential was written to (" + p + ", in a directory known only at run time)"
	}
	return ""
}

func (w *walker) absPathTaint(c string, fr *frame) string {
	c = stripProcRoot(procAlias(c))
	if fd, isFD, _ := fdPath(c); isFD {
		if fd > 2 {
			return w.fdTaint(strconv.Itoa(fd), fr)
		}
		return ""
	}
	if rest, ok := strings.CutPrefix(c, "/proc/"); ok {
		if _, tail, _ := strings.Cut(rest, "/"); tail == "environ" || couldMatch(c, "/proc/self/environ", false, false) {
			return "the environment (" + c + ")"
		}
	}
	for _, d := range w.credDirs() {
		if couldMatch(c, d, true, true) {
			return "a credential file (" + c + ")"
		}
	}
	for _, f := range w.taintedFiles {
		if couldMatch(c, f, true, false) {
			return "a file a credential was written to (" + f + ")"
		}
	}
	w.noteRead(c)
	return ""
}

// stripProcRoot turns /proc/self/root/x, /proc/thread-self/root/x and
// /proc/PID/root/x into /x: the same file, through the process's root.
func stripProcRoot(p string) string {
	for {
		rest, ok := strings.CutPrefix(p, "/proc/")
		if !ok {
			return p
		}
		pid, tail, _ := strings.Cut(rest, "/")
		if pid != "self" && pid != "thread-self" && pid != "*" {
			if _, err := strconv.Atoi(pid); err != nil {
				return p
			}
		}
		if tail != "root" && !strings.HasPrefix(tail, "root/") {
			return p
		}
		p = path.Clean("/" + strings.TrimPrefix(tail, "root"))
	}
}

// couldMatch reports whether pattern (an absolute path, maybe with glob
// characters) names target, something below it (below), or one of its
// parents other than / (above).
func couldMatch(pattern, target string, below, above bool) bool {
	if !strings.ContainsAny(pattern, "*?[") {
		pattern, target = path.Clean(pattern), path.Clean(target)
		switch {
		case pattern == target:
			return true
		case strings.HasPrefix(pattern, target+"/"):
			return below
		default:
			return above && pattern != "/" && strings.HasPrefix(target, pattern+"/")
		}
	}
	pc, tc := comps(pattern), comps(target)
	for i := 0; i < len(pc) && i < len(tc); i++ {
		if pc[i] == "**" {
			return true // globstar: any depth
		}
		if ok, err := path.Match(pc[i], tc[i]); !ok && err == nil {
			return false
		}
	}
	switch {
	case len(pc) == len(tc):
		return true
	case len(pc) > len(tc):
		return below
	default:
		return above && len(pc) > 0
	}
}

func comps(p string) []string {
	p = strings.Trim(path.Clean(p), "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// argCredPath names the credential file a static argument may name: the
// word itself, or what follows an @ (curl -d @file), the first =
// (--file=x, if=x) or file://.
func (w *walker) argCredPath(v string, fr *frame) string {
	if v == "" || !strings.Contains(v, "/") && w.cwd == "" && !w.credCwd || strings.HasPrefix(v, "-") && !strings.Contains(v, "=") {
		return ""
	}
	try := func(p string) string {
		if p == "" || p == "-" {
			return ""
		}
		return w.pathTaint(p, fr)
	}
	if t := try(v); t != "" {
		return t
	}
	if s, ok := strings.CutPrefix(v, "@"); ok {
		if t := try(s); t != "" {
			return t
		}
	}
	if _, s, ok := strings.Cut(v, "="); ok {
		if t := try(strings.TrimPrefix(s, "@")); t != "" {
			return t
		}
	}
	if s, ok := strings.CutPrefix(v, "file://"); ok {
		return try(s)
	}
	return ""
}

// wordCredPath names the credential file a word known only at run time may
// name: it refers to $MITRITY_CRED_DIR, to a variable holding such a path,
// or to the output of a command that printed one.
func (w *walker) wordCredPath(word *syntax.Word) string {
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
			if n.Param == nil {
				return true
			}
			if n.Param.Value == CredentialDirVar {
				found = "a credential file ($" + CredentialDirVar + ")"
			} else if v, ok := w.vars.get(n.Param.Value); ok && v.credPath != "" {
				found = v.credPath
			}
		case *syntax.CmdSubst:
			if c, ok := w.substOut[n]; ok && c.path != "" {
				found = c.path
			}
			return false
		case *syntax.ProcSubst:
			// A walked one is what it printed; looking inside again at
			// every level of <(<(...)) would cost the square of the depth.
			if c, ok := w.substOut[n]; ok {
				found = c.path
				if found == "" {
					found = c.taint
				}
				return false
			}
		}
		return found == ""
	})
	return found
}

// dynCredPath is wordCredPath for an argument known only at run time: it
// may also name the file a credential was written to at a path named at
// run time.
func (w *walker) dynCredPath(word *syntax.Word) string {
	if t := w.wordCredPath(word); t != "" {
		return t
	}
	return w.taintAnywhere
}

// readTaint names the credential a file read through word (a redirection
// target, an argument file) would carry.
func (w *walker) readTaint(word *syntax.Word, fr *frame) string {
	if word == nil {
		return ""
	}
	if s, ok := w.literal(word); ok {
		return w.pathTaint(s, fr)
	}
	if t := w.wordCredPath(word); t != "" {
		return t
	}
	// A name known only at run time may be /dev/fd/N of any descriptor
	// (< /dev/fd/${COPROC[0]}).
	if t := w.anyFdTaint(fr); t != "" {
		return t
	}
	return w.taintAnywhere
}

// anyFdTaint names the credential some open descriptor carries, or "".
func (w *walker) anyFdTaint(fr *frame) string {
	for _, m := range []map[string]string{fr.fds, w.fds} {
		for _, t := range m {
			if t != "" {
				return t
			}
		}
	}
	return ""
}

// fdTaint names the credential a read from descriptor fd carries.
func (w *walker) fdTaint(fd string, fr *frame) string {
	for _, m := range []map[string]string{fr.fds, w.fds} {
		if t := m[fd]; t != "" {
			return t
		}
		if t := m["*"]; t != "" {
			return t
		}
	}
	return ""
}

// openFD records that the statement opens descriptor n on a source
// carrying taint (3< file, 3<<< "$T", {fd}< file, 4<&3).
func (fr *frame) openFD(n, taint string) {
	if taint == "" {
		return
	}
	if !isFD(n) || strings.HasSuffix(n, "-") {
		n = "*" // {var}<file: a descriptor chosen at run time
	}
	m := make(map[string]string, len(fr.fds)+1)
	for k, v := range fr.fds {
		m[k] = v
	}
	m[n] = taint
	fr.fds = m
}

// unseenAt records the first part of the text the analyzer cannot see
// through: what decides a run that carries a credential (finish).
func (w *walker) unseenAt(pos Pos, detail string) {
	if w.unseen == nil {
		w.unseen = &Flag{Kind: FlagOpaque, Pos: pos, Detail: detail}
	}
}

// sanctionedForms is the sentence every credential denial ends with.
const sanctionedForms = "Pass it without an argument instead: leave it in the environment for tools that read it there " +
	"(gh, aws, PGPASSWORD), assign it for one command (NAME=\"$VAR\" cmd), feed it through a redirection, " +
	"here-string or here-document (cmd --header @- <<< \"Authorization: Bearer $VAR\"), " +
	"use a credential file under $MITRITY_CRED_DIR, " +
	"or use it only in shell builtins such as printf or echo."

// checkUnseen denies (or, when the profile allows it, flags) a run that
// carries a credential and runs something the analyzer could not see.
func (w *walker) checkUnseen() {
	if !w.carries || w.unseen == nil {
		return
	}
	u := w.unseen
	if w.in.AllowOpaqueWithCredentials {
		w.flag(FlagOpaqueWithCredentials, u.Pos, "the run carries a credential and %s; allowed because the profile sets opaque_with_credentials: allow", u.Detail)
		return
	}
	w.flag(FlagOpaqueWithCredentials, u.Pos, "the run carries a credential and %s; denied (credential_in_argv)", u.Detail)
	w.deny(govern.ReasonCredentialInArgv, u.Pos, "this run carries a credential, and the analyzer cannot see what part of it will run: "+
		u.Detail+" (at "+u.Pos.String()+"). Code known only at run time could put the credential on a command line, "+
		"where every process of the same user can read it, so it is refused. Write that code out in the command, "+
		"or in a script inside the script-inspection roots, so it can be checked. "+sanctionedForms+
		" A profile may allow such code with opaque_with_credentials: allow.")
}

// openDescriptor records what a redirection of a descriptor other than
// stdin reads (3< file, 3<<< "$T", 4<&3), for reads through it.
func (w *walker) openDescriptor(r *syntax.Redirect, fr *frame) {
	n := r.N.Value
	switch r.Op {
	case syntax.RdrIn, syntax.RdrInOut:
		t := w.readTaint(r.Word, fr)
		if t == "" {
			t = w.stmtsReferenceWord(r.Word)
		}
		fr.openFD(n, t)
	case syntax.Hdoc, syntax.DashHdoc:
		fr.openFD(n, w.taintOf(r.Hdoc, fr))
	case syntax.WordHdoc:
		fr.openFD(n, w.taintOf(r.Word, fr))
	case syntax.DplIn:
		if s, ok := w.literal(r.Word); ok {
			fr.openFD(n, w.fdTaint(strings.TrimSuffix(s, "-"), fr))
		} else {
			fr.openFD(n, w.fdTaint("*", fr))
		}
	}
}

// bareExec reports whether a statement is exec with redirections only,
// which opens its descriptors for the rest of the text.
func bareExec(st *syntax.Stmt) bool {
	ce, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || len(ce.Args) != 1 {
		return false
	}
	s, ok := plainLit(ce.Args[0])
	return ok && s == "exec"
}

// execDescriptors keeps the descriptors a bare exec opened.
func (w *walker) execDescriptors(st *syntax.Stmt, fr frame) {
	if len(fr.fds) > 0 {
		m := make(map[string]string, len(w.fds)+len(fr.fds))
		for k, v := range w.fds {
			m[k] = v
		}
		for k, v := range fr.fds {
			m[k] = v
		}
		w.fds = m
	}
	for _, r := range st.Redirs {
		if r.N == nil {
			continue
		}
		switch r.Op {
		case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob, syntax.RdrInOut:
		default:
			continue
		}
		m := make(map[string]string, len(w.outFds)+1)
		for k, v := range w.outFds {
			m[k] = v
		}
		p := ""
		if s, ok := w.literal(r.Word); ok {
			p = s
		}
		m[r.N.Value] = p
		w.outFds = m
	}
}
