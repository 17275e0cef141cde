package upstream

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestTypedCoversEveryField pins the fields of every SDK type the typed
// cleaner walks: a field added by an SDK upgrade fails here until typed.go
// handles it (a string it skipped would reach the agent unredacted).
func TestTypedCoversEveryField(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want []string
	}{
		{mcp.CallToolResult{}, []string{"Meta", "Content", "StructuredContent", "IsError", "InputRequests", "RequestState", "resultType", "err"}},
		{mcp.ReadResourceResult{}, []string{"Meta", "Cacheable", "Contents", "InputRequests", "RequestState", "resultType"}},
		{mcp.GetPromptResult{}, []string{"Meta", "Description", "Messages", "InputRequests", "RequestState", "resultType"}},
		{mcp.PromptMessage{}, []string{"Content", "Role"}},
		{mcp.TextContent{}, []string{"Text", "Meta", "Annotations"}},
		{mcp.ImageContent{}, []string{"Meta", "Annotations", "Data", "MIMEType"}},
		{mcp.AudioContent{}, []string{"Data", "MIMEType", "Meta", "Annotations"}},
		{mcp.ResourceLink{}, []string{"URI", "Name", "Title", "Description", "MIMEType", "Size", "Meta", "Annotations", "Icons"}},
		{mcp.EmbeddedResource{}, []string{"Resource", "Meta", "Annotations"}},
		{mcp.ResourceContents{}, []string{"URI", "MIMEType", "Text", "Blob", "Meta"}},
		{mcp.Icon{}, []string{"Source", "MIMEType", "Sizes", "Theme"}},
		{mcp.Annotations{}, []string{"Audience", "LastModified", "Priority"}},
	} {
		rt := reflect.TypeOf(tc.v)
		var got []string
		for i := range rt.NumField() {
			got = append(got, rt.Field(i).Name)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s has fields %v; typed.go handles %v: handle the new ones, then update this list", rt.Name(), got, tc.want)
		}
	}
}

// TestTypedRedactsEverywhere plants a marker in every string field of a
// result of each kind and checks none survives the typed cleaner, that
// embedded input requests are dropped and counted, and that the scanned
// texts hold what a model reads.
func TestTypedRedactsEverywhere(t *testing.T) {
	const m = "SECRET"
	f := func(s string) string { return strings.ReplaceAll(s, m, "[R]") }
	ann := func() *mcp.Annotations { return &mcp.Annotations{LastModified: m, Audience: []mcp.Role{m}} }
	meta := func() mcp.Meta { return mcp.Meta{m: m, "k": []any{m, map[string]any{"x": m}}} }
	res := &mcp.CallToolResult{Meta: meta(), RequestState: m,
		InputRequests:     mcp.InputRequestMap{"a": nil},
		StructuredContent: map[string]any{"a": m, m: []any{m, 1.0, true}},
		Content: []mcp.Content{
			&mcp.TextContent{Text: "x" + m, Meta: meta(), Annotations: ann()},
			&mcp.ImageContent{Data: []byte(m), MIMEType: m, Meta: meta(), Annotations: ann()},
			&mcp.AudioContent{Data: []byte(m), MIMEType: m, Meta: meta(), Annotations: ann()},
			&mcp.ResourceLink{URI: m, Name: m, Title: m, Description: m, MIMEType: m, Meta: meta(), Annotations: ann(),
				Icons: []mcp.Icon{{Source: m, MIMEType: m, Sizes: []string{m}, Theme: m}}},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: m, MIMEType: m, Text: m, Blob: []byte(m), Meta: meta()}, Meta: meta(), Annotations: ann()},
		}}
	texts, _, n, ok := typed(res, f)
	if !ok || n != 1 || res.InputRequests != nil {
		t.Fatalf("typed: ok %v, input requests %d (%v)", ok, n, res.InputRequests)
	}
	if b, _ := jsonMarshal(res); strings.Contains(string(b), m) {
		t.Fatalf("a marker survived: %s", b)
	}
	if !slices.Contains(texts, "x[R]") {
		t.Fatalf("texts: %v", texts)
	}
	rr := &mcp.ReadResourceResult{Meta: meta(), Contents: []*mcp.ResourceContents{{URI: m, Text: m, Blob: []byte(m), MIMEType: m, Meta: meta()}}, RequestState: m}
	if _, _, _, ok := typed(rr, f); !ok {
		t.Fatal("ReadResourceResult not handled")
	}
	if b, _ := jsonMarshal(rr); strings.Contains(string(b), m) {
		t.Fatalf("a marker survived: %s", b)
	}
	gp := &mcp.GetPromptResult{Meta: meta(), Description: m, RequestState: m, Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: m}}}}
	if _, _, _, ok := typed(gp, f); !ok {
		t.Fatal("GetPromptResult not handled")
	}
	if b, _ := jsonMarshal(gp); strings.Contains(string(b), m) {
		t.Fatalf("a marker survived: %s", b)
	}
	if _, _, _, ok := typed(&struct{ X string }{m}, f); ok {
		t.Fatal("an unknown type was claimed")
	}
}
