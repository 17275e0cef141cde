package yamlfile

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

type wire struct {
	Name  *string           `yaml:"name"`
	On    *bool             `yaml:"on"`
	Count *int              `yaml:"count"`
	Small *int8             `yaml:"small"`
	List  *[]int            `yaml:"list"`
	Env   map[string]string `yaml:"env"`
	Inner *struct {
		Mode *string `yaml:"mode"`
	} `yaml:"inner"`
	Items []struct {
		Pattern string `yaml:"pattern"`
	} `yaml:"items"`
}

// lines decodes src and returns its problems, one string per line.
func lines(t *testing.T, src string) []string {
	t.Helper()
	var w wire
	_, err := Decode("f.yaml", []byte(src), &w)
	if err == nil {
		return nil
	}
	var errs *Errors
	assert.Assert(t, errors.As(err, &errs), "%T: %v", err, err)
	return strings.Split(errs.Error(), "\n")
}

func TestDecodeProblems(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src string
		want      []string
	}{
		{"good", "name: x\non: true\ncount: 3\nlist: [1, 2]\nenv: {A: b}\ninner: {mode: m}\nitems: [{pattern: p}]\n", nil},
		{"empty", "", nil},
		{"comment only", "# nothing\n", nil},
		{"nulls keep defaults", "name:\ncount: ~\ninner:\n", nil},
		{"unknown key with suggestion", "nmae: x\n", []string{`f.yaml:1:1: nmae: unknown key "nmae" (did you mean "name"?)`}},
		{"unknown key far from any", "zzzzzzzz: 1\n", []string{`f.yaml:1:1: zzzzzzzz: unknown key "zzzzzzzz"`}},
		{"nested unknown", "inner:\n  mood: x\n", []string{`f.yaml:2:3: inner.mood: unknown key "mood" (did you mean "mode"?)`}},
		{"quoted bool", "on: \"true\"\n", []string{`f.yaml:1:5: on: want true or false, got "true"`}},
		{"yes is not a bool", "on: yes\n", []string{`f.yaml:1:5: on: want true or false, got "yes"`}},
		{"float for int", "count: 1.5\n", []string{`f.yaml:1:8: count: want an integer, got 1.5`}},
		{"quoted int", "count: \"3\"\n", []string{`f.yaml:1:8: count: want an integer, got "3"`}},
		{"overflow", "small: 300\n", []string{`f.yaml:1:8: small: 300 is out of range`}},
		{"huge", "count: 99999999999999999999\n", []string{`f.yaml:1:8: count: want an integer, got "99999999999999999999"`}},
		{"int for string", "name: 12\n", []string{`f.yaml:1:7: name: want a string, got 12 (quote it to mean the text)`}},
		{"list for string", "name: [a]\n", []string{`f.yaml:1:7: name: want a string, got a list`}},
		{"scalar for list", "list: 3\n", []string{`f.yaml:1:7: list: want a list, got 3`}},
		{"scalar for struct", "inner: x\n", []string{`f.yaml:1:8: inner: want a mapping, got "x"`}},
		{"list for map", "env: [a]\n", []string{`f.yaml:1:6: env: want a mapping, got a list`}},
		{"map value type", "env:\n  A: [x]\n", []string{`f.yaml:2:6: env.A: want a string, got a list`}},
		{"dotted key is quoted", "env:\n  a.b: [x]\n", []string{`f.yaml:2:8: env["a.b"]: want a string, got a list`}},
		{"element", "items:\n  - pattern: a\n  - patern: b\n", []string{`f.yaml:3:5: items[1].patern: unknown key "patern" (did you mean "pattern"?)`}},
		{"top level not a mapping", "- a\n", []string{`f.yaml:1:1: want a mapping, got a list`}},
		{"every problem", "nmae: x\non: 1\ncount: x\nlist: [1, a]\n", []string{
			`f.yaml:1:1: nmae: unknown key "nmae" (did you mean "name"?)`,
			`f.yaml:2:5: on: want true or false, got 1`,
			`f.yaml:3:8: count: want an integer, got "x"`,
			`f.yaml:4:11: list[1]: want an integer, got "a"`,
		}},
		{"syntax", "list: [1\n", []string{`f.yaml:1:7: sequence end token ']' not found`}},
		{"duplicate key", "name: a\nname: b\n", []string{`f.yaml:2:1: mapping key "name" already defined at [1:1]`}},
		{"two documents", "name: a\n---\nname: b\n", []string{`f.yaml:3:1: document 2: the file must hold one YAML document`}},
		{"alias checked", "inner: &i {mode: 3}\n", []string{`f.yaml:1:18: inner.mode: want a string, got 3 (quote it to mean the text)`}},
		{"alias target checked at use", "env: &e {A: b}\ninner: *e\n", []string{`f.yaml:1:10: inner.A: unknown key "A" (want one of mode)`}},
		{"merge checked", "env: &e {A: b}\ninner:\n  <<: *e\n", []string{`f.yaml:1:10: inner.A: unknown key "A" (want one of mode)`}},
		{"merge after an own key", "env:\n  A: a\n  <<: {A: b}\n", []string{`f.yaml:3:3: env: the merge key << must come before the mapping's own keys, which override what it merges`}},
		{"key merged from two mappings", "env:\n  <<: [{A: a}, {A: b}]\n", []string{`f.yaml:2:16: env.A: key "A" is merged in from more than one mapping; set it in the mapping itself`}},
		{"duplicate key in a flow mapping", "env: {A: a, A: b}\n", []string{`f.yaml:1:13: mapping key "A" already defined at [1:7]`}},
		{"duplicate key beside a merge", "env:\n  <<: {A: a}\n  B: b\n  B: c\n", []string{`f.yaml:4:3: mapping key "B" already defined at [3:3]`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.DeepEqual(t, lines(t, tt.src), tt.want)
		})
	}
}

