package shell

import (
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
)

// The directory model: where the shell is, and where cd, pushd and popd
// take it, the way bash 5.2 and dash 0.5.12 (Debian 12) decide it, with the
// tree as it is at analysis time. Whenever the model cannot tell, the
// directory is unknown ("") and relative names resolve to nothing; it never
// picks one of several possible directories.

// tri is what the analyzer knows of a shell option: off, on, or either.
type tri uint8

const (
	off tri = iota
	on
	maybe
)

// set returns the option after code sets it to v; in conditional code the
// old value may remain.
func (t tri) set(v tri, cond bool) tri {
	if cond && t != v {
		return maybe
	}
	return v
}

// shellOpts are the options that change where cd goes or which process a
// pipeline stage runs in. Posix mode is not here: it is the variable
// POSIXLY_CORRECT (set -o posix assigns it, set +o posix unsets it).
type shellOpts struct {
	physical   tri // set -P / set -o physical: cd resolves symlinks first
	privileged tri // set -p: cd ignores CDPATH
	monitor    tri // set -m: job control, which turns lastpipe off
	lastpipe   tri // shopt -s lastpipe: a pipeline's last stage runs in this shell
	// expandAliases: shopt -s expand_aliases (bash; see alias.go).
	expandAliases tri
}

// dirStack is bash's pushd stack below the current directory; an entry is
// "" when unknown.
type dirStack struct {
	entries []string
	unknown bool // its size is unknown
}

func (s dirStack) clone() dirStack {
	s.entries = append([]string(nil), s.entries...)
	return s
}

// dirResult is the outcome of one chdir attempt.
type dirResult int

const (
	dirFound   dirResult = iota // the directory exists: the shell goes there
	dirMissing                  // it does not exist now: the shell tries the next candidate
	dirUnknown                  // the model cannot tell
)

// cdMode is one combination of the options a cd depends on.
type cdMode struct {
	physical, posix, privileged bool
}

// envValue returns what name holds for the current command: its own prefix
// assignment (CDPATH=x cd sub) or the shell's variable. absent is true when
// the variable does not exist.
func (w *walker) envValue(name string, fr frame) (v *value, absent bool) {
	for i := len(fr.prefix) - 1; i >= 0; i-- {
		as := fr.prefix[i]
		if as.Name != nil && as.Name.Value == name {
			return w.assignValue(as, fr, false), false
		}
	}
	v, ok := w.vars.get(name)
	if !ok || v.unset {
		return nil, true
	}
	return v, false
}

// posixMode says whether bash runs in POSIX mode for the current command:
// whenever POSIXLY_CORRECT exists.
func (w *walker) posixMode(fr frame) tri {
	v, absent := w.envValue("POSIXLY_CORRECT", fr)
	switch {
	case absent:
		return off
	case v.known || v.isList:
		return on
	}
	return maybe
}

// cdBuiltin handles cd, chdir, pushd and popd.
func (w *walker) cdBuiltin(name string, rest []arg, fr frame) {
	old := w.cwd
	for _, a := range rest {
		if a.Dynamic {
			w.moveTo("", old, fr)
			if name == "pushd" || name == "popd" {
				w.dirs = dirStack{unknown: true}
			}
			return
		}
	}
	switch name {
	case "pushd":
		w.pushd(rest, fr)
		return
	case "popd":
		w.popd(rest, fr)
		return
	}
	physical, ops, ok := cdOptions(rest, fr.dialect)
	if !ok || fr.dialect == DialectBash && len(ops) > 1 {
		w.moveTo("", old, fr)
		return
	}
	var dir string
	useCdpath := true
	switch {
	case len(ops) == 0 || ops[0] == "-":
		// cd: $HOME; cd -: $OLDPWD. bash searches CDPATH for neither and
		// stays when the variable is unset or empty; dash treats both as
		// an operand ("" meaning ".").
		vname := "HOME"
		if len(ops) > 0 {
			vname = "OLDPWD"
		}
		v, absent := w.envValue(vname, fr)
		switch {
		case !absent && (!v.known || v.isList):
			w.moveTo("", old, fr)
			return
		case !absent:
			dir = v.str
		}
		if fr.dialect == DialectBash {
			if dir == "" {
				return
			}
			useCdpath = false
		}
	default:
		dir = ops[0]
	}
	w.moveTo(w.cdTarget(dir, useCdpath, physical, fr), old, fr)
}

