package shell

import (
	"fmt"
	"slices"
	"strings"
)

// A tool's own option parser decides which of its words are options, which
// are their arguments and which are operands (the command a wrapper runs,
// the program an interpreter reads), so the analyzer reads argv the way
// glibc's getopt_long does (Debian 12); a different split is a bypass:
//
//   - a cluster of short options (-xzf FILE) ends at the first letter that
//     takes an argument: the rest of the word is the argument (-ofile), or
//     else the next word is (-o file); an optional argument is attached or
//     absent (-t5);
//   - a long option takes --name=VALUE, or the next word when its argument
//     is required; any unique prefix of a name stands for it (--to-com=CMD),
//     and a prefix of options that differ is ambiguous;
//   - "--" ends the options and "-" is an operand;
//   - options may follow operands (glibc permutes argv) unless the option
//     string starts with '+': the first operand then ends the options.
//
// scan reads exactly that, one option at a time, and stops with an error at
// anything the tool would refuse or the analyzer cannot see: the wrappers
// need the exact split or none. parse reads the whole argv for the hazard
// tables, which need every option that may be there: it takes what scan
// refuses as the tool might mean it, and keeps going.

// arity says whether an option takes an argument.
type arity uint8

const (
	noArg       arity = iota
	requiredArg       // attached (-ofile, --out=file) or the next word
	optionalArg       // attached only (-t5, --timing=file)
)

// longOpt is one entry of a getopt_long option table.
type longOpt struct {
	name  string
	arity arity
	id    string // what the option reports itself as: a short letter it stands for, or name
}

// getopt is a tool's command-line grammar.
type getopt struct {
	// short is the getopt option string: each option letter, followed by
	// ':' when it takes an argument and by '::' when the argument is
	// optional. A leading '+' stops at the first operand.
	short string
	long  []longOpt // see longs
	// exact: long options must be spelled in full (parsers other than
	// glibc's, or a long option table that is not complete).
	exact bool
	// stop lists the options after which every word is an operand
	// (python -c CMD ARG...); the rest of a cluster is not read.
	stop map[string]bool
	// attached overrides short for letters whose attached argument is not
	// the whole rest of the word (perl -l0ne): it returns how many bytes
	// of rest the letter takes.
	attached map[byte]func(rest string) int
}

// longs builds a long option table from getopt_long's entries, written
// name, name: (takes an argument) or name:: (an optional one, given with
// =), each followed by =ID when the option is another's long name:
// "unset:=u" is --unset, reported as -u.
func longs(spec ...string) []longOpt {
	out := make([]longOpt, len(spec))
	for i, s := range spec {
		s, id, _ := strings.Cut(s, "=")
		o := &out[i]
		switch {
		case strings.HasSuffix(s, "::"):
			s, o.arity = s[:len(s)-2], optionalArg
		case strings.HasSuffix(s, ":"):
			s, o.arity = s[:len(s)-1], requiredArg
		}
		if id == "" {
			id = s
		}
		o.name, o.id = s, id
	}
	return out
}

func (g *getopt) permutes() bool { return g.short == "" || g.short[0] != '+' }

// shortArity reports how option letter c takes its argument.
func (g *getopt) shortArity(c byte) (arity, bool) {
	if c == ':' || c == '+' || c == '-' || c == ';' {
		return noArg, false
	}
	s := g.short
	i := strings.IndexByte(s, c)
	switch {
	case i < 0:
		return noArg, false
	case i+2 < len(s) && s[i+1] == ':' && s[i+2] == ':':
		return optionalArg, true
	case i+1 < len(s) && s[i+1] == ':':
		return requiredArg, true
	}
	return noArg, true
}

// findLong finds the long option name stands for: the one spelled so, or
// else the one it abbreviates. Options that differ only in name count as
// one; ambiguous reports others that differ.
func (g *getopt) findLong(name string) (hit *longOpt, ambiguous bool) {
	for k := range g.long {
		if g.long[k].name == name {
			return &g.long[k], false
		}
	}
	if g.exact {
		return nil, false
	}
	for k := range g.long {
		lo := &g.long[k]
		if !strings.HasPrefix(lo.name, name) {
			continue
		}
		if hit == nil {
			hit = lo
		} else if hit.id != lo.id || hit.arity != lo.arity {
			return hit, true
		}
	}
	return hit, false
}

// option is one option read from argv.
type option struct {
	id     string // the letter, or the long option's id
	name   string // the letter, or the long option's full name
	long   bool
	arg    Word
	hasArg bool
}

// String names the option for messages: -e, --expression.
func (o option) String() string {
	if o.long {
		return "--" + o.name
	}
	return "-" + o.name
}

