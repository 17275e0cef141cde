package schema

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/mitrity/mitrity/govern/yamlfile"
)

// Mismatches compares the schema's shape with wire, the loader's wire
// struct (a yaml-tagged struct whose scalars are pointers, maps and
// slices), and says where they differ: a key one has and the other lacks,
// a value of another kind, a pointer field whose schema refuses null
// (the loaders read null as absent), a mapping that allows unknown keys,
// and a leaf without a description (what an editor shows). The wire
// struct is what the loader decodes, so an empty result means the schema
// names every key the loader reads, with its kind, and no other.
func (v *Validator) Mismatches(wire reflect.Type) []string {
	var out []string
	shape(&out, "", v.s, wire, nullAbsent)
	return out
}

// How null in a value of pointer type compares: a key's value (null reads
// as the key left out, so the schema allows null unless the key is
// required, and then refuses it), or an element (a map's value, a list's
// item: null there is a zero value the loader judges, no rule).
type nulls int

const (
	nullAbsent nulls = iota
	nullRequired
	nullElement
)

// shape compares s with t at path p.
func shape(out *[]string, p string, s *jsonschema.Schema, t reflect.Type, null nulls) {
	at := p
	if at == "" {
		at = "(top level)"
	}
	fail := func(format string, args ...any) {
		*out = append(*out, at+": "+fmt.Sprintf(format, args...))
	}
	if t.Kind() == reflect.Pointer {
		switch allows := types(s).has("null"); {
		case null == nullAbsent && !allows:
			fail("the loader reads null as absent; the schema refuses it")
		case null == nullRequired && allows:
			fail("required, and the loader reads null as absent; the schema allows it")
		}
		t = t.Elem()
	}
	want := map[reflect.Kind]string{reflect.Bool: "boolean", reflect.String: "string", reflect.Slice: "array",
		reflect.Struct: "object", reflect.Map: "object",
		reflect.Int: "integer", reflect.Int8: "integer", reflect.Int16: "integer", reflect.Int32: "integer", reflect.Int64: "integer"}[t.Kind()]
	if want == "" {
		fail("wire type %s has no schema kind", t)
		return
	}
	if got := types(s); !got.has(want) || len(got.without("null")) != 1 {
		fail("the loader reads %s; the schema allows %v", want, got.without("null"))
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		props := properties(s)
		if ap, ok := additional(s).(bool); !ok || ap {
			fail("unknown keys are not refused (want additionalProperties: false)")
		}
		fields := map[string]reflect.Type{}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if !f.IsExported() || name == "-" {
				continue
			}
			if name == "" {
				name = strings.ToLower(f.Name)
			}
			fields[name] = f.Type
		}
		for _, name := range sortedKeys(fields) {
			ps, ok := props[name]
			if !ok {
				fail("the loader reads key %q; the schema lacks it", name)
				continue
			}
			ft := fields[name]
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if k := ft.Kind(); k != reflect.Struct && k != reflect.Map && description(ps) == "" {
				*out = append(*out, yamlfile.Key(p, name)+": no description")
			}
			n := nullAbsent
			if slices.Contains(required(s), name) {
				n = nullRequired
			}
			shape(out, yamlfile.Key(p, name), ps, fields[name], n)
		}
		for _, name := range sortedKeys(props) {
			if _, ok := fields[name]; !ok {
				fail("the schema has key %q; the loader refuses it", name)
			}
		}
	case reflect.Map:
		if len(properties(s)) > 0 {
			fail("a map of any key; the schema lists properties")
		}
		elem, ok := additional(s).(*jsonschema.Schema)
		if !ok {
			fail("a map: want additionalProperties as the schema of its values")
			return
		}
		shape(out, p+"[*]", elem, t.Elem(), nullElement)
	case reflect.Slice:
		items := items(s)
		if items == nil {
			fail("a list: want items")
			return
		}
		shape(out, p+"[*]", items, t.Elem(), nullElement)
	}
}

type typeSet []string

func (ts typeSet) has(t string) bool { return slices.Contains(ts, t) }

func (ts typeSet) without(t string) typeSet {
	return slices.DeleteFunc(slices.Clone(ts), func(x string) bool { return x == t })
}

// types are the JSON types s admits, from type, enum, $ref, allOf and
// anyOf (whose branches add up).
func types(s *jsonschema.Schema) typeSet {
	var ts typeSet
	add := func(t string) {
		if !ts.has(t) {
			ts = append(ts, t)
		}
	}
	if s.Types != nil {
		for _, t := range s.Types.ToStrings() {
			add(t)
		}
	}
	if s.Enum != nil {
		for _, e := range s.Enum.Values {
			switch e.(type) {
			case nil:
				add("null")
			case string:
				add("string")
			case bool:
				add("boolean")
			default:
				add("number")
			}
		}
	}
	for _, sub := range append(append([]*jsonschema.Schema{s.Ref}, s.AllOf...), s.AnyOf...) {
		if sub != nil {
			for _, t := range types(sub) {
				add(t)
			}
		}
	}
	slices.Sort(ts)
	return ts
}

func properties(s *jsonschema.Schema) map[string]*jsonschema.Schema {
	if s.Ref != nil && s.Properties == nil {
		return properties(s.Ref)
	}
	return s.Properties
}

func required(s *jsonschema.Schema) []string {
	if s.Ref != nil && s.Required == nil {
		return required(s.Ref)
	}
	return s.Required
}

func additional(s *jsonschema.Schema) any {
	if s.Ref != nil && s.AdditionalProperties == nil {
		return additional(s.Ref)
	}
	return s.AdditionalProperties
}

func items(s *jsonschema.Schema) *jsonschema.Schema {
	if s.Ref != nil && s.Items2020 == nil {
		return items(s.Ref)
	}
	return s.Items2020
}

func description(s *jsonschema.Schema) string {
	for s != nil {
		if s.Description != "" {
			return s.Description
		}
		s = s.Ref
	}
	return ""
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