// TestDecodeMergeOverride: a key after `<<` overrides the merged value, in
// a struct and in a map (the normal use of merge keys: a base, then what
// differs).
func TestDecodeMergeOverride(t *testing.T) {
	t.Parallel()
	var w wire
	_, err := Decode("f.yaml", []byte("inner: &i\n  mode: framework\nenv:\n  <<: {A: a, B: b}\n  B: c\n"), &w)
	assert.NilError(t, err)
	assert.DeepEqual(t, w.Env, map[string]string{"A": "a", "B": "c"})
	var v struct {
		Base *struct {
			Mode *string `yaml:"mode"`
		} `yaml:"base"`
		Inner *struct {
			Mode *string `yaml:"mode"`
		} `yaml:"inner"`
	}
	_, err = Decode("f.yaml", []byte("base: &b\n  mode: framework\ninner:\n  <<: *b\n  mode: governed_shell\n"), &v)
	assert.NilError(t, err)
	assert.Equal(t, *v.Base.Mode, "framework")
	assert.Equal(t, *v.Inner.Mode, "governed_shell")
}

func TestDecodeValues(t *testing.T) {
	t.Parallel()
	var w wire
	_, err := Decode("f.yaml", []byte("name: &n x\ninner: {mode: *n}\nlist: []\nenv:\n  <<: {A: a}\n  B: b\n"), &w)
	assert.NilError(t, err)
	assert.Equal(t, *w.Name, "x")
	assert.Equal(t, *w.Inner.Mode, "x")
	assert.Assert(t, w.List != nil && len(*w.List) == 0, "an explicit [] is not absent")
	assert.DeepEqual(t, w.Env, map[string]string{"A": "a", "B": "b"})
	assert.Assert(t, w.On == nil && w.Count == nil)
}

// node nests lists in lists, so the walk follows every alias.
type node []node

func TestAliasExpansionBounded(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("a0: &a0 [[], [], [], [], [], [], [], [], [], []]\n")
	for i := 1; i < 9; i++ {
		b.WriteString("a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [")
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a" + string(rune('0'+i-1)))
		}
		b.WriteString("]\n")
	}
	var w map[string]node
	_, err := Decode("f.yaml", []byte(b.String()), &w)
	assert.ErrorContains(t, err, "aliases expanding without bound")
}

func TestDepthBounded(t *testing.T) {
	t.Parallel()
	src := "d: " + strings.Repeat("[", 200) + strings.Repeat("]", 200) + "\n"
	var w map[string]node
	_, err := Decode("f.yaml", []byte(src), &w)
	assert.ErrorContains(t, err, "nested more than 64 levels deep")
	assert.Equal(t, strings.Count(err.Error(), "\n"), 0, "reported once")
}