// optScanner reads the options of one argv; see scan and parse.
type optScanner struct {
	g    *getopt
	args []Word
	i    int    // index of the word being read
	sub  int    // offset in a cluster of short options; 0 between words
	lit  string // the known text of the cluster being read
	ops  []Word // operands passed over while permuting
	done bool   // "--" or a stop option ended the options
	err  string // why scan stopped early

	lenient bool     // parse, not scan
	unknown []Word   // parse: dynamic words that may be options
	more    []option // parse: the other options an ambiguous abbreviation may be
}

// scan reads args as the tool does: next returns the options in order, and
// rest the operands once it has returned false. A word the tool would
// refuse (an unknown or ambiguous option, a missing argument, an argument
// to an option that takes none) or a dynamic word where an option may
// stand stops it with err set: the dynamic word could be an option that
// changes everything after it.
func (g *getopt) scan(args []Word) *optScanner {
	return &optScanner{g: g, args: args}
}

// parsed is argv as parse reads it.
type parsed struct {
	opts     []option
	operands []Word
	unknown  []Word // dynamic words that may be options the analyzer cannot see
}

func (p parsed) has(ids ...string) bool {
	for _, o := range p.opts {
		if slices.Contains(ids, o.id) {
			return true
		}
	}
	return false
}

// parse reads all of args for the hazard tables, which must find every
// option that may be there. It reads what scan refuses as the tool could:
// an unknown option as a flag, an ambiguous abbreviation as each option it
// abbreviates, an argument given to an option that takes none as its
// argument, a missing argument as none. A dynamic word is read as far as
// its text is known (-e"$x" is -e with a dynamic argument, a$x is an
// operand); one that may hold options goes to unknown.
func (g *getopt) parse(args []Word) parsed {
	s := optScanner{g: g, args: args, lenient: true}
	var p parsed
	for {
		o, ok := s.next()
		if !ok {
			break
		}
		p.opts = append(p.opts, o)
	}
	p.operands, p.unknown = s.rest(), s.unknown
	return p
}

// next returns the next option; false when the options end or scan stops.
func (s *optScanner) next() (o option, ok bool) {
	if len(s.more) > 0 {
		o, s.more = s.more[0], s.more[1:]
		return o, true
	}
	for s.err == "" && !s.done {
		if s.sub > 0 {
			return s.short()
		}
		if s.i >= len(s.args) {
			break
		}
		w := s.args[s.i]
		lit := w.Value
		if w.Dynamic {
			if !s.lenient {
				s.err = fmt.Sprintf("dynamic word %s where an option may stand", w.Value)
				break
			}
			lit = litPrefix(w)
		}
		switch {
		case lit == "--" && !w.Dynamic:
			s.i++
			s.end()
		case !strings.HasPrefix(lit, "-") || lit == "-" && !w.Dynamic: // an operand
			if w.Dynamic && lit == "" && mayBeOption(w) {
				s.unknown = append(s.unknown, w)
			}
			if !s.g.permutes() {
				return o, false
			}
			if s.ops == nil {
				s.ops = make([]Word, 0, len(s.args)-s.i)
			}
			s.ops = append(s.ops, w)
			s.i++
		case strings.HasPrefix(lit, "--"):
			name, _, eq := strings.Cut(lit[2:], "=")
			if !w.Dynamic || eq {
				return s.long(w, name, eq)
			}
			s.unknown = append(s.unknown, w) // the name goes on where it is unknown
			s.i++
		case len(lit) == 1: // "-" and then what is unknown
			s.unknown = append(s.unknown, w)
			s.i++
		default:
			s.lit, s.sub = lit, 1
			return s.short()
		}
	}
	return o, false
}

// end ends the options: every word left is an operand.
func (s *optScanner) end() {
	s.done = true
	if s.g.permutes() {
		s.ops = append(s.ops, s.args[s.i:]...)
		s.i = len(s.args)
	}
}

// endWord leaves a cluster; a dynamic word's unknown part may hold more.
func (s *optScanner) endWord() {
	if s.args[s.i].Dynamic {
		s.unknown = append(s.unknown, s.args[s.i])
	}
	s.sub = 0
	s.i++
}

