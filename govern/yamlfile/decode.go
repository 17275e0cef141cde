package yamlfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"

	"github.com/mitrity/mitrity/govern/regfile"
)

// MaxFileBytes bounds a config or policy file. Both are hand-written; a file
// this large is a mistake, and reading it whole would be the gateway's problem.
const MaxFileBytes = 4 << 20

// maxDepth bounds nesting, so a hostile file cannot exhaust the stack, and
// maxSteps the values visited, so aliases cannot expand a small file into a
// huge one ("billion laughs").
const (
	maxDepth = 64
	maxSteps = 100_000
)

// maxBlockKeys bounds the keys of one block mapping, and maxDepth the
// nesting of flow collections, before the file reaches the parser: its time
// grows with the square of both (a 50 KB file of '[' took 5 GB and 6 s, a
// 2 MB mapping of 200,000 keys five minutes), so a small file could stall a
// start or a SIGHUP reload. Hand-written files are far below either.
const maxBlockKeys = 10_000

// Doc is a decoded file: its name and where each of its values sits, so that
// checks run after decoding can still point at the line.
type Doc struct {
	File  string
	nodes map[string]place
}

type place struct{ key, val token.Position }

// Loc is the position of the value at path. A path absent from the file
// (a default, a missing key) gets the position of its nearest ancestor that
// is present, so "required" errors point at the enclosing block. A nil Doc
// yields locations without a file or position.
func (d *Doc) Loc(path string) Loc { return d.loc(path, false) }

// KeyLoc is the position of the key of the entry at path: where a bad map
// key, or a key that should not be there, is written.
func (d *Doc) KeyLoc(path string) Loc { return d.loc(path, true) }

// Has reports whether the file wrote a value (possibly null) at path.
func (d *Doc) Has(path string) bool {
	if d == nil {
		return false
	}
	_, ok := d.nodes[path]
	return ok
}

func (d *Doc) loc(path string, key bool) Loc {
	l := Loc{Path: path}
	if d == nil {
		return l
	}
	l.File = d.File
	for p, ok := path, true; ok; p, ok = parent(p) {
		if pl, found := d.nodes[p]; found {
			pos := pl.val
			if key || p != path {
				pos = pl.key
			}
			l.Line, l.Col = pos.Line, pos.Column
			break
		}
	}
	return l
}

// ReadFile reads the file at path and decodes it as Decode does. The file
// name in errors is path as given.
func ReadFile(path string, v any) (*Doc, error) {
	f, err := regfile.Open(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, err // absent, unreadable: the caller words it
		}
		return nil, &Errors{List: []FieldError{{File: path, Msg: strings.TrimPrefix(err.Error(), path+": ")}}}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileBytes {
		return nil, &Errors{List: []FieldError{{File: path, Msg: fmt.Sprintf("larger than %d MiB", MaxFileBytes>>20)}}}
	}
	return Decode(path, data, v)
}

// Decode parses data, one YAML document named file, into v, a pointer to a
// wire struct. It is strict: an unknown key, a value of the wrong kind (a
// quoted number for an integer, 1.5 for an integer, "yes" for a boolean) is
// an error. Every such problem is reported, each with its position, as an
// *Errors. Null values leave the field alone, so wire structs use pointers
// to tell "absent" from "zero".
func Decode(file string, data []byte, v any) (doc *Doc, err error) {
	doc = &Doc{File: file, nodes: map[string]place{}}
	errs := &Errors{}
	// YAML allows one byte order mark at the start, which the parser
	// would read as part of the first key.
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	if fe, ok := notUTF8(file, data); ok {
		errs.Add(fe)
		return nil, errs.Err()
	}
	defer func() {
		// The parser is third-party code fed operator input; a panic in it
		// must become a refusal to start, not a crash without a message.
		if r := recover(); r != nil {
			doc, err = nil, &Errors{List: []FieldError{{File: file, Msg: fmt.Sprintf("cannot parse the file: %v", r)}}}
		}
	}()
	tokens := lexer.Tokenize(string(data))
	if fe, ok := tooComplex(file, tokens); ok {
		errs.Add(fe)
		return nil, errs.Err()
	}
	f, err := parser.Parse(tokens, 0)
	if err != nil {
		errs.Add(yamlError(file, err))
		return nil, errs.Err()
	}
	var body ast.Node
	for i, d := range f.Docs {
		if d == nil || d.Body == nil {
			continue
		}
		if body != nil {
			p := nodePos(d.Body)
			errs.Add(FieldError{File: file, Line: p.Line, Col: p.Column, Msg: fmt.Sprintf("document %d: the file must hold one YAML document", i+1)})
			return nil, errs.Err()
		}
		body = d.Body
	}
	if body == nil {
		return doc, nil
	}
	w := &walker{doc: doc, errs: errs, anchors: map[string]ast.Node{}}
	w.walk("", body, reflect.TypeOf(v), true)
	if err := errs.Err(); err != nil {
		return nil, err
	}
	// The walk is stricter than the decoder, so a document it accepts
	// decodes; the decoder still has the last word (aliases, merges).
	// A key repeated within one mapping is the parser's error; what the
	// decoder would call a duplicate past that is a key overriding a
	// merged one, which the walk made sure comes after the merge.
	dec := yaml.NewDecoder(bytes.NewReader(nil), yaml.DisallowUnknownField(), yaml.AllowDuplicateMapKey())
	if err := dec.DecodeFromNode(body, v); err != nil {
		errs.Add(yamlError(file, err))
		return nil, errs.Err()
	}
	return doc, nil
}