func TestLoc(t *testing.T) {
	t.Parallel()
	var w wire
	doc, err := Decode("f.yaml", []byte("inner:\n  mode: x\nenv:\n  a.b: c\nlist: [1, 2]\nname:\n"), &w)
	assert.NilError(t, err)
	tests := []struct {
		path      string
		key       bool
		line, col int
	}{
		{"inner.mode", false, 2, 9},
		{"inner.mode", true, 2, 3},
		{"inner.absent", false, 1, 1}, // the nearest ancestor's key
		{`env["a.b"]`, false, 4, 8},
		{`env["a.b"]`, true, 4, 3},
		{"list[1]", false, 5, 11},
		{"list[7]", false, 5, 1},
		{"name", false, 6, 1}, // null value: the key
		{"nowhere.at.all", false, 0, 0},
	}
	for _, tt := range tests {
		l := doc.Loc(tt.path)
		if tt.key {
			l = doc.KeyLoc(tt.path)
		}
		assert.Check(t, is.DeepEqual(l, Loc{File: "f.yaml", Path: tt.path, Line: tt.line, Col: tt.col}), tt.path)
	}
	assert.Check(t, doc.Has("name"))
	assert.Check(t, !doc.Has("count"))
	var nilDoc *Doc
	assert.Equal(t, nilDoc.Loc("a").Errorf("m").Error(), "a: m")
}

func TestFieldErrorAndErrors(t *testing.T) {
	t.Parallel()
	assert.Equal(t, FieldError{File: "f", Path: "a.b", Line: 3, Col: 4, Msg: "m"}.Error(), "f:3:4: a.b: m")
	assert.Equal(t, FieldError{File: "f", Path: "a.b", Msg: "m"}.Error(), "f: a.b: m")
	assert.Equal(t, FieldError{File: "f", Line: 1, Col: 1, Msg: "m"}.Error(), "f:1:1: m")
	e := &Errors{}
	assert.NilError(t, e.Err())
	e.Add(FieldError{Msg: "no position"}, FieldError{Line: 9, Col: 1, Msg: "nine"}, FieldError{Line: 2, Col: 5, Msg: "two"})
	assert.Equal(t, e.Err().Error(), "2:5: two\n9:1: nine\nno position")
}

func TestPaths(t *testing.T) {
	t.Parallel()
	assert.Equal(t, Key("", "exec"), "exec")
	assert.Equal(t, Key("exec", "shell"), "exec.shell")
	assert.Equal(t, Key("files", "id.json"), `files["id.json"]`)
	assert.Equal(t, Key("", ""), `[""]`)
	assert.Equal(t, Index("a.b", 2), "a.b[2]")
	for path, want := range map[string]string{
		"a.b":             "a",
		"a[2]":            "a",
		`a["x.y"]`:        "a",
		`a["x]"]`:         "a",
		`a["x"].b`:        `a["x"]`,
		"a":               "",
		`a["q\"[1]"]`:     "a",
		"profiles.p.r[0]": "profiles.p.r",
	} {
		got, ok := parent(path)
		assert.Check(t, ok)
		assert.Check(t, is.Equal(got, want), path)
	}
	_, ok := parent("")
	assert.Check(t, !ok)
}

func TestReadFile(t *testing.T) {
	t.Parallel()
	var w wire
	_, err := ReadFile(t.TempDir()+"/absent.yaml", &w)
	assert.Assert(t, errors.Is(err, errFileNotExist()))
	big := t.TempDir() + "/big.yaml"
	assert.NilError(t, writeFile(big, strings.Repeat("#", MaxFileBytes+1)))
	_, err = ReadFile(big, &w)
	assert.ErrorContains(t, err, "larger than 4 MiB")
}

