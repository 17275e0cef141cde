package upstream

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The results an upstream sends back are cleaned field by field, in
// place: a 1 MiB text is redacted once, not carried through four JSON
// passes. Every field of each type is handled (TestTypedCoversEveryField
// pins the SDK's field sets, so an upgrade that adds one fails until it
// is handled here); a content type this file does not know makes the
// result go the slow way, through the JSON walk, which misses nothing.

// typed cleans v when it is one of the SDK results it knows: f replaces
// each string, texts collects the strings a model reads (for the
// injection scan). inputRequests counts requests to the client embedded
// in the result (2026-07-28 input-required results: sampling or
// elicitation in disguise), which it drops. ok is false for anything it
// does not know, v then untouched.
// prose are the texts of its content blocks and resources, in order (the
// scan reads them also as one text: an injection split over two blocks).
func typed(v any, f func(string) string) (texts, prose []string, inputRequests int, ok bool) {
	c := &typedCleaner{f: f}
	switch r := v.(type) {
	case *mcp.CallToolResult:
		if !c.known(r.Content) {
			return nil, nil, 0, false
		}
		r.Meta = c.meta(r.Meta)
		for _, x := range r.Content {
			c.content(x)
		}
		r.StructuredContent = c.value(r.StructuredContent)
		inputRequests = len(r.InputRequests)
		r.InputRequests, r.RequestState = nil, c.str(r.RequestState)
	case *mcp.ReadResourceResult:
		r.Meta = c.meta(r.Meta)
		for _, x := range r.Contents {
			c.resource(x)
		}
		inputRequests = len(r.InputRequests)
		r.InputRequests, r.RequestState = nil, c.str(r.RequestState)
	case *mcp.GetPromptResult:
		for _, m := range r.Messages {
			if m != nil && !c.known([]mcp.Content{m.Content}) {
				return nil, nil, 0, false
			}
		}
		r.Meta = c.meta(r.Meta)
		r.Description = c.text(r.Description)
		for _, m := range r.Messages {
			if m != nil {
				c.content(m.Content)
			}
		}
		inputRequests = len(r.InputRequests)
		r.InputRequests, r.RequestState = nil, c.str(r.RequestState)
	default:
		return nil, nil, 0, false
	}
	return c.texts, c.prose, inputRequests, true
}

type typedCleaner struct {
	f     func(string) string
	texts []string
	prose []string
}

// body redacts the text of a content block or a resource: read by a
// model, scanned alone and as part of the answer's prose.
func (c *typedCleaner) body(s string) string {
	r := c.text(s)
	if r != "" {
		c.prose = append(c.prose, r)
	}
	return r
}

// str redacts a string no model is meant to read as text. Invalid UTF-8
// becomes U+FFFD first, as JSON encoding would make it on the way out:
// what is redacted and scanned is what the agent gets.
func (c *typedCleaner) str(s string) string {
	if s == "" {
		return s
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return c.f(s)
}

// text redacts a string a model reads, and keeps it for the scan.
func (c *typedCleaner) text(s string) string {
	if s == "" {
		return s
	}
	r := c.str(s)
	c.texts = append(c.texts, r)
	return r
}

// bytes redacts binary data (an image, a blob) as text: a secret inside
// it is cut like anywhere else (the data is then corrupt, and says so by
// not decoding).
func (c *typedCleaner) bytes(b []byte) []byte {
	if len(b) == 0 {
		return b
	}
	r := c.f(string(b))
	if r == string(b) {
		return b
	}
	return []byte(r)
}

func (c *typedCleaner) known(cs []mcp.Content) bool {
	for _, x := range cs {
		switch x.(type) {
		case nil, *mcp.TextContent, *mcp.ImageContent, *mcp.AudioContent, *mcp.ResourceLink, *mcp.EmbeddedResource:
		default:
			return false
		}
	}
	return true
}

func (c *typedCleaner) content(x mcp.Content) {
	switch x := x.(type) {
	case *mcp.TextContent:
		x.Text = c.body(x.Text)
		x.Meta, x.Annotations = c.meta(x.Meta), c.annotations(x.Annotations)
	case *mcp.ImageContent:
		x.Data, x.MIMEType = c.bytes(x.Data), c.str(x.MIMEType)
		x.Meta, x.Annotations = c.meta(x.Meta), c.annotations(x.Annotations)
	case *mcp.AudioContent:
		x.Data, x.MIMEType = c.bytes(x.Data), c.str(x.MIMEType)
		x.Meta, x.Annotations = c.meta(x.Meta), c.annotations(x.Annotations)
	case *mcp.ResourceLink:
		x.URI, x.Name, x.Title, x.Description, x.MIMEType = c.text(x.URI), c.text(x.Name), c.text(x.Title), c.text(x.Description), c.str(x.MIMEType)
		x.Meta, x.Annotations = c.meta(x.Meta), c.annotations(x.Annotations)
		for i := range x.Icons {
			x.Icons[i] = c.icon(x.Icons[i])
		}
	case *mcp.EmbeddedResource:
		c.resource(x.Resource)
		x.Meta, x.Annotations = c.meta(x.Meta), c.annotations(x.Annotations)
	}
}

func (c *typedCleaner) resource(r *mcp.ResourceContents) {
	if r == nil {
		return
	}
	r.URI, r.MIMEType, r.Text = c.text(r.URI), c.str(r.MIMEType), c.body(r.Text)
	r.Blob, r.Meta = c.bytes(r.Blob), c.meta(r.Meta)
}

func (c *typedCleaner) icon(i mcp.Icon) mcp.Icon {
	i.Source, i.MIMEType = c.str(i.Source), c.str(i.MIMEType)
	for j := range i.Sizes {
		i.Sizes[j] = c.str(i.Sizes[j])
	}
	i.Theme = mcp.IconTheme(c.str(string(i.Theme)))
	return i
}

func (c *typedCleaner) annotations(a *mcp.Annotations) *mcp.Annotations {
	if a == nil {
		return nil
	}
	a.LastModified = c.str(a.LastModified)
	for i := range a.Audience {
		a.Audience[i] = mcp.Role(c.str(string(a.Audience[i])))
	}
	return a
}

func (c *typedCleaner) meta(m mcp.Meta) mcp.Meta {
	if m == nil {
		return nil
	}
	v, _ := c.value(map[string]any(m)).(map[string]any)
	return v
}

// value redacts a decoded JSON value (structuredContent, _meta): every
// string and key, kept for the scan.
func (c *typedCleaner) value(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		return c.text(x)
	case []any:
		for i, e := range x {
			x[i] = c.value(e)
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[c.text(k)] = c.value(e)
		}
		return out
	case float64, bool, int, int64:
		return x
	}
	// Not decoded JSON (a value built in code): the walk of its JSON form.
	var out any
	if b, err := json.Marshal(v); err == nil && json.Unmarshal(b, &out) == nil {
		return c.value(out)
	}
	return nil
}