// cdOptions parses cd's options (-L, -P and bash's -e); physical is nil
// when neither -L nor -P is given. ok is false for an option the model
// does not know.
func cdOptions(rest []arg, d Dialect) (physical *bool, ops []string, ok bool) {
	letters := "LP"
	if d == DialectBash {
		letters = "LPe"
	}
	i := 0
	for ; i < len(rest); i++ {
		v := rest[i].Value
		if v == "--" {
			i++
			break
		}
		if len(v) < 2 || v[0] != '-' {
			break
		}
		for _, c := range v[1:] {
			if !strings.ContainsRune(letters, c) {
				return nil, nil, false
			}
			switch c {
			case 'L':
				p := false
				physical = &p
			case 'P':
				p := true
				physical = &p
			}
		}
	}
	for ; i < len(rest); i++ {
		ops = append(ops, rest[i].Value)
	}
	return physical, ops, true
}

// cdTarget is where cd DIR goes: every combination of the options the
// analyzer is unsure of must agree, or the result is unknown.
func (w *walker) cdTarget(dir string, useCdpath bool, physical *bool, fr frame) string {
	if fr.dialect == DialectSh {
		cdpath, absent := w.envValue("CDPATH", fr)
		return w.cdDash(dir, cdpath, absent, physical != nil && *physical)
	}
	phys := w.opts.physical
	if physical != nil {
		phys = off
		if *physical {
			phys = on
		}
	}
	cdpath, absent := w.envValue("CDPATH", fr)
	result, first := "", true
	for _, m := range modes(phys, w.posixMode(fr), w.opts.privileged) {
		r := w.cdBash(dir, useCdpath, cdpath, absent, m)
		if r == "" || !first && r != result {
			return ""
		}
		result, first = r, false
	}
	return result
}

// modes lists the option combinations consistent with what is known.
func modes(physical, posix, privileged tri) []cdMode {
	vals := func(t tri) []bool {
		switch t {
		case on:
			return []bool{true}
		case maybe:
			return []bool{false, true}
		}
		return []bool{false}
	}
	var out []cdMode
	for _, p := range vals(physical) {
		for _, x := range vals(posix) {
			for _, r := range vals(privileged) {
				out = append(out, cdMode{physical: p, posix: x, privileged: r})
			}
		}
	}
	return out
}

// dotRelative reports whether a cd operand skips the CDPATH search: ".",
// "..", or a path starting with "./" or "../".
func dotRelative(dir string) bool {
	return dir == "." || dir == ".." || strings.HasPrefix(dir, "./") || strings.HasPrefix(dir, "../")
}

// cdBash follows bash's cd_builtin: a relative operand is looked up in each
// CDPATH entry (an empty entry is the current directory), then relative to
// the current directory.
func (w *walker) cdBash(dir string, useCdpath bool, cdpath *value, absent bool, m cdMode) string {
	if useCdpath && !m.privileged && !path.IsAbs(dir) && !dotRelative(dir) && !absent {
		if !cdpath.known || cdpath.isList {
			return ""
		}
		if cdpath.str != "" {
			for _, e := range strings.Split(cdpath.str, ":") {
				cand := e + "/" + dir
				if e == "" {
					if w.cwd == "" {
						return ""
					}
					cand = w.cwd + "/" + dir
				}
				switch r, st := w.changeDirBash(cand, m); st {
				case dirFound:
					return r
				case dirUnknown:
					return ""
				}
			}
		}
	}
	if r, st := w.changeDirBash(dir, m); st == dirFound {
		return r
	}
	// Not there now: the command may create it, or cd fails and the shell
	// stays; either way the model cannot tell.
	return ""
}

