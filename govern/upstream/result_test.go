package upstream

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern/audit"
	"github.com/mitrity/mitrity/govern/dlp"
)

// The secrets of these tests are built at run time, so that no scanner of
// the repository finds a token-shaped literal in it.
var (
	testCredential = "s3cr3t-" + strings.Repeat("Vq7x", 6) + "-upstream"
	testGHP        = "ghp_" + strings.Repeat("aB3d", 9)
)

// placeholders fill the fixtures' {{...}} with the secrets in their forms.
func placeholders(s string) string {
	return strings.NewReplacer(
		"{{CRED}}", testCredential,
		"{{CRED_B64}}", base64.StdEncoding.EncodeToString([]byte(testCredential)),
		"{{CRED_HEX}}", hex.EncodeToString([]byte(testCredential)),
		"{{GHP}}", testGHP,
	).Replace(s)
}

// loadResult reads testdata/results/<name>.json as the SDK's client
// decodes a tools/call answer.
func loadResult(t testing.TB, name string) *mcp.CallToolResult {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "results", name+".json"))
	assert.NilError(t, err)
	var r mcp.CallToolResult
	assert.NilError(t, json.Unmarshal([]byte(placeholders(string(b))), &r), name)
	return &r
}

// testRedact is the chain the gateway builds for a result: every form of
// the injected credential, then the profile's DLP detectors.
func testRedact(t testing.TB) Redact {
	t.Helper()
	red, err := dlp.NewRedactor([]dlp.Secret{{ID: "api", Value: testCredential}})
	assert.NilError(t, err)
	bind, err := dlp.Bind([]string{"github_token"})
	assert.NilError(t, err)
	return func(s string) (string, int) {
		b, counts := red.Redact([]byte(s))
		out, hits := bind.Redact(string(b))
		n := len(hits)
		for _, c := range counts {
			n += c
		}
		return out, n
	}
}

// forms are what must never come back of the test's secrets.
func forms() []string {
	return []string{
		testCredential,
		base64.StdEncoding.EncodeToString([]byte(testCredential)),
		hex.EncodeToString([]byte(testCredential)),
		testGHP,
	}
}

func TestClean(t *testing.T) {
	t.Parallel()
	redact := testRedact(t)
	tests := []struct {
		fixture    string
		redactions int
		// check reads the cleaned answer back where each secret sat.
		check     func(t *testing.T, r *mcp.CallToolResult)
		injection bool
	}{
		{fixture: "credential-everywhere", redactions: 9, check: func(t *testing.T, r *mcp.CallToolResult) {
			marker := "[REDACTED:credential:api]"
			assert.Check(t, is.Equal(r.Content[0].(*mcp.TextContent).Text, "token="+marker))
			assert.Check(t, is.Equal(r.Content[1].(*mcp.TextContent).Text, "b64: "+marker+" and hex: "+marker))
			res := r.Content[2].(*mcp.EmbeddedResource).Resource
			assert.Check(t, is.Equal(res.Text, "API_KEY="+marker+"\n"))
			assert.Check(t, is.Equal(res.URI, "file:///srv/data/env"))
			assert.Check(t, is.Contains(r.Content[3].(*mcp.ResourceLink).URI, marker))
			sc := r.StructuredContent.(map[string]any)
			assert.Check(t, is.Equal(sc[marker], "a key is a string too"), "%v", sc)
			user := sc["user"].(map[string]any)
			assert.Check(t, is.Equal(user["tokens"].([]any)[0].(map[string]any)["value"], marker))
			assert.Check(t, is.Equal(user["tokens"].([]any)[1].(map[string]any)["value"], "plain"))
			deepest := user["depth"].(map[string]any)["deeper"].(map[string]any)["deepest"].([]any)
			assert.Check(t, is.DeepEqual(deepest, []any{"x", marker}))
			assert.Check(t, is.Equal(r.Meta["trace"], marker))
		}},
		{fixture: "detector-everywhere", redactions: 4, check: func(t *testing.T, r *mcp.CallToolResult) {
			marker := "[REDACTED:dlp:github_token]"
			assert.Check(t, is.Equal(r.Content[0].(*mcp.TextContent).Text, "export GITHUB_TOKEN="+marker))
			assert.Check(t, is.Equal(r.Content[1].(*mcp.EmbeddedResource).Resource.Text, "password "+marker))
			sc := r.StructuredContent.(map[string]any)
			assert.Check(t, is.Equal(sc["config"].(map[string]any)["auth"].(map[string]any)["github"], marker))
			// Values that are not strings keep their type.
			assert.Check(t, is.DeepEqual(sc["list"], []any{1.0, true, nil, marker}))
		}},
		{fixture: "clean", redactions: 0, check: func(t *testing.T, r *mcp.CallToolResult) {
			want, err := json.Marshal(loadResult(t, "clean"))
			assert.NilError(t, err)
			got, err := json.Marshal(r)
			assert.NilError(t, err)
			assert.Equal(t, string(got), string(want))
			img := r.Content[1].(*mcp.ImageContent)
			assert.Check(t, is.Equal(len(img.Data), 70), "the image's bytes are intact")
		}},
		{fixture: "injection-one-block", injection: true},
		{fixture: "injection-split", injection: true},
		{fixture: "injection-structured", injection: true},
		{fixture: "injection-resource", injection: true},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			t.Parallel()
			orig := loadResult(t, tt.fixture)
			raw, err := json.Marshal(orig)
			assert.NilError(t, err)
			r := loadResult(t, tt.fixture)
			seen, err := Clean(&r, redact)
			assert.NilError(t, err)
			// What came back is described as it came, before redaction.
			assert.Check(t, is.Equal(seen.Bytes, len(raw)))
			assert.Check(t, is.Equal(seen.SHA256, audit.HashOf(raw)))
			assert.Check(t, is.Equal(seen.Redactions, tt.redactions))
			assert.Check(t, is.Equal(len(seen.Injection) > 0, tt.injection), "%+v", seen.Injection)
			out, err := json.Marshal(r)
			assert.NilError(t, err)
			for _, f := range forms() {
				assert.Check(t, !strings.Contains(string(out), f), "%s survives in %s", f, out)
			}
			if tt.check != nil {
				tt.check(t, r)
			}
		})
	}
}

