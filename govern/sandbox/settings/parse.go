package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"

	"github.com/mitrity/mitrity/govern/sandbox"
)

// MaxFileBytes bounds the settings file: it is a short list of paths and
// domains.
const MaxFileBytes = 1 << 20

// Error is a problem in the settings file, where it is.
type Error struct {
	File      string
	Line, Col int    // 1-based; 0 when the problem has no position
	Field     string // e.g. filesystem.denyRead[2]; empty for syntax errors
	Msg       string
}

func (e *Error) Error() string {
	s := e.File
	if e.Line > 0 {
		s += fmt.Sprintf(":%d:%d", e.Line, e.Col)
	}
	if e.Field != "" {
		s += ": " + e.Field
	}
	return s + ": " + e.Msg
}

// Settings is what a settings file narrows. The zero value narrows
// nothing.
type Settings struct {
	// File is the path it was read from.
	File string
	fs   *sandbox.Narrowing
	net  *network
}

// network is the file's network section.
type network struct {
	allowed, denied []pattern
}

// Load reads and parses the settings file at path.
func Load(path string) (*Settings, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &Error{File: path, Msg: err.Error()}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, &Error{File: path, Msg: err.Error()}
	}
	if len(data) > MaxFileBytes {
		return nil, &Error{File: path, Msg: fmt.Sprintf("larger than %d bytes", MaxFileBytes)}
	}
	return Parse(path, data)
}