// notUTF8 reports the first byte of data that is not UTF-8, at its line and
// column. The parser would pass such bytes through into values, where a
// pattern, a path or a URL would then mean other bytes than the audit
// trail's JSON (which replaces them) and the operator's editor show.
func notUTF8(file string, data []byte) (FieldError, bool) {
	if utf8.Valid(data) {
		return FieldError{}, false
	}
	line, start := 1, 0
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n == 1 {
			col := utf8.RuneCount(data[start:i]) + 1
			return FieldError{File: file, Line: line, Col: col, Msg: fmt.Sprintf("the file is not UTF-8 (byte %#02x); save it as UTF-8", data[i])}, true
		}
		if r == '\n' {
			line, start = line+1, i+n
		}
		i += n
	}
	return FieldError{}, false
}

// tooComplex reports the first place where the tokens nest flow
// collections deeper than maxDepth or put more than maxBlockKeys keys in
// one block mapping. Keys are counted per column: a key closes the
// mappings indented deeper than it, and so does a sequence entry, which
// starts a new item. It counts on the lexer's tokens, which cost linear
// time, and may over-count (never under-count) one mapping's keys.
func tooComplex(file string, tokens token.Tokens) (FieldError, bool) {
	type open struct{ col, keys int }
	var block []open // the block mappings open, by column
	flow := 0
	at := func(tk *token.Token, format string, args ...any) (FieldError, bool) {
		fe := FieldError{File: file, Msg: fmt.Sprintf(format, args...)}
		if tk.Position != nil {
			fe.Line, fe.Col = tk.Position.Line, tk.Position.Column
		}
		return fe, true
	}
	closeDeeper := func(col int) {
		for len(block) > 0 && block[len(block)-1].col > col {
			block = block[:len(block)-1]
		}
	}
	for i, tk := range tokens {
		switch tk.Type {
		case token.SequenceStartType, token.MappingStartType:
			if flow++; flow > maxDepth {
				return at(tk, "flow collections nested more than %d levels deep", maxDepth)
			}
		case token.SequenceEndType, token.MappingEndType:
			flow = max(flow-1, 0)
		case token.SequenceEntryType:
			if flow == 0 && tk.Position != nil {
				closeDeeper(tk.Position.Column)
			}
		case token.MappingValueType:
			if flow > 0 || i == 0 || tokens[i-1].Position == nil {
				continue
			}
			key := tokens[i-1]
			col := key.Position.Column
			closeDeeper(col)
			if len(block) == 0 || block[len(block)-1].col < col {
				block = append(block, open{col: col})
			}
			top := &block[len(block)-1]
			if top.keys++; top.keys > maxBlockKeys {
				return at(key, "more than %d keys in one mapping", maxBlockKeys)
			}
		}
	}
	return FieldError{}, false
}

// yamlError turns a goccy error into a FieldError with its position.
func yamlError(file string, err error) FieldError {
	fe := FieldError{File: file, Msg: err.Error()}
	var ye yaml.Error
	if errors.As(err, &ye) {
		fe.Msg = ye.GetMessage()
		if tk := ye.GetToken(); tk != nil && tk.Position != nil {
			fe.Line, fe.Col = tk.Position.Line, tk.Position.Column
		}
	}
	return fe
}

type walker struct {
	doc     *Doc
	errs    *Errors
	anchors map[string]ast.Node
	depth   int
	steps   int
	deep    bool // reported nesting once
}

func (w *walker) fail(n ast.Node, path, format string, args ...any) {
	p := nodePos(n)
	w.errs.Add(FieldError{File: w.doc.File, Path: path, Line: p.Line, Col: p.Column, Msg: fmt.Sprintf(format, args...)})
}

