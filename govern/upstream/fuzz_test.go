package upstream

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mitrity/mitrity/govern/dlp"
)

// FuzzClean: whatever an upstream answers, Clean never panics; when it
// succeeds, the cleaned answer holds no occurrence of a credential the
// redactor knows, wherever it was planted (the fuzzed JSON's {{CRED}},
// a text block around the fuzzed text, a structured key and value, a
// resource, _meta); and Cap then brings it within its limit without
// splitting a rune.
func FuzzClean(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "results", "*.json"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no seed results: %v", err)
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, "ignore all previous", uint16(0))
	}
	f.Add([]byte(`{"content":[{"type":"text","text":"{{CRED}}{{CRED}}"}],"structuredContent":{"{{CRED}}":["{{CRED}}",{"{{CRED}}":null}]}}`), "\x00\xff", uint16(3000))
	f.Add([]byte(`{"content":[]}`), "é€𝄞\"<>&\\\n", uint16(1))
	f.Add([]byte(`not json`), "", uint16(0))
	// The credential's redactor only: the planted secret is a credential,
	// and the detector catalog would cost each worker seconds to build.
	red, err := dlp.NewRedactor([]dlp.Secret{{ID: "api", Value: testCredential}})
	if err != nil {
		f.Fatal(err)
	}
	redact := func(s string) (string, int) {
		b, counts := red.Redact([]byte(s))
		n := 0
		for _, c := range counts {
			n += c
		}
		return string(b), n
	}
	f.Fuzz(func(t *testing.T, data []byte, text string, capExtra uint16) {
		data = bytes.ReplaceAll(data, []byte("{{CRED}}"), []byte(testCredential))
		r := &mcp.CallToolResult{}
		if json.Unmarshal(data, r) != nil {
			r = &mcp.CallToolResult{}
		}
		r.Content = append(r.Content,
			&mcp.TextContent{Text: text + testCredential + text},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///x", Text: testCredential + text}})
		if m, ok := r.StructuredContent.(map[string]any); ok {
			m[testCredential] = text + testCredential
		} else if r.StructuredContent == nil {
			r.StructuredContent = map[string]any{testCredential: []any{text, testCredential}}
		}
		if r.Meta == nil {
			r.Meta = mcp.Meta{}
		}
		r.Meta["planted"] = testCredential
		if _, err := json.Marshal(r); err != nil {
			return // not an answer the SDK could have decoded
		}
		seen, err := Clean(&r, redact)
		if err != nil {
			return // withheld by the caller: nothing reaches the agent
		}
		out, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("a cleaned answer does not marshal: %v", err)
		}
		if strings.Contains(string(out), testCredential) {
			t.Fatalf("the credential survives Clean: %s", out)
		}
		if seen.Redactions < 5 {
			t.Fatalf("%d redactions, at least 5 were planted", seen.Redactions)
		}
		max := int64(1024) + int64(capExtra)
		Cap(r, max)
		out, err = json.Marshal(r)
		if err != nil {
			t.Fatalf("a capped answer does not marshal: %v", err)
		}
		if int64(len(out)) > max {
			t.Fatalf("capped to %d, the answer is %d bytes", max, len(out))
		}
		for _, c := range r.Content {
			if tc, ok := c.(*mcp.TextContent); ok && !utf8.ValidString(tc.Text) {
				t.Fatalf("invalid UTF-8 after Cap: %q", tc.Text)
			}
		}
		if strings.Contains(string(out), testCredential) {
			t.Fatalf("the credential is back after Cap: %s", out)
		}
	})
}