// TestDecodeEncoding: a file is UTF-8. A leading byte order mark (what
// some editors write) is allowed, as YAML allows it, and is not part of
// the first key; bytes that are not UTF-8 (a Latin-1 or UTF-16 file) are
// refused at their place instead of reaching a value as they are.
func TestDecodeEncoding(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src string
		want      []string
	}{
		{"byte order mark", "\ufeffname: x\n", nil},
		{"latin-1 in a value", "name: x\nenv:\n  A: \"caf\xe9\"\n", []string{`f.yaml:3:10: the file is not UTF-8 (byte 0xe9); save it as UTF-8`}},
		{"latin-1 in a key", "env:\n  \xe9: b\n", []string{`f.yaml:2:3: the file is not UTF-8 (byte 0xe9); save it as UTF-8`}},
		{"utf-16", "\xff\xfen\x00a\x00", []string{`f.yaml:1:1: the file is not UTF-8 (byte 0xff); save it as UTF-8`}},
		{"byte order mark twice", "\ufeff\ufeffname: x\n", []string{`f.yaml:1:1: ["\ufeffname"]: unknown key "\ufeffname"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.DeepEqual(t, lines(t, tt.src), tt.want)
		})
	}
	var w wire
	_, err := Decode("f.yaml", []byte("\ufeffname: x\n"), &w)
	assert.NilError(t, err)
	assert.Equal(t, *w.Name, "x")
}

// TestReadFileNotRegular: a config or policy path that names a named pipe
// is refused at once; opening it would wait for a writer, and a gateway
// that never starts (or a SIGHUP reload that never ends, and with it every
// later audit reopen) says nothing about why. A directory is refused too.
func TestReadFileNotRegular(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fifo := dir + "/fifo.yaml"
	assert.NilError(t, mkfifo(fifo))
	for _, p := range []string{fifo, dir} {
		done := make(chan error, 1)
		go func() {
			var w wire
			_, err := ReadFile(p, &w)
			done <- err
		}()
		select {
		case err := <-done:
			assert.ErrorContains(t, err, p+": not a regular file")
		case <-time.After(5 * time.Second):
			t.Fatalf("ReadFile(%s) still waiting after 5s", p)
		}
	}
}

// TestParserCostBounded: what makes the parser's time grow with the
// square of the file (flow collections nested deep, one block mapping of
// very many keys) is refused from the lexer's tokens, at its place, before
// the parser sees it. Before, 50 KB of '[' took 5 GB and 6 s to refuse and
// a 2 MB mapping of 200,000 keys five minutes to accept. Many keys spread
// over many mappings (a feed's list of entries) stay accepted.
func TestParserCostBounded(t *testing.T) {
	t.Parallel()
	keys := func(indent string, from, n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "%sK%d: v\n", indent, from+i)
		}
		return b.String()
	}
	tests := []struct {
		name, src string
		want      []string
	}{
		{"flow nested too deep", "list: " + strings.Repeat("[", 100) + strings.Repeat("]", 100) + "\n",
			[]string{`f.yaml:1:71: flow collections nested more than 64 levels deep`}},
		{"flow nested unclosed", "list: " + strings.Repeat("{a: ", 1000) + "\n",
			[]string{`f.yaml:1:263: flow collections nested more than 64 levels deep`}},
		{"one mapping of too many keys", "env:\n" + keys("  ", 0, maxBlockKeys+1),
			[]string{fmt.Sprintf(`f.yaml:%d:3: more than %d keys in one mapping`, maxBlockKeys+2, maxBlockKeys)}},
		{"keys in two mappings", "env:\n" + keys("  ", 0, maxBlockKeys*3/5) + "inner:\n  mode: m\nenv2:\n" + keys("  ", 0, maxBlockKeys*3/5), nil},
		{"keys in many list items", "items:\n" + strings.Repeat("  - pattern: p\n", maxBlockKeys*6/5), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var w struct {
				List  any               `yaml:"list"`
				Env   map[string]string `yaml:"env"`
				Env2  map[string]string `yaml:"env2"`
				Inner *struct {
					Mode *string `yaml:"mode"`
				} `yaml:"inner"`
				Items []struct {
					Pattern string `yaml:"pattern"`
				} `yaml:"items"`
			}
			_, err := Decode("f.yaml", []byte(tt.src), &w)
			var got []string
			if err != nil {
				got = strings.Split(err.Error(), "\n")
			}
			assert.DeepEqual(t, got, tt.want)
		})
	}
	// A 1 MiB file of it is refused at once (before: out of memory).
	start := time.Now()
	var w wire
	_, err := Decode("f.yaml", []byte("list: "+strings.Repeat("[", 1<<20)), &w)
	assert.ErrorContains(t, err, "nested more than 64 levels deep")
	assert.Assert(t, time.Since(start) < 10*time.Second, "took %v", time.Since(start))
}
