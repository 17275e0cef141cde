package settings

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	"gotest.tools/v3/golden"
)

// TestDocsRenderedSettings keeps the rendered settings quoted in
// docs/frameworks.md equal to what RenderClaude writes; -update rewrites the
// quote.
func TestDocsRenderedSettings(t *testing.T) {
	t.Parallel()
	const marker = "<!-- rendered-linux-routing:"
	doc := filepath.Join("..", "..", "docs", "frameworks.md")
	b, err := os.ReadFile(doc)
	assert.NilError(t, err)
	text := string(b)
	i := strings.Index(text, marker)
	assert.Assert(t, i >= 0, "marker %q not in %s", marker, doc)
	start := strings.Index(text[i:], "```json\n")
	assert.Assert(t, start >= 0)
	start += i + len("```json\n")
	end := strings.Index(text[start:], "```")
	assert.Assert(t, end >= 0)
	end += start

	want, err := RenderClaude(linuxRouting)
	assert.NilError(t, err)
	if golden.FlagUpdate() {
		assert.NilError(t, os.WriteFile(doc, []byte(text[:start]+string(want)+text[end:]), 0o644))
		return
	}
	assert.Equal(t, text[start:end], string(want), "docs/frameworks.md quotes stale settings; run go test ./settings -update")
}