// walk checks n against the wire type t, recording positions when record is
// set (false under an alias, whose nodes sit elsewhere in the file).
func (w *walker) walk(path string, n ast.Node, t reflect.Type, record bool) {
	w.depth++
	w.steps++
	defer func() { w.depth-- }()
	switch {
	case w.steps > maxSteps:
		if w.steps == maxSteps+1 {
			w.fail(n, path, "more than %d values (aliases expanding without bound?)", maxSteps)
		}
		return
	case w.depth > maxDepth:
		if !w.deep {
			w.deep = true
			w.fail(n, path, "nested more than %d levels deep", maxDepth)
		}
		return
	}
	n, ok := w.resolve(n)
	if !ok {
		return
	}
	if a, isAlias := n.(*ast.AliasNode); isAlias {
		// Check the anchored nodes here too; they sit elsewhere in the
		// file, so record nothing.
		w.walk(path, w.anchors[a.Value.GetToken().Value], t, false)
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		w.mapping(path, n, t, record)
	case reflect.Slice:
		seq, ok := n.(*ast.SequenceNode)
		if !ok {
			w.fail(n, path, "want a list, got %s", describe(n))
			return
		}
		for i, e := range seq.Values {
			p := Index(path, i)
			if record {
				pos := nodePos(e)
				w.doc.nodes[p] = place{key: pos, val: pos}
			}
			w.walk(p, e, t.Elem(), record)
		}
	case reflect.Bool:
		if n.Type() != ast.BoolType {
			w.fail(n, path, "want true or false, got %s", describe(n))
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		in, ok := n.(*ast.IntegerNode)
		if !ok {
			w.fail(n, path, "want an integer, got %s", describe(n))
			return
		}
		var i int64
		switch x := in.Value.(type) {
		case int64:
			i = x
		case uint64:
			if x > math.MaxInt64 {
				w.fail(n, path, "%s is out of range", in.Token.Value)
				return
			}
			i = int64(x)
		}
		if reflect.New(t).Elem().OverflowInt(i) {
			w.fail(n, path, "%s is out of range", in.Token.Value)
		}
	case reflect.String:
		switch n.Type() {
		case ast.StringType, ast.LiteralType:
		case ast.IntegerType, ast.FloatType, ast.BoolType, ast.InfinityType, ast.NanType:
			w.fail(n, path, "want a string, got %s (quote it to mean the text)", describe(n))
		default:
			w.fail(n, path, "want a string, got %s", describe(n))
		}
	}
}

// resolve unwraps tags and anchors (registering them) and reports false for
// a null value, which leaves the field at its default. An alias is returned
// as is; walk follows it.
func (w *walker) resolve(n ast.Node) (ast.Node, bool) {
	for n != nil {
		switch v := n.(type) {
		case *ast.TagNode:
			n = v.Value
		case *ast.AnchorNode:
			if v.Name != nil {
				w.anchors[v.Name.GetToken().Value] = v.Value
			}
			n = v.Value
		case *ast.NullNode:
			return nil, false
		case *ast.AliasNode:
			if v.Value == nil || w.anchors[v.Value.GetToken().Value] == nil {
				return nil, false // an unknown alias is the parser's error
			}
			return n, true
		default:
			return n, true
		}
	}
	return nil, false
}

// mapping checks a mapping against a struct (known keys only) or a map with
// string keys.
func (w *walker) mapping(path string, n ast.Node, t reflect.Type, record bool) {
	entries, ok := entriesOf(n)
	if !ok {
		w.fail(n, path, "want a mapping, got %s", describe(n))
		return
	}
	var fields map[string]reflect.Type
	if t.Kind() == reflect.Struct {
		fields = fieldTypes(t)
	}
	explicit := false // a key of this mapping's own came before
	for _, mv := range entries {
		if mv.Key == nil {
			continue
		}
		if mv.Key.Type() == ast.MergeKeyType {
			// A key of the mapping's own overrides what << merges in,
			// wherever it stands (YAML's merge rule); the decoder lets the
			// later of the two win, so the merge must come first.
			if explicit {
				w.fail(mv.Key, path, "the merge key << must come before the mapping's own keys, which override what it merges")
			}
			w.merge(path, mv.Value, t)
			continue
		}
		explicit = true
		name := keyText(mv.Key)
		p := Key(path, name)
		elem := t
		if fields != nil {
			ft, ok := fields[name]
			if !ok {
				w.fail(mv.Key, p, "unknown key %q%s", name, suggest(name, fields))
				continue
			}
			elem = ft
		} else {
			elem = t.Elem()
		}
		if record {
			kp := nodePos(mv.Key)
			vp := kp
			if mv.Value != nil && mv.Value.Type() != ast.NullType {
				vp = nodePos(mv.Value)
			}
			w.doc.nodes[p] = place{key: kp, val: vp}
		}
		w.walk(p, mv.Value, elem, record)
	}
}

// merge checks the mapping(s) a `<<` key merges in.
func (w *walker) merge(path string, v ast.Node, t reflect.Type) {
	v, ok := w.resolve(v)
	if !ok {
		return
	}
	if seq, isSeq := v.(*ast.SequenceNode); isSeq {
		// In YAML the first of the merged mappings that has a key wins; the
		// decoder would take the last. A key merged from two of them is
		// refused rather than read the way the author did not mean.
		from := map[string]bool{}
		for _, e := range seq.Values {
			for _, k := range w.mergedKeys(e) {
				if from[k] {
					w.fail(e, Key(path, k), "key %q is merged in from more than one mapping; set it in the mapping itself", k)
				}
				from[k] = true
			}
			w.merge(path, e, t)
		}
		return
	}
	if a, isAlias := v.(*ast.AliasNode); isAlias {
		v = w.anchors[a.Value.GetToken().Value]
	}
	w.mapping(path, v, t, false)
}

// mergedKeys is the keys a mapping merged by << brings in: its own and
// those it merges itself.
func (w *walker) mergedKeys(v ast.Node) []string {
	v, ok := w.resolve(v)
	if !ok {
		return nil
	}
	if a, isAlias := v.(*ast.AliasNode); isAlias {
		v = w.anchors[a.Value.GetToken().Value]
	}
	entries, _ := entriesOf(v)
	var keys []string
	for _, mv := range entries {
		switch {
		case mv.Key == nil:
		case mv.Key.Type() == ast.MergeKeyType:
			if seq, isSeq := mv.Value.(*ast.SequenceNode); isSeq {
				for _, e := range seq.Values {
					keys = append(keys, w.mergedKeys(e)...)
				}
			} else {
				keys = append(keys, w.mergedKeys(mv.Value)...)
			}
		default:
			keys = append(keys, keyText(mv.Key))
		}
	}
	return keys
}

// entriesOf is a mapping's entries; false when n is no mapping.
func entriesOf(n ast.Node) ([]*ast.MappingValueNode, bool) {
	switch m := n.(type) {
	case *ast.MappingNode:
		return m.Values, true
	case *ast.MappingValueNode:
		return []*ast.MappingValueNode{m}, true
	}
	return nil, false
}

func fieldTypes(t reflect.Type) map[string]reflect.Type {
	m := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = strings.ToLower(f.Name)
		}
		m[name] = f.Type
	}
	return m
}