// TestCleanSplitInjection: neither half of an injection split over two
// content blocks is one on its own; together they are, as a model reads
// them.
func TestCleanSplitInjection(t *testing.T) {
	t.Parallel()
	r := loadResult(t, "injection-split")
	none := func(s string) (string, int) { return s, 0 }
	for i, c := range r.Content {
		one := &mcp.CallToolResult{Content: []mcp.Content{c}}
		seen, err := Clean(&one, none)
		assert.NilError(t, err)
		assert.Check(t, is.Len(seen.Injection, 0), "block %d alone: %+v", i, seen.Injection)
	}
	seen, err := Clean(&r, none)
	assert.NilError(t, err)
	assert.Assert(t, len(seen.Injection) > 0)
	assert.Check(t, is.Equal(string(seen.Injection[0].Kind), "instruction_override"), "%+v", seen.Injection[0])
}

// TestCleanOtherResults: the same walk cleans what resources/read and
// prompts/get return.
func TestCleanOtherResults(t *testing.T) {
	t.Parallel()
	redact := testRedact(t)
	rr := &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "file:///x", Text: "k=" + testGHP}}}
	seen, err := Clean(&rr, redact)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(seen.Redactions, 1))
	assert.Check(t, is.Equal(rr.Contents[0].Text, "k=[REDACTED:dlp:github_token]"))

	pr := &mcp.GetPromptResult{Description: "d " + testCredential, Messages: []*mcp.PromptMessage{
		{Role: "user", Content: &mcp.TextContent{Text: "use " + testGHP}}}}
	seen, err = Clean(&pr, redact)
	assert.NilError(t, err)
	assert.Check(t, is.Equal(seen.Redactions, 2))
	assert.Check(t, is.Equal(pr.Description, "d [REDACTED:credential:api]"))
	assert.Check(t, is.Equal(pr.Messages[0].Content.(*mcp.TextContent).Text, "use [REDACTED:dlp:github_token]"))
}

// TestCleanUnreadable: an answer whose redaction cannot be read back is
// an error, and the answer is left as it was for the caller to withhold.
// (The SDK's own results are cleaned field by field and cannot break so;
// this is the JSON walk every other answer takes.)
func TestCleanUnreadable(t *testing.T) {
	t.Parallel()
	type answer struct {
		Image []byte `json:"image"` // base64 in JSON
	}
	r := &answer{Image: []byte("\x89PNG not really")}
	// A "redactor" that breaks the image's base64.
	breaks := func(s string) (string, int) {
		if strings.HasPrefix(s, "iVBOR") {
			return "[REDACTED:x]" + s, 1
		}
		return s, 0
	}
	before := r
	_, err := Clean(&r, breaks)
	assert.ErrorContains(t, err, "rewriting the upstream's answer")
	assert.Check(t, r == before, "the answer is not replaced")
}

