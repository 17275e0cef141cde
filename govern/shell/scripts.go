package shell

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/regfile"
)

// scriptLookup is how a shell finds a script named without a slash.
type scriptLookup int

const (
	// scriptBash: `bash x` opens ./x, then searches PATH.
	scriptBash scriptLookup = iota
	// scriptSh: `sh x` (dash) opens x relative to the directory only.
	scriptSh
	// scriptSource: `source x` in bash searches PATH, then the directory;
	// `. x` in sh searches PATH only.
	scriptSource
)

func (w *walker) scriptOperand(name Word, how scriptLookup, pos Pos, fr frame, sameShell bool) {
	_ = sameShell
	w.scriptOperandDialect(name, how, fr.dialect, pos, fr)
}

// scriptOperandDialect finds, pins and walks a shell script run by a shell
// or sourced, in dialect d.
func (w *walker) scriptOperandDialect(name Word, how scriptLookup, d Dialect, pos Pos, fr frame) {
	if name.Dynamic {
		w.flag(FlagOpaque, pos, "script named at run time: %s", name.Value)
		return
	}
	p, ok := w.findScript(name.Value, how, fr)
	if ok && w.descriptorScript(p, d, pos, fr) {
		return
	}
	if !ok {
		// It may be written earlier in the same text: link it where the
		// shell would find it once it exists.
		w.noteRun(name.Value, pos, fr)
		w.flag(FlagScriptNotInspected, pos, "script %s: not found where the shell would look (or the directory is unknown)", name.Value)
		w.unseenAt(pos, "script "+name.Value+" is not where the analyzer can read it (not found, or in a directory known only at run time)")
		return
	}
	w.noteRun(p, pos, fr)
	w.inspect(p, d, pos, fr)
}

func (w *walker) findScript(name string, how scriptLookup, fr frame) (string, bool) {
	if strings.Contains(name, "/") {
		a := w.abs(name)
		return a, a != ""
	}
	inCwd := func() (string, bool) {
		if w.cwd == "" {
			return "", false
		}
		p := w.abs(name)
		if _, isFD, other := fdPath(p); isFD || other {
			return p, true // cd /dev; bash stdin
		}
		return p, isRegular(p)
	}
	switch how {
	case scriptSh:
		return inCwd()
	case scriptBash:
		if p, ok := inCwd(); ok || w.cwd == "" {
			// In a directory known only at run time, ./name may exist.
			return p, ok
		}
		return w.lookPath(name)
	default:
		if p, ok := w.lookPath(name); ok {
			return p, true
		}
		if fr.dialect == DialectBash && !w.pathUnknown() {
			// Not in a PATH that could hold it: bash falls back to ./name.
			return inCwd()
		}
		return "", false
	}
}

// descriptorScript handles a script path that names a file descriptor
// (/dev/stdin, /dev/fd/N, /proc/self/fd/N, /proc/PID/...): descriptor 0 is
// the shell's stdin, whose code is walked like bash -s; any other is
// opaque. It reports whether p was one.
func (w *walker) descriptorScript(p string, d Dialect, pos Pos, fr frame) bool {
	fd, isFD, other := fdPath(p)
	switch {
	case isFD && fd == 0:
		w.readStdin(d, shellName(d)+" "+p, pos, fr)
	case isFD:
		w.flag(FlagOpaque, pos, "script read from file descriptor %d (%s), which the analyzer does not follow", fd, p)
	case other:
		w.flag(FlagOpaque, pos, "script %s is a file of some process at run time, which the analyzer does not follow", p)
	default:
		return false
	}
	return true
}

func shellName(d Dialect) string {
	if d == DialectSh {
		return "sh"
	}
	return "bash"
}

// commandPath handles a command named by a path (./x.sh, /w/bin/tool).
func (w *walker) commandPath(name string, pos Pos, fr frame) {
	p := w.abs(name)
	if p == "" {
		w.flag(FlagScriptNotInspected, pos, "%s: relative to a directory known only at run time", name)
		w.unseenAt(pos, name+" runs from a directory known only at run time, so the analyzer cannot read it")
		return
	}
	if fd, isFD, other := fdPath(p); isFD || other {
		// Executing /dev/stdin runs the file stdin was redirected from.
		if isFD && fd == 0 && fr.in.file != "" && !fr.in.dynamic {
			w.commandPath(fr.in.file, pos, fr)
			return
		}
		w.flag(FlagOpaque, pos, "%s runs whatever file descriptor %s holds at run time", name, p)
		return
	}
	written := w.noteRun(p, pos, fr)
	w.writableExecutable(p, pos)
	if !w.underInspection(p) {
		if !isSystemPath(p) {
			w.flag(FlagScriptNotInspected, pos, "%s is outside the script-inspection roots; its contents were not read", p)
			if written || !isRegular(p) {
				// Written by this text, or not there yet: what runs is
				// whatever the command puts there.
				w.unseenAt(pos, p+" is written or created at run time outside the script-inspection roots, so the analyzer cannot read what runs")
			}
		}
		return
	}
	w.child(fr, func() { w.inspect(p, "", pos, fr) })
}