// Parse reads a settings file's bytes; name is used in errors. Every field
// must be known: one this sandbox cannot apply is refused rather than
// skipped, so that what the file promises is what the sandbox does.
func Parse(name string, data []byte) (*Settings, error) {
	p := &parser{name: name, data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	s := &Settings{File: name}
	err := p.object("", map[string]func(string) error{
		"filesystem": func(f string) error { return p.filesystem(f, s) },
		"network":    func(f string) error { return p.network(f, s) },
		// Which violations srt logs quietly: there is no such log here.
		"ignoreViolations": func(f string) error {
			return p.object(f, nil, func(k, f string) error { _, err := p.strings(f); return err })
		},
		"enableWeakerNestedSandbox":    p.mustBeFalse("it would weaken the sandbox"),
		"enableWeakerNetworkIsolation": p.mustBeFalse("it would widen network access"),
		"allowAppleEvents":             p.mustBeFalse("it would let commands start programs outside the sandbox"),
		"allowPty":                     p.mustBeFalse("it would widen what the sandbox allows"),
	}, p.unsupported(unsupportedTop))
	if err != nil {
		return nil, err
	}
	if p.dec.More() {
		t, at, err := p.next()
		if err != nil {
			return nil, err
		}
		return nil, p.errAt(at, "", fmt.Sprintf("unexpected %v after the settings object", t))
	}
	if _, err := p.dec.Token(); err != io.EOF {
		return nil, p.syntax(err)
	}
	return s, nil
}

// unsupportedTop and unsupportedNet are sandbox-runtime settings this
// sandbox does not apply; naming them in the error says the file is valid
// for srt but not here.
var (
	unsupportedTop = map[string]string{
		"credentials":              "declare credentials in exec.credentials; deny files with filesystem.denyRead",
		"ripgrep":                  "srt's own tooling",
		"mandatoryDenySearchDepth": "srt's own tooling; the deny set here is fixed and documented",
		"seccomp":                  "the filter here is built in",
		"bwrapPath":                "the gateway finds bubblewrap itself",
		"socatPath":                "no socat is used here",
		"javaAgentJarPath":         "srt's own tooling",
		"windows":                  "not a Linux setting",
		"git":                      "srt's own tooling",
	}
	unsupportedNet = map[string]string{
		"httpProxyPort":   "the egress proxy here is the gateway's own",
		"socksProxyPort":  "the egress proxy here is the gateway's own",
		"mitmProxy":       "TLS is not terminated here",
		"tlsTerminate":    "TLS is not terminated here",
		"parentProxy":     "the egress proxy here dials directly",
		"filterRequest":   "a library callback, not a file setting",
		"allowMachLookup": "a macOS setting, and it would widen the sandbox",
	}
)

func (p *parser) filesystem(field string, s *Settings) error {
	n := &sandbox.Narrowing{}
	seen := map[string]bool{}
	paths := func(dst *[]string) func(string) error {
		return func(f string) error {
			vals, err := p.strings(f)
			if err != nil {
				return err
			}
			for i, v := range vals {
				if err := sandbox.CheckNarrowingPath(v.s); err != nil {
					return p.errAt(v.at, fmt.Sprintf("%s[%d]", f, i), err.Error())
				}
				*dst = append(*dst, v.s)
			}
			seen[f] = true
			return nil
		}
	}
	err := p.object(field, map[string]func(string) error{
		"denyRead":  paths(&n.DenyRead),
		"allowRead": paths(&n.AllowRead),
		"allowWrite": func(f string) error {
			n.LimitWrite = true
			return paths(&n.AllowWrite)(f)
		},
		"denyWrite":      paths(&n.DenyWrite),
		"disabled":       p.mustBeFalse("it would switch the file-system rules off"),
		"allowGitConfig": p.mustBeFalse(".git/config stays read-only in every workspace root"),
	}, p.unsupported(nil))
	if err != nil {
		return err
	}
	for _, req := range []string{"denyRead", "allowWrite", "denyWrite"} {
		if !seen[field+"."+req] {
			return p.errAt(p.lastStart, field+"."+req, "missing: sandbox-runtime requires it (an empty list is allowed; an empty allowWrite leaves nothing writable)")
		}
	}
	for i, d := range n.DenyRead {
		if d == "/" {
			return &Error{File: p.name, Field: fmt.Sprintf("%s.denyRead[%d]", field, i), Msg: "/ would hide everything the command needs to run; deny the regions meant (e.g. /home)"}
		}
	}
	s.fs = n
	return nil
}

func (p *parser) network(field string, s *Settings) error {
	nw := &network{}
	seen := map[string]bool{}
	domains := func(dst *[]pattern, deny bool) func(string) error {
		return func(f string) error {
			vals, err := p.strings(f)
			if err != nil {
				return err
			}
			for i, v := range vals {
				pat, err := parseSettingsPattern(v.s, deny)
				if err != nil {
					return p.errAt(v.at, fmt.Sprintf("%s[%d]", f, i), err.Error())
				}
				*dst = append(*dst, pat)
			}
			seen[f] = true
			return nil
		}
	}
	err := p.object(field, map[string]func(string) error{
		"allowedDomains": domains(&nw.allowed, false),
		"deniedDomains":  domains(&nw.denied, true),
		// Text for srt's violation report: nothing to apply.
		"deniedDomainReasons": func(f string) error {
			return p.object(f, nil, func(k, f string) error { _, _, err := p.str(f); return err })
		},
		// The allowlist here is always strict, and the sandbox's loopback is
		// its own network namespace's: either value narrows nothing more.
		"strictAllowlist":   func(f string) error { _, err := p.boolean(f); return err },
		"allowLocalBinding": func(f string) error { _, err := p.boolean(f); return err },
		"allowUnixSockets": func(f string) error {
			vals, err := p.strings(f)
			if err == nil && len(vals) > 0 {
				return p.errAt(vals[0].at, f, "would widen the sandbox: its seccomp filter denies Unix sockets; remove it")
			}
			return err
		},
		"allowAllUnixSockets": p.mustBeFalse("it would widen the sandbox: its seccomp filter denies Unix sockets"),
	}, p.unsupported(unsupportedNet))
	if err != nil {
		return err
	}
	for _, req := range []string{"allowedDomains", "deniedDomains"} {
		if !seen[field+"."+req] {
			return p.errAt(p.lastStart, field+"."+req, "missing: sandbox-runtime requires it (an empty allowedDomains allows no network at all)")
		}
	}
	s.net = nw
	return nil
}

// parser walks the JSON tokens, knowing where each one starts.
type parser struct {
	name      string
	data      []byte
	dec       *json.Decoder
	lastStart int64
}

// next returns the next token and the offset where it starts.
func (p *parser) next() (json.Token, int64, error) {
	off := p.dec.InputOffset()
	for off < int64(len(p.data)) && bytes.IndexByte([]byte(" \t\r\n,:"), p.data[off]) >= 0 {
		off++
	}
	t, err := p.dec.Token()
	if err != nil {
		return nil, off, p.syntax(err)
	}
	p.lastStart = off
	return t, off, nil
}

func (p *parser) syntax(err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return p.errAt(se.Offset, "", "invalid JSON: "+se.Error())
	}
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return p.errAt(int64(len(p.data)), "", "invalid JSON: unexpected end of file")
	}
	return p.errAt(p.dec.InputOffset(), "", "invalid JSON: "+err.Error())
}

