package shell

import (
	"bytes"
	"path"
	"strings"
)

// maxShebangChain is how many #! files Linux follows in one execve: the
// file executed and up to four interpreters that are scripts themselves
// (fs/exec.c, exec_binprm); one more fails with ELOOP.
const maxShebangChain = 5

// hop is one file of a #! chain, as read for its pin.
type hop struct {
	path, real string
	body       []byte
}

// execScript handles a file inside the inspection roots that is executed
// (./x.sh, a PATH name): what runs is what the kernel makes of it. Every
// file of its #! chain inside the roots is pinned (an interpreter that is a
// script is judged bytes too, so swapping it after the decision changes
// nothing), and the one that is shell code is walked.
func (w *walker) execScript(first hop, pos Pos, fr frame) {
	hops, run, d, pre := w.execChain(first, fr.dialect, pos, fr, map[string]bool{})
	for i, h := range hops {
		switch {
		case i == run && len(pre) > 0:
			// Pinned below: in d if the shell runs it as its script.
		case i == run:
			w.pin(h.path, h.real, h.body, d)
		default:
			w.pin(h.path, h.real, h.body, "")
		}
	}
	switch {
	case run < 0 && len(hops) == 1:
		w.notAnalysed(first.path, first.body, pos)
	case run != 0:
		w.flag(FlagScriptNotAnalysed, pos, "%s is pinned but run by its #! interpreter %s: its own text is not analysed", first.path, hops[1].path)
	}
	switch {
	case run >= 0 && len(pre) > 0:
		// #!/bin/bash ARG: the shell is started as `bash ARG file`, and
		// ARG may be an option or the script it runs instead.
		var args []arg
		for _, v := range append(pre, hops[run].path) {
			args = append(args, arg{Word: Word{Value: v}})
		}
		w.shell(args, d, &Command{Pos: pos, Argv: words(args)}, fr)
		if h := hops[run]; !w.pinned[h.path] {
			w.pin(h.path, h.real, h.body, "")
			w.flag(FlagScriptNotAnalysed, pos, "%s is pinned but its #! line starts %s, which runs other code: its own text is not analysed", h.path, strings.Join(pre, " "))
		}
	case run >= 0:
		w.walkScript(hops[run].path, hops[run].body, d, pos, fr)
	}
}

// execChain follows what the kernel runs for an execve of first. While a
// file begins with #!, the kernel runs its interpreter with the file's path
// as an argument (argv: interpreter, the #! line's argument if any, the
// path, the original arguments); an interpreter inside the inspection roots
// is read in turn, and may itself be a #! script. It returns the files read
// (hops[0] is first) and which of them runs as shell code: hops[run] in
// dialect d, run -1 when none does. caller is the shell that runs first
// itself when the kernel cannot (ENOEXEC: bash and dash do; execvp runs it
// with /bin/sh). pre is the argv before hops[run]'s path when a shell
// named on its own #! line is started with arguments (#!/bin/sh -e). What
// it cannot follow is flagged.
func (w *walker) execChain(first hop, caller Dialect, pos Pos, fr frame, seen map[string]bool) (hops []hop, run int, d Dialect, pre []string) {
	runs := func(i int, d Dialect) ([]hop, int, Dialect, []string) {
		if d == "" {
			return hops, -1, "", nil
		}
		return hops, i, d, nil
	}
	// ENOEXEC: the kernel cannot run the chain, so the shell that asked
	// runs the first file itself, whatever its #! line says.
	noExec := func() ([]hop, int, Dialect, []string) { return runs(0, caller) }
	hops = []hop{first}
	seen[first.path] = true
	for level := 1; ; level++ {
		cur := hops[len(hops)-1]
		if !bytes.HasPrefix(cur.body, []byte("#!")) {
			switch {
			case level == 1:
				return runs(0, shebangDialect(cur.body, caller))
			case bytes.HasPrefix(cur.body, []byte("\x7fELF")):
				// A binary interpreter runs the file before it; one named
				// as a shell is taken to be that shell.
				w.notAnalysed(cur.path, cur.body, pos)
				return runs(len(hops)-2, shells[path.Base(cur.path)])
			default:
				return noExec()
			}
		}
		if level > maxShebangChain {
			w.flag(FlagDepthExceeded, pos, "%s: its chain of #! interpreters is longer than the %d scripts the kernel follows (the run fails with ELOOP); not analysed", first.path, maxShebangChain)
			return runs(-1, "")
		}
		interp, arg, ok := kernelShebang(cur.body)
		if !ok {
			return noExec()
		}
		// A relative interpreter is opened from the process's directory,
		// not the script's.
		q := w.abs(interp)
		if q == "" {
			w.flag(FlagScriptNotInspected, pos, "the #! interpreter %s of %s is relative to a directory known only at run time; it was not read", interp, cur.path)
			w.unseenAt(pos, "the #! interpreter "+interp+" of "+cur.path+" is in a directory known only at run time, so the analyzer cannot read it")
			return runs(-1, "")
		}
		if _, isFD, other := fdPath(q); isFD || other {
			w.flag(FlagOpaque, pos, "the #! interpreter of %s is %s, a file descriptor's file at run time, which the analyzer does not follow", cur.path, interp)
			return runs(-1, "")
		}
		written := w.noteRun(q, pos, fr)
		if w.underInspection(q) {
			w.writableExecutable(q, pos)
			next, ok := w.readInterpreter(q, cur.path, pos)
			if !ok {
				return runs(-1, "")
			}
			hops = append(hops, next)
			seen[q] = true
			continue
		}
		w.interpreterOutside(q, cur.path, written, pos)
		if path.Base(interp) == "env" {
			// env runs its program with execvp: through PATH, and with
			// /bin/sh when the kernel cannot run it. A program inside the
			// roots is a new execve, followed the same way.
			prog, args, ok := envProgram(strings.Fields(string(firstLine(cur.body)[2:])))
			if ok {
				if sub, r, sd, spre, found := w.envChain(prog, cur.path, pos, fr, seen); found {
					if r >= 0 {
						r += len(hops)
					}
					hops = append(hops, sub...)
					return hops, r, sd, spre
				}
			}
			hops, run, d, _ = runs(len(hops)-1, shebangDialect(cur.body, caller))
			if run >= 0 && len(args) > 0 {
				pre = append([]string{prog}, args...) // env -S 'bash ARG...'
			}
			return hops, run, d, pre
		}
		hops, run, d, _ = runs(len(hops)-1, shebangDialect(cur.body, caller))
		if run >= 0 && arg != "" {
			pre = []string{interp, arg}
		}
		return hops, run, d, pre
	}
}

