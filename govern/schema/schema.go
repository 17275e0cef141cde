package schema

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/mitrity/mitrity/govern/yamlfile"
)

// The schema files, by the names they are installed under.
const (
	Gateway = "mitrity-gateway.schema.json"
	Policy  = "mitrity-policy.schema.json"
)

// InstallDir is where the packages install the schema files; the embedded
// default config and policy name them there (file:// URLs), for an editor
// on a host with the packages.
const InstallDir = "/usr/share/mitrity/schema"

//go:embed mitrity-gateway.schema.json mitrity-policy.schema.json
var files embed.FS

// Bytes is the schema file name (Gateway or Policy), byte for byte.
func Bytes(name string) ([]byte, error) { return files.ReadFile(name) }

// Problem is one place a document breaks the schema: Path as the loaders
// write it (exec.limits.pids, allowed_ports[1], files["id.json"]), "" for
// the document itself.
type Problem struct {
	Path, Message string
}

func (p Problem) String() string {
	if p.Path == "" {
		return p.Message
	}
	return p.Path + ": " + p.Message
}

// Validator checks YAML documents against one schema.
type Validator struct {
	s  *jsonschema.Schema
	mu sync.Mutex // c compiles sub-schemas on demand
	c  *jsonschema.Compiler
}

// Compile compiles the embedded schema name (Gateway or Policy), checking
// it against the draft 2020-12 meta-schema.
func Compile(name string) (*Validator, error) {
	b, err := Bytes(name)
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	url := "file://" + InstallDir + "/" + name
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, err
	}
	return &Validator{s: s, c: c}, nil
}

// english prints the validator's messages.
var english = message.NewPrinter(language.English)

// ErrNotOneDocument: the schema judges one YAML document; text that does
// not parse as one is the YAML parser's to refuse.
var ErrNotOneDocument = errors.New("not one YAML document")

// Validate parses data as one YAML document (aliases and merge keys
// resolved, as an editor and the loaders read it) and returns every leaf
// problem the schema finds, sorted by path; none when it passes.
func (v *Validator) Validate(data []byte) ([]Problem, error) {
	inst, err := decode(data)
	if err != nil {
		return nil, err
	}
	err = v.s.Validate(inst)
	if err == nil {
		return nil, nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return nil, err
	}
	var out []Problem
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if k, ok := e.ErrorKind.(*kind.PropertyNames); ok {
			var msgs []string
			for _, c := range leaves(e) {
				msgs = append(msgs, c.ErrorKind.LocalizedString(english))
			}
			msg := fmt.Sprintf("key %q: %s", k.Property, strings.Join(msgs, "; "))
			for _, p := range v.keyPaths(inst, e.SchemaURL, k.Property) {
				out = append(out, Problem{Path: p, Message: msg})
			}
			return
		}
		if len(e.Causes) == 0 {
			out = append(out, Problem{Path: path(inst, e.InstanceLocation), Message: e.ErrorKind.LocalizedString(english)})
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	slices.SortStableFunc(out, func(a, b Problem) int { return strings.Compare(a.Path, b.Path) })
	return slices.Compact(out), nil
}

// keyPaths are the paths of the key name that the propertyNames schema at
// url refuses, pointing at the key as the loaders do. The validator's own
// location of such an error is not reliable (jsonschema v6.0.3 keeps a
// slice it goes on to overwrite; upstream issue 258), so every mapping of
// the document that holds name is checked against the schema of the
// mapping the keyword belongs to.
func (v *Validator) keyPaths(inst any, url, name string) []string {
	v.mu.Lock()
	obj, err := v.c.Compile(strings.TrimSuffix(url, "/propertyNames"))
	v.mu.Unlock()
	if err != nil {
		return []string{yamlfile.Key("", name)}
	}
	var out []string
	var walk func(p string, x any)
	walk = func(p string, x any) {
		switch x := x.(type) {
		case map[string]any:
			if _, ok := x[name]; ok && refusesKey(obj.Validate(x), name) {
				out = append(out, yamlfile.Key(p, name))
			}
			for _, k := range sortedKeys(x) {
				walk(yamlfile.Key(p, k), x[k])
			}
		case []any:
			for i, e := range x {
				walk(yamlfile.Index(p, i), e)
			}
		}
	}
	walk("", inst)
	if len(out) == 0 {
		return []string{yamlfile.Key("", name)}
	}
	return out
}

// refusesKey reports whether err holds a propertyNames error for name.
func refusesKey(err error, name string) bool {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return false
	}
	var find func(*jsonschema.ValidationError) bool
	find = func(e *jsonschema.ValidationError) bool {
		if k, ok := e.ErrorKind.(*kind.PropertyNames); ok && k.Property == name {
			return true
		}
		return slices.ContainsFunc(e.Causes, find)
	}
	return find(ve)
}

func leaves(e *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(e.Causes) == 0 {
		return []*jsonschema.ValidationError{e}
	}
	var out []*jsonschema.ValidationError
	for _, c := range e.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}

func decode(data []byte) (any, error) {
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotOneDocument, err)
	}
	var body ast.Node
	for _, d := range f.Docs {
		if d == nil || d.Body == nil {
			continue
		}
		if body != nil {
			return nil, fmt.Errorf("%w: more than one", ErrNotOneDocument)
		}
		body = d.Body
	}
	if body == nil {
		return nil, nil
	}
	var v any
	if err := yaml.NodeToValue(body, &v); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotOneDocument, err)
	}
	return jsonValue(v), nil
}

// jsonValue turns what the YAML decoder gives into the values a JSON
// document has: string-keyed objects, arrays, numbers, strings, booleans,
// null.
func jsonValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = jsonValue(e)
		}
		return x
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[fmt.Sprint(k)] = jsonValue(e)
		}
		return m
	case []any:
		for i, e := range x {
			x[i] = jsonValue(e)
		}
		return x
	case nil, string, bool, int, int64, uint64:
		return x
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return fmt.Sprint(x) // JSON has no such number; a number's schema refuses it
		}
		return x
	}
	return fmt.Sprint(v)
}

// path writes a JSON pointer's tokens as the loaders write paths, walking
// inst to tell an array index from an object key.
func path(inst any, loc []string) string {
	p := ""
	for _, tok := range loc {
		switch x := inst.(type) {
		case []any:
			i, _ := strconv.Atoi(tok)
			p = yamlfile.Index(p, i)
			if i >= 0 && i < len(x) {
				inst = x[i]
			}
		case map[string]any:
			p = yamlfile.Key(p, tok)
			inst = x[tok]
		default:
			p = yamlfile.Key(p, tok)
		}
	}
	return p
}