func (p *parser) errAt(off int64, field, msg string) error {
	line, col := 1, 1
	for _, b := range p.data[:min(off, int64(len(p.data)))] {
		if b == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return &Error{File: p.name, Line: line, Col: col, Field: field, Msg: msg}
}

func join(field, key string) string {
	if field == "" {
		return key
	}
	return field + "." + key
}

// object reads an object. known handles the keys it names; any other key
// goes to other (a nil other refuses it as unknown).
func (p *parser) object(field string, known map[string]func(string) error, other func(key, field string) error) error {
	t, at, err := p.next()
	if err != nil {
		return err
	}
	if t != json.Delim('{') {
		return p.errAt(at, field, fmt.Sprintf("want an object, not %s", describe(t)))
	}
	seen := map[string]bool{}
	for p.dec.More() {
		t, at, err := p.next()
		if err != nil {
			return err
		}
		key := t.(string) // object keys are always strings
		f := join(field, key)
		if seen[key] {
			return p.errAt(at, f, "appears twice")
		}
		seen[key] = true
		if h, ok := known[key]; ok {
			err = h(f)
		} else if other != nil {
			err = other(key, f)
		} else {
			err = p.errAt(at, f, "unknown field")
		}
		if err != nil {
			return err
		}
	}
	_, _, err = p.next() // the closing brace
	return err
}

// unsupported refuses key, saying why when it is a sandbox-runtime setting
// this sandbox does not apply.
func (p *parser) unsupported(why map[string]string) func(key, field string) error {
	return func(key, field string) error {
		if w, ok := why[key]; ok {
			return p.errAt(p.lastStart, field, "a sandbox-runtime setting this sandbox does not apply ("+w+"): remove it")
		}
		return p.errAt(p.lastStart, field, "unknown field")
	}
}

type located struct {
	s  string
	at int64
}

func (p *parser) str(field string) (string, int64, error) {
	t, at, err := p.next()
	if err != nil {
		return "", at, err
	}
	s, ok := t.(string)
	if !ok {
		return "", at, p.errAt(at, field, fmt.Sprintf("want a string, not %s", describe(t)))
	}
	return s, at, nil
}

func (p *parser) strings(field string) ([]located, error) {
	t, at, err := p.next()
	if err != nil {
		return nil, err
	}
	if t != json.Delim('[') {
		return nil, p.errAt(at, field, fmt.Sprintf("want a list of strings, not %s", describe(t)))
	}
	var out []located
	for i := 0; p.dec.More(); i++ {
		s, at, err := p.str(field + "[" + strconv.Itoa(i) + "]")
		if err != nil {
			return nil, err
		}
		out = append(out, located{s, at})
	}
	_, _, err = p.next()
	return out, err
}

func (p *parser) boolean(field string) (bool, error) {
	t, at, err := p.next()
	if err != nil {
		return false, err
	}
	b, ok := t.(bool)
	if !ok {
		return false, p.errAt(at, field, fmt.Sprintf("want true or false, not %s", describe(t)))
	}
	return b, nil
}

// mustBeFalse accepts false and refuses true, which would widen the
// sandbox.
func (p *parser) mustBeFalse(why string) func(string) error {
	return func(f string) error {
		b, err := p.boolean(f)
		if err == nil && b {
			return p.errAt(p.lastStart, f, "true is refused: "+why+" (a settings file can only narrow the sandbox)")
		}
		return err
	}
}

func describe(t json.Token) string {
	switch v := t.(type) {
	case json.Delim:
		switch v {
		case '{':
			return "an object"
		case '[':
			return "a list"
		}
		return string(v)
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return "a number"
}

// Narrowing is the file-system part, for sandbox.Spec.Narrowing; nil when
// the file has no filesystem section.
func (s *Settings) Narrowing() *sandbox.Narrowing {
	if s == nil || s.fs == nil {
		return nil
	}
	n := *s.fs
	n.DenyRead, n.AllowRead = slices.Clone(n.DenyRead), slices.Clone(n.AllowRead)
	n.AllowWrite, n.DenyWrite = slices.Clone(n.AllowWrite), slices.Clone(n.DenyWrite)
	return &n
}
