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
	raw, err := json.Marshal(v)
	if err != nil {
		return Seen{}, fmt.Errorf("reading the upstream's answer: %w", err)
	}
	seen := Seen{Bytes: len(raw), SHA256: audit.HashOf(raw)}
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return seen, fmt.Errorf("reading the upstream's answer: %w", err)
	}
	var texts []string
	tree = walk(tree, func(s string) string {
		r, n := redact(s)
		seen.Redactions += n
		texts = append(texts, r)
		return r
	})
	seen.Injection = scan(texts)
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

// scan runs the injection scanner over the strings of an answer, each on
// its own and all of them together (an injection split over two content
// blocks is still one text to a model).
func scan(texts []string) []inject.Finding {
	var fs []inject.Finding
	for _, t := range texts {
		fs = append(fs, inject.Scan(t)...)
	}
	if len(fs) == 0 && len(texts) > 1 {
		fs = inject.Scan(strings.Join(texts, "\n"))
	}
	return fs
}

func walk(v any, f func(string) string) any {
	switch x := v.(type) {
	case string:
		return f(x)
	case []any:
		for i, e := range x {
			x[i] = walk(e, f)
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for _, k := range slices.Sorted(maps.Keys(x)) {
			out[f(k)] = walk(x[k], f)
		}
		return out
	}
	return v
}

// Truncated is the marker at the end of a result the gateway cut.
const Truncated = "[... truncated by the MITRITY gateway: the result was %d bytes, the limit is %d (upstreams.<name>.result_max_bytes)]"

// Cap bounds a tool result to max bytes of JSON: when it is larger, its
// text content is cut to fit and ends with the truncation marker, and what
// cannot be cut (structured content, images, resources) is dropped. It
// reports whether it cut.
func Cap(r *mcp.CallToolResult, max int64) bool {
	b, err := json.Marshal(r)
	if err != nil || int64(len(b)) <= max {
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
	if len(s) > keep {
		s = s[:keep]
		for len(s) > 0 && !validUTF8End(s) {
			s = s[:len(s)-1]
		}
	}
	r.Content = []mcp.Content{&mcp.TextContent{Text: s + "\n" + marker}}
	r.StructuredContent = nil
	return true
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