// changeDirBash is bash's change_to_directory. Logical mode goes to the
// textually canonical path when every directory before a ".." and the
// result exist; otherwise (outside POSIX mode) the kernel resolves the
// name and $PWD becomes the physical path. Physical mode always resolves
// through the kernel.
func (w *walker) changeDirBash(newdir string, m cdMode) (string, dirResult) {
	t := newdir
	if !path.IsAbs(t) {
		if w.cwd == "" {
			return "", dirUnknown
		}
		t = w.cwd + "/" + t
	}
	if procDependent(t) {
		return "", dirUnknown
	}
	if !m.physical {
		if c, ok := w.canonLogical(t); ok {
			return c, dirFound
		}
		if m.posix {
			return "", dirMissing
		}
	}
	if k := w.kernelPath(t); k != "" && isDir(k) {
		return w.realPath(k), dirFound
	}
	return "", dirMissing
}

// canonLogical is bash's sh_canonpath with PATH_CHECKDOTDOT|CHECKEXISTS:
// "." and ".." are removed textually, the directory a ".." leaves must
// exist, and so must the result.
func (w *walker) canonLogical(p string) (string, bool) {
	var stack []string
	for _, c := range strings.Split(p, "/") {
		switch c {
		case "", ".":
		case "..":
			if !isDir("/" + strings.Join(stack, "/")) {
				return "", false
			}
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		default:
			stack = append(stack, c)
		}
	}
	r := "/" + strings.Join(stack, "/")
	return r, isDir(r)
}

// cdDash follows dash's cdcmd: a relative operand that does not start with
// "." or ".." is looked up in each CDPATH entry (an empty one meaning the
// operand itself) by stat; the first directory found is the one cd goes
// to, and if that fails cd fails. "" means ".".
func (w *walker) cdDash(dest string, cdpath *value, absent, physical bool) string {
	if !path.IsAbs(dest) && !dotRelative(dest) {
		if dest == "" {
			dest = "."
		}
		if !absent {
			if !cdpath.known || cdpath.isList {
				return ""
			}
			for _, e := range strings.Split(cdpath.str, ":") {
				p := dest
				if e != "" {
					p = e + "/" + dest
				}
				if !path.IsAbs(p) && w.cwd == "" {
					return ""
				}
				k := w.abs(p) // "": the stat fails
				if k != "" && procDependent(k) {
					return ""
				}
				if k != "" && isDir(k) {
					return w.docdDash(p, physical)
				}
			}
		}
	}
	return w.docdDash(dest, physical)
}

// docdDash is dash's docd: logically, the new $PWD is the old one with the
// operand's "." and ".." applied textually, and cd fails when that is not
// a directory; physically, the kernel resolves the operand.
func (w *walker) docdDash(p string, physical bool) string {
	if physical {
		k := w.abs(p)
		if k == "" || procDependent(k) || !isDir(k) {
			return ""
		}
		return w.realPath(k)
	}
	logical := p
	if !path.IsAbs(p) {
		if w.cwd == "" {
			return ""
		}
		logical = w.cwd + "/" + p
	}
	logical = path.Clean(logical)
	if procDependent(logical) || !isDir(logical) {
		return ""
	}
	return logical
}

// moveTo records a cd: the new directory ("" unknown, and always unknown
// in conditional code), $PWD and $OLDPWD. bash copies $OLDPWD from the
// variable PWD, dash from its own record of the directory.
func (w *walker) moveTo(dir, old string, fr frame) {
	if fr.cond {
		dir = ""
	}
	oldpwd := &value{known: old != "", str: old, exported: true}
	switch {
	case dir == "":
		// cd may have failed, leaving OLDPWD as it was.
		oldpwd = &value{exported: true}
	case fr.dialect == DialectBash:
		if v, ok := w.vars.get("PWD"); ok {
			c := *v
			c.exported = true
			oldpwd = &c
		} else {
			oldpwd = &value{known: true, unset: true}
		}
	}
	w.setVar("OLDPWD", oldpwd, fr)
	w.cwd = dir
	w.setVar("PWD", &value{known: dir != "", str: dir, exported: true}, fr)
}