// inspectExecutable handles a bare command name PATH resolved inside an
// inspection root.
func (w *walker) inspectExecutable(p, name string, pos Pos, fr frame) {
	w.noteRun(p, pos, fr)
	w.writableExecutable(p, pos)
	w.child(fr, func() { w.inspect(p, "", pos, fr) })
}

func (w *walker) writableExecutable(p string, pos Pos) {
	real := w.realPath(p)
	for _, root := range w.in.WritableRoots {
		if within(p, root) || within(real, w.realPath(root)) {
			w.flag(FlagWritableExecutable, pos, "%s is inside the writable root %s: the command can change it before it runs", p, root)
			return
		}
	}
}

// underInspection reports whether p, after symlink resolution, is inside an
// inspection root.
func (w *walker) underInspection(p string) bool {
	real := w.realPath(p)
	for _, root := range w.in.InspectionRoots {
		if within(real, w.realPath(root)) {
			return true
		}
	}
	return false
}

// realPath resolves symlinks (cached per analysis); a name that does not
// exist keeps the resolved form of its longest existing prefix. Paths that
// depend on the process looking (/proc/self, /dev/fd) are not resolved on
// the host: the analyzer's own process is not the shell.
func (w *walker) realPath(p string) string {
	if r, ok := w.realCache[p]; ok {
		return r
	}
	r := procAlias(path.Clean(p))
	if !procDependent(r) {
		r = realPathOf(p)
	}
	w.realCache[p] = r
	return r
}

// interpreterScript pins the script file a python/perl/node/... command
// runs. Its contents are not analysed.
func (w *walker) interpreterScript(argv []Word, pos Pos, fr frame) {
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		if a.Dynamic {
			return
		}
		v := a.Value
		if v == "-" || strings.HasPrefix(v, "-") && strings.ContainsAny(strings.TrimLeft(v, "-"), "ceErmp") && !strings.HasPrefix(v, "--") {
			return // inline code, a module or stdin: no script file
		}
		if v == "--eval" || v == "--print" || v == "--" {
			return
		}
		if strings.HasPrefix(v, "-") {
			switch v {
			case "-W", "-X", "-I", "--require", "-r":
				i++
			}
			continue
		}
		p := w.abs(v)
		if p == "" {
			return
		}
		if fd, isFD, other := fdPath(p); isFD || other {
			switch {
			case isFD && fd == 0 && fr.in.file != "" && !fr.in.dynamic:
				p = w.abs(fr.in.file) // python3 /dev/stdin < x.py runs x.py
				if p == "" {
					return
				}
			case isFD && fd == 0:
				if !path.IsAbs(v) { // an absolute one is flagged with the tool's hazards
					w.flag(FlagInlineCode, pos, "%s reads its program from stdin (%s)", path.Base(argv[0].Value), v)
				}
				return
			default:
				w.flag(FlagOpaque, pos, "%s reads its program from %s, which the analyzer does not follow", path.Base(argv[0].Value), v)
				return
			}
		}
		w.noteRun(p, pos, fr)
		if !w.underInspection(p) {
			w.flag(FlagScriptNotInspected, pos, "%s is outside the script-inspection roots; its contents were not read", p)
			return
		}
		w.inspect(p, dialectNone, pos, fr)
		return
	}
}

// dialectNone marks a file run by another interpreter (python x.py): it is
// pinned but never parsed as shell, whatever its first line says.
const dialectNone Dialect = "-"

// inspect reads p under the inspection roots, pins its bytes and, when it
// is a shell script, walks it. d forces a dialect (bash x.sh); "" means the
// file is executed, and the kernel decides by its #! line (execScript);
// dialectNone means it is not shell.
func (w *walker) inspect(p string, d Dialect, pos Pos, fr frame) {
	if d != dialectNone {
		n := len(w.a.Flags)
		defer func() {
			for _, f := range w.a.Flags[n:] {
				if f.Kind == FlagScriptNotInspected && f.Pos == pos && strings.HasPrefix(f.Detail, p) {
					w.unseenAt(f.Pos, "the script "+f.Detail)
					return
				}
			}
		}()
	}
	real, body, ok := w.readScript(p, pos)
	if !ok {
		return
	}
	switch d {
	case "":
		w.execScript(hop{path: p, real: real, body: body}, pos, fr)
		return
	case dialectNone:
		d = ""
	}
	w.pin(p, real, body, d)
	if d == "" {
		w.notAnalysed(p, body, pos)
		return
	}
	w.walkScript(p, body, d, pos, fr)
}