func TestCap(t *testing.T) {
	t.Parallel()
	const max = 4096
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	tests := []struct {
		name string
		r    *mcp.CallToolResult
		cut  bool
		// keep is a prefix the cut text must start with.
		keep string
	}{
		{name: "under the limit", r: text(strings.Repeat("a", 1000)), cut: false},
		{name: "ascii over the limit", r: text(strings.Repeat("a", 100_000)), cut: true, keep: strings.Repeat("a", 1000)},
		{name: "multi-byte runes", r: text(strings.Repeat("é", 10_000)), cut: true, keep: strings.Repeat("é", 500)},
		{name: "four-byte runes", r: text("x" + strings.Repeat("𝄞", 10_000)), cut: true, keep: "x𝄞𝄞"},
		{name: "three-byte runes at every offset", r: text("ab" + strings.Repeat("€", 10_000)), cut: true, keep: "ab€€"},
		// JSON writes each of these as more bytes than the text holds:
		// the cut is measured on what goes out.
		{name: "escaped characters", r: text(strings.Repeat("<\"\\\n&>", 20_000)), cut: true, keep: "<\"\\\n&>"},
		{name: "control characters", r: text(strings.Repeat("\x01", 20_000)), cut: true, keep: "\x01"},
		{name: "several text blocks, structured content and an image", r: &mcp.CallToolResult{
			Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("a", 3000)}, &mcp.ImageContent{MIMEType: "image/png", Data: make([]byte, 10_000)},
				&mcp.TextContent{Text: strings.Repeat("b", 3000)}},
			StructuredContent: map[string]any{"big": strings.Repeat("c", 10_000)},
		}, cut: true, keep: strings.Repeat("a", 3000)},
		{name: "structured content alone over the limit", r: &mcp.CallToolResult{
			Content:           []mcp.Content{&mcp.TextContent{Text: "small"}},
			StructuredContent: map[string]any{"big": strings.Repeat("c", 10_000)},
		}, cut: true, keep: "small"},
		{name: "a flood in _meta", r: &mcp.CallToolResult{
			Meta:    mcp.Meta{"flood": strings.Repeat("m", 100_000)},
			Content: []mcp.Content{&mcp.TextContent{Text: "small"}},
		}, cut: true, keep: "small"},
		{name: "error flag kept", r: &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("e", 10_000)}}},
			cut: true, keep: "eee"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			before, err := json.Marshal(tt.r)
			assert.NilError(t, err)
			wasError := tt.r.IsError
			cut := Cap(tt.r, max)
			assert.Equal(t, cut, tt.cut)
			after, err := json.Marshal(tt.r)
			assert.NilError(t, err)
			if !tt.cut {
				assert.Equal(t, string(after), string(before), "an answer under the limit is untouched")
				return
			}
			assert.Check(t, len(after) <= max, "%d bytes of JSON after the cut, the limit is %d", len(after), max)
			if len(tt.keep) > 100 {
				assert.Check(t, len(after) >= max*3/4, "the cut keeps what fits: %d of %d bytes", len(after), max)
			}
			assert.Check(t, tt.r.StructuredContent == nil, "structured content cannot be cut: dropped")
			assert.Check(t, tt.r.Meta == nil, "_meta cannot be cut: dropped")
			assert.Check(t, is.Equal(tt.r.IsError, wasError))
			assert.Assert(t, is.Len(tt.r.Content, 1))
			got := tt.r.Content[0].(*mcp.TextContent).Text
			assert.Check(t, utf8.ValidString(got), "the cut split a rune")
			assert.Check(t, strings.HasPrefix(got, tt.keep), "%.40q", got)
			assert.Check(t, is.Contains(got, "\n[... truncated by the MITRITY gateway: the result was "))
			assert.Check(t, strings.HasSuffix(got, "limit is 4096 (upstreams.<name>.result_max_bytes)]"), "%q", got[len(got)-min(len(got), 200):])
			assert.Check(t, is.Contains(got, "the result was "+itoa(len(before))+" bytes"))
			// Capping again changes nothing.
			assert.Check(t, !Cap(tt.r, max), "a capped answer is within the limit")
		})
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestCapEveryCutPoint: for every limit around a multi-byte text, the cut
// text is valid UTF-8 and the JSON within the limit.
func TestCapEveryCutPoint(t *testing.T) {
	t.Parallel()
	s := strings.Repeat("aé€𝄞", 600)
	for max := int64(1024); max < 1200; max++ {
		r := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
		assert.Assert(t, Cap(r, max))
		got := r.Content[0].(*mcp.TextContent).Text
		assert.Assert(t, utf8.ValidString(got), "limit %d", max)
		b, _ := json.Marshal(r)
		assert.Assert(t, int64(len(b)) <= max, "limit %d: %d bytes", max, len(b))
	}
}

// TestCapUnmeasurable: a result whose JSON size cannot be told is withheld,
// never passed on unmeasured.
func TestCapUnmeasurable(t *testing.T) {
	t.Parallel()
	r := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "secret-ish payload"}}, StructuredContent: make(chan int)}
	assert.Check(t, Cap(r, 1<<20))
	assert.Check(t, r.StructuredContent == nil)
	assert.Assert(t, len(r.Content) == 1)
	text := r.Content[0].(*mcp.TextContent).Text
	assert.Check(t, strings.Contains(text, "withheld") && !strings.Contains(text, "payload"), text)
}
