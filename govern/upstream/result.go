package upstream

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mitrity/mitrity/govern/audit"
	"github.com/mitrity/mitrity/govern/inject"
)

// Redact takes secrets out of one string: every injected credential value
// in all its forms, then the agent's DLP detectors. It returns the text
// and how many it replaced.
type Redact func(string) (string, int)

// Seen is what came back from an upstream, as the audit log keeps it.
type Seen struct {
	// Bytes and SHA256 describe the result as the upstream sent it
	// (before redaction).
	Bytes  int
	SHA256 string
	// Redactions counts what Redact replaced.
	Redactions int
	Truncated  bool
	// Injection are the scanner's findings in what came back.
	Injection []inject.Finding
}

// Clean passes every string of an upstream's answer (text content,
// structuredContent, embedded resources, prompt messages, _meta: every
// string value and object key, wherever it sits) through redact, and
// scans the redacted strings for prompt injection. v is a result of the
// SDK (*mcp.CallToolResult, *mcp.ReadResourceResult, *mcp.GetPromptResult)
// and is replaced by its cleaned copy. A result that cannot be read as
// JSON is an error: it is never passed on unread.
func Clean[T any](v *T, redact Redact) (Seen, error) {
	raw, err := marshal(v)
	if err != nil {
		return Seen{}, fmt.Errorf("reading the upstream's answer: %w", err)
	}
	seen := Seen{Bytes: len(raw), SHA256: audit.HashOf(raw)}
	count := func(s string) string {
		r, n := redact(s)
		seen.Redactions += n
		return r
	}
	// The SDK's own results are cleaned in place, field by field (one pass
	// over a large text instead of four through JSON); anything else goes
	// through the JSON walk below.
	// (v is the result itself when T is the result type, the pointer to
	// it when T is the pointer type: the forwarder has the first.)
	if texts, prose, _, ok := typed(any(v), count); ok {
		seen.Injection = scan(texts, prose)
		return seen, nil
	}
	if texts, prose, _, ok := typed(any(*v), count); ok {
		seen.Injection = scan(texts, prose)
		return seen, nil
	}
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return seen, fmt.Errorf("reading the upstream's answer: %w", err)
	}
	var texts, prose []string
	tree = walk(tree, "", func(s, under string) string {
		r, n := redact(s)
		seen.Redactions += n
		texts = append(texts, r)
		if under == "text" {
			prose = append(prose, r)
		}
		return r
	})
	seen.Injection = scan(texts, prose)
	out, err := json.Marshal(tree)
	if err != nil {
		return seen, fmt.Errorf("rewriting the upstream's answer: %w", err)
	}
	var clean T
	if err := json.Unmarshal(out, &clean); err != nil {
		return seen, fmt.Errorf("rewriting the upstream's answer: %w", err)
	}
	*v = clean
	return seen, nil
}

// marshal is v's JSON for its hash and size: an SDK result's own
// MarshalJSON, called directly (json.Marshal would compact its output
// again, a second pass over a large text).
func marshal[T any](v *T) ([]byte, error) {
	if m, ok := any(*v).(json.Marshaler); ok && !isNil(*v) {
		return m.MarshalJSON()
	}
	return json.Marshal(v)
}

func isNil(v any) bool {
	switch x := v.(type) {
	case *mcp.CallToolResult:
		return x == nil
	case *mcp.ReadResourceResult:
		return x == nil
	case *mcp.GetPromptResult:
		return x == nil
	}
	return v == nil
}

// scan runs the injection scanner over the strings of an answer, each on
// its own, and over its prose (the "text" of its content blocks and
// resources, in order) as one text: an injection split over two content
// blocks is still one text to a model. The prose is joined on its own,
// not with every string of the answer: between two blocks' texts sit
// their keys and "type" words, which would keep the halves apart.
func scan(texts, prose []string) []inject.Finding {
	var fs []inject.Finding
	for _, t := range texts {
		fs = append(fs, inject.Scan(t)...)
	}
	if len(fs) == 0 && len(prose) > 1 {
		fs = inject.Scan(strings.Join(prose, "\n"))
	}
	return fs
}

// objectKey is what walk passes as under for an object key itself.
const objectKey = "\x00key"

// walk replaces every string of v (values and object keys) with f's,
// depth first, keys in sorted order, arrays in order. under is the key
// the value sits under (an array's elements sit under the array's key),
// objectKey for a key.
func walk(v any, under string, f func(s, under string) string) any {
	switch x := v.(type) {
	case string:
		return f(x, under)
	case []any:
		for i, e := range x {
			x[i] = walk(e, under, f)
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for _, k := range slices.Sorted(maps.Keys(x)) {
			out[f(k, objectKey)] = walk(x[k], k, f)
		}
		return out
	}
	return v
}

// Truncated is the marker at the end of a result the gateway cut.
const Truncated = "[... truncated by the MITRITY gateway: the result was %d bytes, the limit is %d (upstreams.<name>.result_max_bytes)]"

// Cap bounds a tool result to max bytes of JSON: when it is larger, its
// text content is cut to fit and ends with the truncation marker, and what
// cannot be cut (structured content, images, resources, _meta) is dropped.
// It reports whether it cut.
func Cap(r *mcp.CallToolResult, max int64) bool {
	b, err := json.Marshal(r)
	if err != nil {
		// A result whose size cannot be told is not passed on unmeasured.
		r.Content = []mcp.Content{&mcp.TextContent{Text: "[the MITRITY gateway withheld this result: its size could not be measured (" + err.Error() + ")]"}}
		r.StructuredContent, r.Meta = nil, nil
		return true
	}
	if int64(len(b)) <= max {
		return false
	}
	var text strings.Builder
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			text.WriteString(t.Text)
		}
	}
	marker := fmt.Sprintf(Truncated, len(b), max)
	keep := int(max) - len(marker) - 512 // room for the envelope
	s := text.String()
	if keep < 0 {
		keep = 0
	}
	// _meta is as much the upstream's as the content: left in place, a
	// flood there would pass the cap untouched.
	r.StructuredContent, r.Meta = nil, nil
	for {
		if len(s) > keep {
			s = s[:keep]
			for len(s) > 0 && !validUTF8End(s) {
				s = s[:len(s)-1]
			}
		}
		r.Content = []mcp.Content{&mcp.TextContent{Text: s + "\n" + marker}}
		// The limit is on the JSON that goes out, where a quote, a
		// backslash, a control character or <, > and & take more bytes
		// than in the text: measure it, and cut what is over (each byte
		// of text is at least one byte of JSON, so this ends).
		out, err := json.Marshal(r)
		if err != nil || int64(len(out)) <= max || s == "" {
			return true
		}
		over := int(int64(len(out)) - max)
		if keep = len(s) - over; keep < 0 {
			// Mostly escapes (six bytes of JSON each): shrink in
			// proportion first, the exact cut follows.
			keep = int(int64(len(s)) * max / int64(len(out)))
		}
	}
}

// validUTF8End reports whether s does not end inside a multi-byte rune.
func validUTF8End(s string) bool {
	for i := len(s) - 1; i >= 0 && i >= len(s)-4; i-- {
		c := s[i]
		if c < 0x80 {
			return true
		}
		if c >= 0xC0 { // a lead byte: is the rune complete?
			need := 2
			switch {
			case c >= 0xF0:
				need = 4
			case c >= 0xE0:
				need = 3
			}
			return len(s)-i >= need
		}
	}
	return true
}