// pushd: `pushd DIR` is cd DIR and, when it succeeds, pushes the old
// directory; `pushd` swaps the top two. Rotations (+N, -N) and -n are not
// modelled.
func (w *walker) pushd(rest []arg, fr frame) {
	old := w.cwd
	switch {
	case len(rest) == 0:
		if w.dirs.unknown || fr.cond {
			w.moveTo("", old, fr)
			w.dirs = dirStack{unknown: true}
			return
		}
		if len(w.dirs.entries) == 0 {
			return // no other directory: an error, nothing changes
		}
		top := w.dirs.entries[0]
		dir := ""
		if top != "" {
			dir = w.cdTarget(top, false, nil, fr)
		}
		w.moveTo(dir, old, fr)
		if dir == "" {
			w.dirs = dirStack{unknown: true}
			return
		}
		w.dirs.entries[0] = old
	case len(rest) == 1 && !strings.HasPrefix(rest[0].Value, "-") && !strings.HasPrefix(rest[0].Value, "+"):
		dir := w.cdTarget(rest[0].Value, true, nil, fr)
		w.moveTo(dir, old, fr)
		if dir == "" || fr.cond || w.dirs.unknown {
			w.dirs = dirStack{unknown: true}
			return
		}
		w.dirs.entries = append([]string{old}, w.dirs.entries...)
	default:
		w.moveTo("", old, fr)
		w.dirs = dirStack{unknown: true}
	}
}

// popd: `popd` pops the top of the stack and goes there. Other forms are
// not modelled.
func (w *walker) popd(rest []arg, fr frame) {
	old := w.cwd
	if len(rest) > 0 || w.dirs.unknown || fr.cond {
		w.moveTo("", old, fr)
		w.dirs = dirStack{unknown: true}
		return
	}
	if len(w.dirs.entries) == 0 {
		return // directory stack empty: an error, nothing changes
	}
	top := w.dirs.entries[0]
	w.dirs.entries = w.dirs.entries[1:]
	dir := ""
	if top != "" {
		dir = w.cdTarget(top, false, nil, fr)
	}
	w.moveTo(dir, old, fr)
}

// startDir sets up a new process's directory: a shell keeps the $PWD it
// inherits when that names its working directory (bash canonicalises it,
// dash keeps it as it is, so only a clean one is modelled), else it takes
// the physical path.
func (w *walker) startDir() {
	if w.cwd == "" {
		return
	}
	pwd, ok := w.vars.get("PWD")
	if ok && pwd.known && !pwd.isList && pwd.str == w.cwd {
		return // $PWD names the directory as the parent did: the common case
	}
	phys := w.realPath(w.cwd)
	switch {
	case !ok || pwd.unset:
		w.cwd = phys
	case !pwd.known || pwd.isList:
		w.cwd = ""
	case path.IsAbs(pwd.str) && !procDependent(pwd.str) && sameFile(pwd.str, phys):
		if path.Clean(pwd.str) != pwd.str {
			w.cwd = ""
		} else {
			w.cwd = pwd.str
		}
	default:
		w.cwd = phys
	}
	w.vars.set("PWD", &value{known: w.cwd != "", str: w.cwd, exported: true})
}

// abs returns the absolute path the kernel opens for p from the current
// directory, with every ".." applied to the physical directory reached
// before it (so "l/../x.sh" under a symlink l is in l's target's parent),
// and /proc/self/cwd and /proc/self/root mapped to the shell's own; ""
// when it cannot tell.
func (w *walker) abs(p string) string {
	if p == "" {
		return ""
	}
	if !path.IsAbs(p) {
		if w.cwd == "" {
			return ""
		}
		p = w.cwd + "/" + p
	}
	k := w.kernelPath(p)
	if k == "" {
		return ""
	}
	return w.procSelf(k)
}