func (s *optScanner) short() (o option, ok bool) {
	w, lit := s.args[s.i], s.lit
	c := lit[s.sub]
	o.id = lit[s.sub : s.sub+1]
	o.name = o.id
	if f := s.g.attached[c]; f != nil {
		n := f(lit[s.sub+1:])
		o.arg, o.hasArg = Word{Value: lit[s.sub+1 : s.sub+1+n]}, n > 0
		s.sub += 1 + n
		if s.sub >= len(lit) || s.g.stop[o.id] {
			s.endWord()
		}
	} else {
		kind, known := s.g.shortArity(c)
		if !known && !s.lenient {
			s.err = fmt.Sprintf("unknown option -%c", c)
			return o, false
		}
		s.sub++
		switch {
		case kind == noArg:
			if s.sub >= len(lit) || s.g.stop[o.id] {
				s.endWord()
			}
		case s.sub < len(w.Value):
			o.arg, o.hasArg = Word{Value: w.Value[s.sub:], Dynamic: w.Dynamic}, true
			s.sub = 0
			s.i++
		case kind == requiredArg && s.i+1 < len(s.args):
			o.arg, o.hasArg = s.args[s.i+1], true
			s.sub = 0
			s.i += 2
		case kind == requiredArg && !s.lenient:
			s.err = fmt.Sprintf("option %s needs an argument", o)
			return o, false
		default:
			s.sub = 0
			s.i++
		}
	}
	if s.g.stop[o.id] {
		s.end()
	}
	return o, true
}

func (s *optScanner) long(w Word, name string, eq bool) (o option, ok bool) {
	var arg Word
	if eq {
		arg = Word{Value: w.Value[len("--")+len(name)+1:], Dynamic: w.Dynamic}
	}
	s.i++
	var hit *longOpt
	ambiguous := false
	// An empty name (--=x) abbreviates every option. To parse it is
	// unknown: its tables are not complete enough to tell.
	if name != "" || !s.lenient {
		hit, ambiguous = s.g.findLong(name)
	}
	switch {
	case hit != nil && !ambiguous:
		o = option{id: hit.id, name: hit.name, long: true}
	case s.lenient:
		return s.guessLong(name, arg, eq), true
	case hit == nil:
		s.err = fmt.Sprintf("unknown option --%s", name)
		return o, false
	default:
		s.err = fmt.Sprintf("ambiguous option --%s", name)
		return o, false
	}
	switch {
	case eq && hit.arity == noArg && !s.lenient:
		s.err = fmt.Sprintf("option %s takes no argument", o)
		return o, false
	case eq:
		o.arg, o.hasArg = arg, true
	case hit.arity == requiredArg && s.i < len(s.args):
		o.arg, o.hasArg = s.args[s.i], true
		s.i++
	case hit.arity == requiredArg && !s.lenient:
		s.err = fmt.Sprintf("option %s needs an argument", o)
		return o, false
	}
	if s.g.stop[o.id] {
		s.end()
	}
	return o, true
}

// guessLong reads, for parse, a long option name that names none or
// several: every option it abbreviates, in the order of their names, with
// the argument any of them would take; or, when none, an unknown flag.
func (s *optScanner) guessLong(name string, arg Word, eq bool) option {
	var opts []option
	kind := noArg
	if name != "" && !s.g.exact {
		for _, lo := range s.g.long {
			if strings.HasPrefix(lo.name, name) {
				opts = append(opts, option{id: lo.id, name: lo.name, long: true})
				if lo.arity == requiredArg {
					kind = requiredArg
				}
			}
		}
	}
	if len(opts) == 0 {
		opts = append(opts, option{id: name, name: name, long: true})
	}
	if !eq && kind == requiredArg && s.i < len(s.args) {
		arg, eq = s.args[s.i], true
		s.i++
	}
	slices.SortFunc(opts, func(a, b option) int { return strings.Compare(a.name, b.name) })
	for k := range opts {
		opts[k].arg, opts[k].hasArg = arg, eq
		if s.g.stop[opts[k].id] {
			s.end()
		}
	}
	s.more = opts[1:]
	return opts[0]
}

// rest returns the operands once next has returned false.
func (s *optScanner) rest() []Word {
	if s.g.permutes() {
		return s.ops
	}
	return s.args[s.i:]
}

// peek returns the next word when next is about to read a new one.
func (s *optScanner) peek() (Word, bool) {
	if s.sub > 0 || s.done || s.err != "" || s.i >= len(s.args) {
		return Word{}, false
	}
	return s.args[s.i], true
}

// skip passes over the word peek returned, as the tool does with words it
// reads between its options (nice -5, sudo VAR=value).
func (s *optScanner) skip() { s.i++ }

// prev returns the word before the next unread one (sudo looks back).
func (s *optScanner) prev() (Word, bool) {
	if s.i < 1 || s.i > len(s.args) {
		return Word{}, false
	}
	return s.args[s.i-1], true
}

// splice replaces the word just read with words, which are read next
// (env -S splits its argument into words that may hold options too).
func (s *optScanner) splice(words []Word) {
	args := make([]Word, 0, len(words)+len(s.args)-s.i)
	args = append(args, words...)
	s.args, s.i, s.sub = append(args, s.args[s.i:]...), 0, 0
}
