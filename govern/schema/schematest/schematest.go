// Package schematest holds what the loaders' tests use to keep the JSON
// Schemas true: comparing where the loader and the schema refuse a file,
// and finding the YAML examples in the docs.
package schematest

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/mitrity/mitrity/govern/schema"
	"github.com/mitrity/mitrity/govern/yamlfile"
)

// Related reports whether a schema problem at l and a loader error at p
// are about the same place: the same value, or l is the mapping that holds
// p (an unknown key, a key a pattern refuses), or l lies inside p (an entry
// whose parts the schema checks one by one).
func Related(l, p string) bool {
	return l == p || l == parent(p) || inside(l, p)
}

func inside(l, p string) bool {
	return p == "" || strings.HasPrefix(l, p+".") || strings.HasPrefix(l, p+"[")
}

// parent strips the last segment of a path built by yamlfile.Key and
// yamlfile.Index.
func parent(p string) string {
	if strings.HasSuffix(p, "]") {
		if i := strings.LastIndex(p, "[\""); i >= 0 && strings.HasSuffix(p, "\"]") {
			return p[:i]
		}
		if i := strings.LastIndexByte(p, '['); i >= 0 {
			return p[:i]
		}
	}
	if i := strings.LastIndexByte(p, '.'); i >= 0 {
		return p[:i]
	}
	return ""
}

// Agree compares the loader's errors for one file with the schema's
// problems and returns each disagreement: a loader error no related schema
// problem names (unless exempt lists its path, with why the schema cannot
// say it), an exempt error the schema does name (the list is stale), and a
// schema problem related to no loader error (the schema refuses more than
// the loader).
func Agree(loader []yamlfile.FieldError, problems []schema.Problem, exempt map[string]string) []string {
	var out []string
	related := func(p string) []string {
		var got []string
		for _, pr := range problems {
			if Related(pr.Path, p) {
				got = append(got, pr.String())
			}
		}
		return got
	}
	for _, fe := range loader {
		got := related(fe.Path)
		_, ex := exempt[fe.Path]
		switch {
		case ex && len(got) > 0:
			out = append(out, fmt.Sprintf("%s is listed as beyond the schema (%s), but the schema refuses it: %s; drop it from the list", fe.Path, exempt[fe.Path], strings.Join(got, "; ")))
		case !ex && len(got) == 0:
			out = append(out, fmt.Sprintf("the loader refuses %q; the schema lets it through: make the schema refuse it, or list the path with why no schema can", fe.Error()))
		}
	}
	for p := range exempt {
		found := false
		for _, fe := range loader {
			found = found || fe.Path == p
		}
		if !found {
			out = append(out, fmt.Sprintf("%s is listed as beyond the schema, but the loader does not refuse it", p))
		}
	}
	for _, pr := range problems {
		found := false
		for _, fe := range loader {
			found = found || Related(pr.Path, fe.Path)
		}
		if !found {
			out = append(out, fmt.Sprintf("the schema refuses %s, which the loader does not", pr))
		}
	}
	return out
}

// Block is one ```yaml block of a Markdown file.
type Block struct {
	Line int // of the block's first line of YAML, 1-based
	Text string
}

var fence = regexp.MustCompile("(?m)^[ \t]*```yaml[ \t]*\n")

// YAMLBlocks returns the ```yaml blocks of md, unindented as far as their
// opening fence is (a block in a list item).
func YAMLBlocks(md string) []Block {
	var out []Block
	for _, m := range fence.FindAllStringIndex(md, -1) {
		indent := len(md[m[0]:m[1]]) - len(strings.TrimLeft(md[m[0]:m[1]], " \t"))
		rest := md[m[1]:]
		end := strings.Index(rest, "```")
		if end < 0 {
			continue
		}
		var lines []string
		for _, l := range strings.SplitAfter(rest[:end], "\n") {
			if len(l) >= indent && strings.TrimSpace(l[:indent]) == "" {
				l = l[indent:]
			}
			lines = append(lines, l)
		}
		out = append(out, Block{Line: strings.Count(md[:m[1]], "\n") + 1, Text: strings.Join(lines, "")})
	}
	return out
}