// envChain follows the program prog that a #!/usr/bin/env line of script
// runs, when it is a file inside the inspection roots (found reports
// whether it is, or was flagged as unknown).
func (w *walker) envChain(prog, script string, pos Pos, fr frame, seen map[string]bool) (hops []hop, run int, d Dialect, pre []string, found bool) {
	var q string
	if strings.Contains(prog, "/") {
		if q = w.abs(prog); q == "" {
			w.flag(FlagScriptNotInspected, pos, "the program %s that the #! line of %s runs through env is relative to a directory known only at run time; it was not read", prog, script)
			w.unseenAt(pos, "the #! line of "+script+" runs "+prog+" from a directory known only at run time, so the analyzer cannot read it")
			return nil, -1, "", nil, true
		}
	} else {
		p, ok := w.lookPath(prog)
		if !ok {
			return nil, -1, "", nil, false
		}
		q = p
	}
	written := w.noteRun(q, pos, fr)
	if !w.underInspection(q) {
		if strings.Contains(prog, "/") {
			w.interpreterOutside(q, script, written, pos)
		}
		return nil, -1, "", nil, false
	}
	w.writableExecutable(q, pos)
	if seen[q] {
		w.flag(FlagDepthExceeded, pos, "the #! line of %s runs %s again through env, which never ends; not analysed", script, q)
		return nil, -1, "", nil, true
	}
	next, ok := w.readInterpreter(q, script, pos)
	if !ok {
		return nil, -1, "", nil, true
	}
	hops, run, d, pre = w.execChain(next, DialectSh, pos, fr, seen)
	return hops, run, d, pre, true
}

// readInterpreter reads q, the #! interpreter of script, inside the roots;
// one it cannot read is what the analyzer cannot see through, like a
// script it cannot read.
func (w *walker) readInterpreter(q, script string, pos Pos) (hop, bool) {
	real, body, ok := w.readScript(q, pos)
	if !ok {
		w.unseenAt(pos, "the #! interpreter "+q+" of "+script+" could not be read")
		return hop{}, false
	}
	return hop{path: q, real: real, body: body}, true
}

// interpreterOutside flags a #! interpreter outside the inspection roots
// as commandPath flags a program named there: not read, and unseen when
// the text writes it or it is not there yet.
func (w *walker) interpreterOutside(q, script string, written bool, pos Pos) {
	if isSystemPath(q) || isSystemPath(w.realPath(q)) {
		return
	}
	w.flag(FlagScriptNotInspected, pos, "the #! interpreter %s of %s is outside the script-inspection roots; its contents were not read", q, script)
	if written || !isRegular(q) {
		w.unseenAt(pos, "the #! interpreter "+q+" of "+script+" is written or created at run time outside the script-inspection roots, so the analyzer cannot read what runs")
	}
}

// kernelShebang returns the interpreter of a #! line as Linux reads it
// (fs/binfmt_script.c): from the first 256 bytes, after spaces and tabs,
// up to the next space, tab or NUL; the rest of the line, trimmed, is one
// optional argument. ok is false when the kernel refuses the file with
// ENOEXEC: no interpreter, or one cut off at 256 bytes.
func kernelShebang(body []byte) (interp, arg string, ok bool) {
	const bufSize = 256
	buf := make([]byte, bufSize) // NUL-padded, like the kernel's
	copy(buf, body)
	spaceTab := func(r rune) bool { return r == ' ' || r == '\t' }
	var line []byte
	if i := bytes.IndexByte(buf, '\n'); i >= 0 {
		line = buf[2:i]
	} else {
		line = buf[2 : bufSize-1]
		start := bytes.IndexFunc(line, func(r rune) bool { return !spaceTab(r) })
		if start < 0 || bytes.IndexFunc(line[start:], func(r rune) bool { return spaceTab(r) || r == 0 }) < 0 {
			return "", "", false
		}
	}
	line = bytes.TrimRightFunc(bytes.TrimLeftFunc(line, spaceTab), spaceTab)
	end := bytes.IndexFunc(line, func(r rune) bool { return spaceTab(r) || r == 0 })
	if end < 0 {
		end = len(line)
	}
	if end == 0 {
		return "", "", false
	}
	interp = string(line[:end])
	if end < len(line) && line[end] != 0 {
		rest := bytes.TrimLeftFunc(line[end:], spaceTab)
		if i := bytes.IndexByte(rest, 0); i >= 0 {
			rest = rest[:i]
		}
		arg = string(rest)
	}
	return interp, arg, true
}

func firstLine(body []byte) []byte {
	if i := bytes.IndexByte(body, '\n'); i >= 0 {
		return body[:i]
	}
	return body
}