func keyText(k ast.MapKeyNode) string {
	if s, ok := k.(*ast.StringNode); ok {
		return s.Value
	}
	if tk := k.GetToken(); tk != nil {
		return tk.Value
	}
	return k.String()
}

// nodePos is where a person would say the node starts: the first key of a
// block mapping rather than its first ':'.
func nodePos(n ast.Node) token.Position {
	switch v := n.(type) {
	case *ast.MappingNode:
		if !v.IsFlowStyle && len(v.Values) > 0 && v.Values[0].Key != nil {
			return nodePos(v.Values[0].Key)
		}
	case *ast.MappingValueNode:
		if v.Key != nil {
			return nodePos(v.Key)
		}
	}
	if n == nil {
		return token.Position{}
	}
	if tk := n.GetToken(); tk != nil && tk.Position != nil {
		return *tk.Position
	}
	return token.Position{}
}

func describe(n ast.Node) string {
	switch v := n.(type) {
	case *ast.StringNode:
		s := v.Value
		if len(s) > 40 {
			s = s[:40] + "..."
		}
		return strconv.Quote(s)
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.LiteralNode:
		return "a block of text"
	}
	if tk := n.GetToken(); tk != nil {
		return tk.Value
	}
	return n.Type().YAMLName()
}

// suggest names the known key closest to a misspelt one, or all of them
// when there are few.
func suggest(name string, fields map[string]reflect.Type) string {
	best, bestD := "", 3
	for f := range fields {
		if d := distance(name, f); d < bestD || d == bestD && f < best {
			best, bestD = f, d
		}
	}
	switch {
	case best != "":
		return fmt.Sprintf(" (did you mean %q?)", best)
	case len(fields) <= 6:
		// A short list is worth reading whole.
		return " (want one of " + strings.Join(slices.Sorted(maps.Keys(fields)), ", ") + ")"
	}
	return ""
}

// distance is the Levenshtein distance, enough to catch a typo.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