// kernelPath resolves ".." components the way the kernel does; the other
// components are kept as named (symlinks and all). It returns "" when a
// name before a ".." is not a directory now: the kernel would fail there,
// or go wherever the command makes that name point by then.
func (w *walker) kernelPath(p string) string {
	if !strings.Contains(p, "..") {
		return path.Clean(p)
	}
	cur := "/"
	for _, c := range strings.Split(p, "/") {
		switch c {
		case "", ".":
		case "..":
			switch {
			case procDependent(cur):
				cur = path.Dir(procAlias(cur))
			case !isDir(cur):
				return ""
			default:
				cur = path.Dir(w.realPath(cur))
			}
		default:
			cur = path.Join(cur, c)
		}
	}
	return cur
}

// procSelf maps /proc/self/cwd and /proc/self/root (also through
// /proc/thread-self and /dev/fd/..) to what they name for the shell.
func (w *walker) procSelf(p string) string {
	p = procAlias(p)
	for _, link := range []string{"/proc/self/cwd", "/proc/self/root"} {
		if p != link && !strings.HasPrefix(p, link+"/") {
			continue
		}
		base := "/"
		if link == "/proc/self/cwd" {
			if w.cwd == "" {
				return ""
			}
			base = w.realPath(w.cwd)
		}
		return path.Join(base, strings.TrimPrefix(p, link))
	}
	return p
}

// procAlias rewrites the /dev links into /proc/self: /dev/stdin is
// /proc/self/fd/0, /dev/fd is /proc/self/fd, /proc/thread-self is
// /proc/self for what the analyzer models.
func procAlias(p string) string {
	switch p {
	case "/dev/stdin":
		return "/proc/self/fd/0"
	case "/dev/stdout":
		return "/proc/self/fd/1"
	case "/dev/stderr":
		return "/proc/self/fd/2"
	}
	for _, a := range [][2]string{{"/dev/fd", "/proc/self/fd"}, {"/proc/thread-self", "/proc/self"}} {
		if p == a[0] || strings.HasPrefix(p, a[0]+"/") {
			return a[1] + strings.TrimPrefix(p, a[0])
		}
	}
	return p
}

// fdPath returns the file descriptor an absolute path names in the process
// that opens it (/dev/stdin, /dev/fd/N, /proc/self/fd/N, ...); ok is false
// for any other path. other is true for /proc/PID/fd/N and the like: a
// descriptor of some process, which is never modelled.
func fdPath(p string) (fd int, ok, other bool) {
	p = procAlias(path.Clean(p))
	if rest, found := strings.CutPrefix(p, "/proc/self/fd/"); found {
		n, err := strconv.Atoi(rest)
		return n, err == nil && n >= 0, err != nil
	}
	if rest, found := strings.CutPrefix(p, "/proc/"); found {
		pid, tail, _ := strings.Cut(rest, "/")
		if _, err := strconv.Atoi(pid); err == nil && (tail == "fd" || strings.HasPrefix(tail, "fd/") || tail == "cwd" || strings.HasPrefix(tail, "cwd/") || tail == "root" || strings.HasPrefix(tail, "root/")) {
			return 0, false, true
		}
		if strings.HasPrefix(rest, "self/") {
			return 0, false, true
		}
	}
	return 0, false, false
}

