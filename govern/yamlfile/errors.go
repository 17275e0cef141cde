package yamlfile

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Loc is where a value sits in a file: the field path and its position.
// Line and Col are 1-based; zero when the value did not come from the file
// (a default, or a struct built in code).
type Loc struct {
	File, Path string
	Line, Col  int
}

// Errorf returns a FieldError at l.
func (l Loc) Errorf(format string, args ...any) FieldError {
	return FieldError{File: l.File, Path: l.Path, Line: l.Line, Col: l.Col, Msg: fmt.Sprintf(format, args...)}
}

// FieldError is one problem with one field. Its Error is the line an
// operator reads: `file:line:col: path: message`.
type FieldError struct {
	File, Path string
	Line, Col  int
	Msg        string
}

func (e FieldError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		if e.File != "" {
			b.WriteString(":")
		}
		fmt.Fprintf(&b, "%d:%d", e.Line, e.Col)
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is every problem found in one file. Validation collects them all
// rather than stopping at the first, so one run of `validate` shows the
// operator the whole list.
type Errors struct {
	List []FieldError
}

// Add appends problems.
func (e *Errors) Add(fe ...FieldError) { e.List = append(e.List, fe...) }

// Err returns nil when there is no problem, else e with its problems in file
// order (those without a position last).
func (e *Errors) Err() error {
	if len(e.List) == 0 {
		return nil
	}
	slices.SortStableFunc(e.List, func(a, b FieldError) int {
		if (a.Line == 0) != (b.Line == 0) {
			if a.Line == 0 {
				return 1
			}
			return -1
		}
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col))
	})
	return e
}

// Error prints one problem per line.
func (e *Errors) Error() string {
	lines := make([]string, len(e.List))
	for i, fe := range e.List {
		lines[i] = fe.Error()
	}
	return strings.Join(lines, "\n")
}

// Key is the path of key under parent. Keys that are not plain words are
// quoted, so a path never reads ambiguously (files["id.json"]).
func Key(parent, key string) string {
	plain := key != ""
	for _, r := range key {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			plain = false
			break
		}
	}
	switch {
	case !plain:
		return parent + "[" + strconv.Quote(key) + "]"
	case parent == "":
		return key
	}
	return parent + "." + key
}

// Index is the path of element i of the sequence at parent.
func Index(parent string, i int) string {
	return parent + "[" + strconv.Itoa(i) + "]"
}

// parent strips the last segment of a path built by Key and Index.
func parent(path string) (string, bool) {
	if path == "" {
		return "", false
	}
	if strings.HasSuffix(path, "]") {
		// The last '[' outside a quoted key opens the segment.
		if i := strings.LastIndex(path, "[\""); i >= 0 && strings.HasSuffix(path, "\"]") {
			if _, err := strconv.Unquote(path[i+1 : len(path)-1]); err == nil {
				return path[:i], true
			}
		}
		if i := strings.LastIndexByte(path, '['); i >= 0 {
			return path[:i], true
		}
	}
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[:i], true
	}
	return "", true
}
