package shell

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/mitrity/mitrity/govern"
)

const (
	defaultMaxScriptDepth = 8
	defaultMaxScriptBytes = 1 << 20
	// maxCommands bounds the work one analysis may do (function calls are
	// walked at each call site, so text can multiply); past it the rest is
	// opaque rather than slow.
	maxCommands = 20000
	// maxFields bounds what one word may expand to (brace expansion).
	maxFields = 4096
	// maxNesting bounds how deeply statements may nest inside each other,
	// whatever does the nesting: command and process substitutions,
	// subshells, groups, compound commands, function bodies, eval, nested
	// shells, here-documents fed to a shell, aliases, traps. Each level
	// costs the walker a frame, a scope and a longer context, so without
	// it 64 KiB of $( grows time and memory with the square of the depth;
	// past it the rest is opaque rather than slow.
	maxNesting = 100
	// maxNestedBytes bounds the code parsed beyond the text itself, in
	// all: eval, bash -c, trap and here-document code and alias
	// expansions (64 KiB of `eval "$x"` with a 30 KB $x is 100 MB to
	// parse); scripts count against maxScriptTotal (Input.MaxScriptBytes
	// times this). Past either the rest is opaque.
	maxNestedBytes = 8 * MaxCommandBytes
	maxScriptTotal = 4
)

// Analyze parses and resolves in.Text. It never executes anything and never
// returns nil: a text it cannot judge comes back with a Denial.
func Analyze(in Input) *Analysis {
	a := &Analysis{Dialect: in.Dialect}
	if in.Dialect != DialectBash && in.Dialect != DialectSh {
		a.Denial = &Denial{Reason: govern.ReasonInvalidInput, Message: fmt.Sprintf("dialect %q is not bash or sh", in.Dialect)}
		return a
	}
	if d := checkText(in.Text); d != nil {
		// The refusal is audited like any other: its event names the
		// text by its hash.
		sum := sha256.Sum256([]byte(in.Text))
		a.SHA256 = hex.EncodeToString(sum[:])
		a.Denial = d
		return a
	}
	text, creds := RewriteCredentials(in.Text)
	a.Text = text
	a.Credentials = creds
	sum := sha256.Sum256([]byte(text))
	a.SHA256 = hex.EncodeToString(sum[:])

	f, err := parse(text, "", in.Dialect)
	if err != nil {
		a.Denial = parseDenial(err, "")
		return a
	}
	// Walk again while a walk learns that something walked before it
	// carries a credential (feedback.go).
	var h *hints
	for pass := 1; ; pass++ {
		b := &Analysis{Dialect: a.Dialect, Text: a.Text, SHA256: a.SHA256, Credentials: a.Credentials}
		pin := in
		w := newWalker(&pin, b)
		w.applyHints(h)
		w.walkFile(f, frame{src: text, dialect: in.Dialect})
		w.finish()
		if h = w.next(); h == nil || b.Denial != nil {
			return b
		}
		if pass == maxPasses {
			// A credential is still reaching code walked before it: where
			// it ends up is not known, so it is refused in any run.
			const why = "a credential flows back into code walked before it (a coprocess, a process substitution, a file read early, a variable bash sets) more times than the analyzer follows"
			w.flag(FlagOpaque, Pos{}, "%s (%d walks)", why, maxPasses)
			w.deny(govern.ReasonCredentialInArgv, Pos{}, why+", so it cannot tell whether the value reaches a command line, where every process of the same user can read it. "+
				"Feed the value to each process directly instead of back through earlier ones. "+sanctionedForms)
			return b
		}
	}
}

// checkText refuses what the parser and the shell could read differently.
func checkText(text string) *Denial {
	if len(text) > MaxCommandBytes {
		return &Denial{Reason: govern.ReasonInvalidInput, Message: fmt.Sprintf("command is %d bytes; the limit is %d (64 KiB)", len(text), MaxCommandBytes)}
	}
	line, col := uint(1), uint(1)
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c < 0x20 && c != '\t' && c != '\n' || c == 0x7f {
			name := fmt.Sprintf("control character 0x%02x", c)
			switch c {
			case 0:
				name = "NUL byte"
			case '\r':
				name = "carriage return (CR)"
			}
			return &Denial{Reason: govern.ReasonInvalidInput, Pos: Pos{Line: line, Col: col},
				Message: fmt.Sprintf("%s at %d:%d; the parser and the shell could read it differently, so it is refused (use printf escapes like \\r or \\x00 inside quotes instead)", name, line, col)}
		}
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return nil
}

// RewriteCredentials turns every ${credential:<id>} into ${MITRITY_CRED_<ID>}
// (id upper-cased, anything not a letter or digit becoming _) and returns the
// rewritten text and the ids referenced, in order of first use.
func RewriteCredentials(text string) (string, []string) {
	const open = "${credential:"
	if !strings.Contains(text, open) {
		return text, nil
	}
	var b strings.Builder
	var ids []string
	seen := map[string]bool{}
	for {
		i := strings.Index(text, open)
		if i < 0 {
			b.WriteString(text)
			break
		}
		j := strings.IndexByte(text[i+len(open):], '}')
		if j < 0 {
			b.WriteString(text)
			break
		}
		id := text[i+len(open) : i+len(open)+j]
		if !validCredentialID(id) {
			b.WriteString(text[:i+len(open)])
			text = text[i+len(open):]
			continue
		}
		b.WriteString(text[:i])
		b.WriteString("${")
		b.WriteString(CredentialVar(id))
		b.WriteString("}")
		text = text[i+len(open)+j+1:]
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return b.String(), ids
}

func validCredentialID(id string) bool { return govern.ValidCredentialID(id) }

// CredentialPrefix starts the name of every variable that carries a brokered
// credential; CredentialDirVar names the directory of credential files.
const (
	CredentialPrefix = govern.CredentialPrefix
	CredentialDirVar = govern.CredentialDirVar
)

// CredentialVar is the variable a credential id is injected as.
func CredentialVar(id string) string { return govern.CredentialVar(id) }

func parse(text, name string, d Dialect) (*syntax.File, error) {
	lang := syntax.LangBash
	if d == DialectSh {
		lang = syntax.LangPOSIX
	}
	return syntax.NewParser(syntax.Variant(lang)).Parse(strings.NewReader(text), name)
}

func parseDenial(err error, file string) *Denial {
	var pe syntax.ParseError
	if errors.As(err, &pe) {
		return &Denial{Reason: govern.ReasonParseError, Pos: Pos{File: file, Line: pe.Pos.Line(), Col: pe.Pos.Col()},
			Message: fmt.Sprintf("the command does not parse: %s", pe.Error())}
	}
	var le syntax.LangError
	if errors.As(err, &le) {
		return &Denial{Reason: govern.ReasonParseError, Pos: Pos{File: file, Line: le.Pos.Line(), Col: le.Pos.Col()},
			Message: fmt.Sprintf("the command does not parse: %s", le.Error())}
	}
	return &Denial{Reason: govern.ReasonParseError, Message: fmt.Sprintf("the command does not parse: %v", err)}
}

// within reports whether path is root or below it.
func within(path, root string) bool {
	if root == "/" {
		return strings.HasPrefix(path, "/")
	}
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}