// procDependent reports whether a path's meaning depends on which process
// looks at it, so the analyzer's own view of it says nothing.
func procDependent(p string) bool {
	p = procAlias(path.Clean(p))
	return p == "/proc/self" || strings.HasPrefix(p, "/proc/self/") || strings.HasPrefix(p, "/proc/") && len(p) > 6 && p[6] >= '0' && p[6] <= '9'
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

func sameFile(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}

// realPathOf resolves symlinks in p; a name that does not exist (yet) keeps
// the resolved form of its longest existing prefix.
func realPathOf(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	dir, base := path.Dir(p), path.Base(p)
	if dir == p || base == "." || base == "/" {
		return p
	}
	return path.Join(realPathOf(dir), base)
}

// setOption records `set -o NAME`/`set +o NAME` (and the short letters,
// and shopt's lastpipe) for the options the model uses; "" is an option
// named at run time, which may be any of them. Only bash has them: dash
// stops at an unknown option, and what follows is walked all the same.
func (w *walker) setOption(name string, v tri, fr frame) {
	if (name == "xtrace" || name == "") && v != off {
		w.xtrace = true // bash and dash alike
	}
	if fr.dialect != DialectBash {
		return
	}
	switch name {
	case "physical":
		w.opts.physical = w.opts.physical.set(v, fr.cond)
	case "privileged":
		w.opts.privileged = w.opts.privileged.set(v, fr.cond)
	case "monitor":
		w.opts.monitor = w.opts.monitor.set(v, fr.cond)
	case "lastpipe":
		w.opts.lastpipe = w.opts.lastpipe.set(v, fr.cond)
	case "expand_aliases":
		w.opts.expandAliases = w.opts.expandAliases.set(v, fr.cond)
	case "posix":
		// set -o posix assigns POSIXLY_CORRECT=y; set +o posix unsets it.
		nv := &value{}
		switch v {
		case on:
			nv = &value{known: true, str: "y"}
		case off:
			nv = &value{known: true, unset: true}
		}
		if old, ok := w.vars.get("POSIXLY_CORRECT"); ok && old.exported && v != off {
			nv.exported = true
		}
		w.setVar("POSIXLY_CORRECT", nv, fr)
	case "":
		for _, n := range []string{"physical", "privileged", "monitor", "posix"} {
			w.setOption(n, maybe, fr)
		}
	}
}

// setBuiltin handles set's options and positional parameters.
func (w *walker) setBuiltin(rest []arg, fr frame) {
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a.Dynamic {
			w.setOption("", maybe, fr)
			continue
		}
		v := a.Value
		switch {
		case v == "--" || v == "-":
			w.setPositional(rest[i+1:], fr)
			return
		case len(v) > 1 && (v[0] == '-' || v[0] == '+'):
			state := on
			if v[0] == '+' {
				state = off
			}
			for _, c := range v[1:] {
				switch c {
				case 'o':
					if i+1 >= len(rest) {
						return // set -o: prints the options
					}
					i++
					if rest[i].Dynamic {
						w.setOption("", maybe, fr)
						continue
					}
					if rest[i].Value == "allexport" {
						w.allexport = state == on
					}
					w.setOption(rest[i].Value, state, fr)
				case 'a':
					w.allexport = state == on
				case 'P':
					w.setOption("physical", state, fr)
				case 'p':
					w.setOption("privileged", state, fr)
				case 'm':
					w.setOption("monitor", state, fr)
				case 'x':
					w.setOption("xtrace", state, fr)
				}
			}
		default:
			// set word...: the words become the positional parameters.
			w.setPositional(rest[i:], fr)
			return
		}
	}
}

// shoptBuiltin handles the shopt options the model uses: lastpipe, and
// the set -o options through shopt -o.
func (w *walker) shoptBuiltin(rest []arg, fr frame) {
	state, setO := tri(maybe), false
	for _, a := range rest {
		switch {
		case a.Dynamic:
			w.setOption("lastpipe", maybe, fr)
			w.setOption("expand_aliases", maybe, fr)
			w.setOption("", maybe, fr)
		case strings.HasPrefix(a.Value, "-") && len(a.Value) > 1:
			for _, c := range a.Value[1:] {
				switch c {
				case 's':
					state = on
				case 'u':
					state = off
				case 'o':
					setO = true
				}
			}
		case state != maybe:
			switch {
			case setO:
				w.setOption(a.Value, state, fr)
			case a.Value == "lastpipe" || a.Value == "expand_aliases":
				w.setOption(a.Value, state, fr)
			}
		}
	}
}
