package shell

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Aliases. bash (with shopt -s expand_aliases, in POSIX mode, or with
// expand_aliases in an inherited BASHOPTS) and dash (always) replace the
// first word of a simple command by an alias's value when they read it,
// before parsing it: the parser the analyzer uses never sees that text.
// The walker therefore walks, at every command whose first word could be
// an alias, the text the shell would read instead: the command with that
// word replaced by each value the alias was ever given. It over-
// approximates where it must guess:
//   - a value is kept after unalias or a redefinition: a function or a
//     compound command read while the alias was defined keeps its
//     expansion, so every value counts wherever the name is used;
//   - the expansion is walked whenever expansion may be on, whatever line
//     the alias was defined on (the shell expands only on later lines),
//     and the command as written is walked too: either may be what runs;
//   - a name in an alias's own value is not expanded again (as the shells
//     do); every other name is, so aliases of aliases are followed, and a
//     cycle through several of them ends at the nesting limit, opaque.
// An alias whose name or value is known only at run time makes every
// command where it could apply opaque.

// maxAliasValues bounds the values one alias name is followed through,
// and the texts one command may expand to; past it the alias is opaque.
const maxAliasValues = 8

// aliasDef is what an alias name may expand to.
type aliasDef struct {
	values []string
	// dynamic: it was given a value known only at run time (or more than
	// maxAliasValues); what is where says where.
	dynamic bool
	where   Pos
}

// aliasSpan marks the part of an expansion's text that is an alias's own
// value: the shells do not expand that alias again there.
type aliasSpan struct {
	name       string
	start, end int
}

// aliasesMayExpand reports whether the shell running the frame's code may
// expand aliases.
func (w *walker) aliasesMayExpand(fr frame) bool {
	if fr.dialect == DialectSh {
		return true
	}
	if w.opts.expandAliases != off || w.posixMode(fr) != off {
		return true
	}
	// bash turns on the shopt options an inherited BASHOPTS lists.
	v, ok := w.vars.get("BASHOPTS")
	return ok && !v.unset && (!v.known || v.isList || strings.Contains(v.str, "expand_aliases"))
}

// aliasBuiltin records what `alias` defines.
func (w *walker) aliasBuiltin(rest []arg, pos Pos) {
	for _, a := range rest {
		if !a.Dynamic && (a.Value == "--" || a.Value == "-p") {
			continue
		}
		name, value, hasValue := strings.Cut(a.Value, "=")
		if a.Dynamic {
			// The word's source text: a plain name before the = is known.
			if !hasValue || !aliasName(name) {
				if w.aliasAny == nil {
					p := pos
					w.aliasAny = &p
				}
				continue
			}
			w.defineAlias(name, "", true, pos)
			continue
		}
		if hasValue {
			w.defineAlias(name, value, false, pos)
		}
	}
}

func (w *walker) defineAlias(name, value string, dynamic bool, pos Pos) {
	def := &aliasDef{}
	if old, ok := w.aliases.get(name); ok && old != nil {
		c := *old
		c.values = append([]string(nil), old.values...)
		def = &c
	}
	switch {
	case dynamic:
		def.dynamic, def.where = true, pos
	case !containsString(def.values, value):
		def.values = append(def.values, value)
		if len(def.values) > maxAliasValues && !def.dynamic {
			def.dynamic, def.where = true, pos
		}
	}
	w.aliases.set(name, def)
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// aliasName reports whether s can be an alias the shell looks up: a word
// with no quoting, expansion or slash.
func aliasName(s string) bool {
	return s != "" && !strings.ContainsAny(s, "/$`=\\'\"|&;()<> \t\n")
}

// aliasWord returns the alias name a command word could be: a single
// unquoted literal.
func aliasWord(word *syntax.Word) (string, bool) {
	if word == nil || len(word.Parts) != 1 {
		return "", false
	}
	lit, ok := word.Parts[0].(*syntax.Lit)
	if !ok || !aliasName(lit.Value) {
		return "", false
	}
	return lit.Value, true
}

// aliasCommand walks what a simple command (or a declare/let clause, whose
// first word is just as much a command name) reads as once aliases are
// expanded. words are its words in order, start and end the offsets of the
// whole command in the frame's text.
func (w *walker) aliasCommand(words []*syntax.Word, start, end int, fr frame) {
	if len(words) == 0 || !w.aliasesMayExpand(fr) {
		return
	}
	name, ok := aliasWord(words[0])
	if !ok || fr.inAliasValue(name, int(words[0].Pos().Offset())) {
		return
	}
	pos := fr.pos(words[0])
	if w.aliasAny != nil {
		w.flag(FlagOpaque, pos, "an alias was defined at %s with a name known only at run time: %s may be an alias for code the analyzer cannot see", w.aliasAny, name)
		return
	}
	def, ok := w.aliases.get(name)
	if !ok || def == nil {
		return
	}
	if w.nestedBytes > maxNestedBytes {
		w.flag(FlagDepthExceeded, pos, "alias %s: more than %d bytes of nested code to parse in all; the rest is opaque", name, maxNestedBytes)
		return
	}
	if start < 0 || end > len(fr.src) || start > int(words[0].Pos().Offset()) {
		return
	}
	texts := []aliasText{{text: fr.src[start:words[0].Pos().Offset()]}}
	if !w.expandWords(words, 0, end, &texts, fr) {
		return
	}
	for _, t := range texts {
		c := fr
		c.cond = true // the shell may not expand it (same line, expansion off)
		w.aliasNested(t, pos, c, "alias "+name)
	}
}

// aliasText is one text a command may expand to, with the spans of it
// that are alias values.
type aliasText struct {
	text  string
	spans []aliasSpan
}

// expandWords appends to every text the expansion of words[i:] (the
// alias words[i] names, and the next word too when its value ends in a
// blank), then the rest of the command up to end. It reports false when an
// alias there is opaque (flagged).
func (w *walker) expandWords(words []*syntax.Word, i, end int, texts *[]aliasText, fr frame) bool {
	name, _ := aliasWord(words[i])
	def, _ := w.aliases.get(name)
	if def.dynamic {
		w.flag(FlagOpaque, fr.pos(words[i]), "alias %s was given a value known only at run time (at %s): what it runs cannot be seen", name, def.where)
		return false
	}
	if len(*texts)*len(def.values) > maxAliasValues {
		w.flag(FlagOpaque, fr.pos(words[i]), "alias %s expands to more than %d different texts here", name, maxAliasValues)
		return false
	}
	wordEnd := int(words[i].End().Offset())
	var out []aliasText
	for _, t := range *texts {
		for _, v := range def.values {
			n := aliasText{text: t.text + v, spans: append(append([]aliasSpan(nil), t.spans...), aliasSpan{name, len(t.text), len(t.text) + len(v)})}
			out = append(out, n)
		}
	}
	*texts = out
	// A value ending in a blank makes the next word a command name too.
	if i+1 < len(words) {
		if next, ok := aliasWord(words[i+1]); ok && next != name {
			if nd, ok := w.aliases.get(next); ok && nd != nil {
				var blank, other []aliasText
				for _, t := range *texts {
					if strings.HasSuffix(t.text, " ") || strings.HasSuffix(t.text, "\t") || strings.HasSuffix(t.text, "\n") {
						blank = append(blank, aliasText{text: t.text + fr.src[wordEnd:words[i+1].Pos().Offset()], spans: t.spans})
					} else {
						other = append(other, t)
					}
				}
				if len(blank) > 0 {
					if !w.expandWords(words, i+1, end, &blank, fr) {
						return false
					}
					for j := range other {
						other[j].text += fr.src[wordEnd:end]
					}
					*texts = append(other, blank...)
					return true
				}
			}
		}
	}
	for j := range *texts {
		(*texts)[j].text += fr.src[wordEnd:end]
	}
	return true
}

// inAliasValue reports whether the word at offset is inside the value of
// alias name in this frame's text (an expansion of it).
func (fr frame) inAliasValue(name string, offset int) bool {
	for _, s := range fr.aliasSpans {
		if s.name == name && offset >= s.start && offset < s.end {
			return true
		}
	}
	return false
}

// aliasNested parses and walks one expansion in the current shell, like
// eval; a text that does not parse on its own (a value that opens a
// quote or a compound command the rest of the text closes) is opaque.
func (w *walker) aliasNested(t aliasText, pos Pos, fr frame, ctx string) {
	if fr.depth+1 > w.in.MaxScriptDepth {
		w.flag(FlagDepthExceeded, pos, "%s nests deeper than %d levels; not analysed", ctx, w.in.MaxScriptDepth)
		return
	}
	if !w.parseBudget(len(t.text), false, pos, ctx) {
		return
	}
	f, err := parse(t.text, "", fr.dialect)
	if err != nil {
		w.flag(FlagOpaque, pos, "%s: the command it expands to does not parse on its own, so what the shell reads cannot be seen: %s", ctx, parseDenial(err, "").Message)
		return
	}
	c := fr.with(ctx)
	c.src = t.text
	c.file = pos.String() + " " + ctx
	c.depth = fr.depth + 1
	c.aliasSpans = t.spans
	w.walkStmts(f.Stmts, c)
}