// readScript reads p whole when it is a regular file inside an inspection
// root and within the size limit; otherwise it flags why not
// (script_not_inspected), each detail starting with p.
func (w *walker) readScript(p string, pos Pos) (real string, body []byte, ok bool) {
	if w.rerooted {
		w.flag(FlagScriptNotInspected, pos, "%s runs under another root directory; the host file of that name is not what runs", p)
		return "", nil, false
	}
	if !w.underInspection(p) {
		w.flag(FlagScriptNotInspected, pos, "%s is outside the script-inspection roots; its contents were not read", p)
		return "", nil, false
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		w.flag(FlagScriptNotInspected, pos, "%s: %v", p, err)
		return "", nil, false
	}
	// A named pipe (a run can make one in the workspace) is not opened
	// waiting for a writer, but refused as not a regular file (regfile).
	f, err := regfile.Open(real)
	if err != nil {
		w.flag(FlagScriptNotInspected, pos, "%s: %v", p, err)
		return "", nil, false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		w.flag(FlagScriptNotInspected, pos, "%s: %v", p, err)
		return "", nil, false
	}
	if st.Size() > w.in.MaxScriptBytes {
		w.flag(FlagScriptNotInspected, pos, "%s is %d bytes, over the %d-byte inspection limit", p, st.Size(), w.in.MaxScriptBytes)
		return "", nil, false
	}
	body, err = io.ReadAll(io.LimitReader(f, w.in.MaxScriptBytes+1))
	if err != nil || int64(len(body)) > w.in.MaxScriptBytes {
		w.flag(FlagScriptNotInspected, pos, "%s could not be read whole", p)
		return "", nil, false
	}
	return real, body, true
}

// pin holds p to the bytes read: the run executes exactly them. d is the
// dialect they were walked in, "" when they were not.
func (w *walker) pin(p, real string, body []byte, d Dialect) {
	if w.pinned[p] {
		return
	}
	w.pinned[p] = true
	sum := sha256.Sum256(body)
	w.a.Pins = append(w.a.Pins, govern.Pin{Path: p, RealPath: real, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(body)), Dialect: string(d), Bytes: body})
}

func (w *walker) notAnalysed(p string, body []byte, pos Pos) {
	what := "not a shell script"
	if bytes.HasPrefix(body, []byte("\x7fELF")) {
		what = "a binary"
	}
	w.flag(FlagScriptNotAnalysed, pos, "%s is pinned but %s: what it does is not analysed", p, what)
}

// walkScript parses the pinned script p in dialect d and walks it as a
// script the shell runs at pos.
func (w *walker) walkScript(p string, body []byte, d Dialect, pos Pos, fr frame) {
	if fr.depth+1 > w.in.MaxScriptDepth {
		w.flag(FlagDepthExceeded, pos, "%s nests deeper than %d levels; not analysed", p, w.in.MaxScriptDepth)
		return
	}
	if bytes.IndexByte(body, 0) >= 0 {
		w.flag(FlagOpaque, pos, "%s holds NUL bytes", p)
		return
	}
	if !w.parseBudget(len(body), true, pos, p) {
		return
	}
	file, err := parse(string(body), p, d)
	if err != nil {
		w.flag(FlagOpaque, pos, "script %s does not parse (the shell would run it up to the error): %s", p, parseDenial(err, p).Message)
		return
	}
	c := fr.with("script:" + p)
	c.src = string(body)
	c.aliasSpans = nil
	c.file = p
	c.dialect = d
	c.depth = fr.depth + 1
	w.walkStmts(file.Stmts, c)
}

// shebangDialect reads a script's #! line: bash or sh when it names one,
// "" for any other interpreter or a binary, and the calling shell's own
// dialect when there is no #! (the shell runs such a file itself).
func shebangDialect(body []byte, caller Dialect) Dialect {
	if bytes.HasPrefix(body, []byte("\x7fELF")) {
		return ""
	}
	if !bytes.HasPrefix(body, []byte("#!")) {
		if bytes.IndexByte(body, 0) >= 0 {
			return "" // binary data
		}
		return caller
	}
	line := body[2:]
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	fields := strings.Fields(string(line))
	if len(fields) == 0 {
		return caller
	}
	interp := path.Base(fields[0])
	if interp == "env" {
		prog, _, ok := envProgram(fields)
		if !ok {
			return ""
		}
		interp = path.Base(prog)
	}
	if d, ok := shells[interp]; ok {
		return d
	}
	return ""
}

// envProgram is the program a #!/usr/bin/env line runs (fields: the line's
// words): #!/usr/bin/env bash, or #!/usr/bin/env -S bash -e (the kernel
// passes "-S bash -e" as one argument; env splits it, and args are the
// program's arguments it splits off). ok is false for other env options or
// assignments, which are not modelled.
func envProgram(fields []string) (prog string, args []string, ok bool) {
	if len(fields) < 2 {
		return "", nil, false
	}
	rest, split := fields[1:], false
	if rest[0] == "-S" || rest[0] == "--split-string" {
		rest, split = rest[1:], true
	} else if strings.HasPrefix(rest[0], "-S") {
		rest, split = append([]string{rest[0][2:]}, rest[1:]...), true
	}
	if len(rest) == 0 || rest[0] == "" || strings.HasPrefix(rest[0], "-") || strings.Contains(rest[0], "=") {
		return "", nil, false
	}
	if split {
		args = rest[1:]
	}
	return rest[0], args, true
}

func isRegular(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

func expandDocument(w *walker, word *syntax.Word) (string, error) {
	if w.expanded > maxExpandBytes {
		return "", errors.New("too much expanded")
	}
	s, err := expand.Document(&expand.Config{Env: env{w}}, word)
	w.expanded += len(s)
	return s, err
}
