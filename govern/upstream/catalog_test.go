package upstream

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/audit"
)

// loadTool reads testdata/tools/<name>.json as the SDK's client decodes a
// tools/list entry (schemas as plain JSON values).
func loadTool(t testing.TB, name string) *mcp.Tool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "tools", name+".json"))
	assert.NilError(t, err)
	var tool mcp.Tool
	assert.NilError(t, json.Unmarshal(b, &tool), name)
	return &tool
}

func TestServedName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		server, tool string
		want         string
		err          string // substring of the error; "" for none
	}{
		{"github", "create_issue", "github__create_issue", ""},
		{"fs", "read-file", "fs__read-file", ""},
		{"a", "B9", "a__B9", ""},
		{"srv", strings.Repeat("x", MaxServedName-len("srv__")), "srv__" + strings.Repeat("x", MaxServedName-len("srv__")), ""},
		{"srv", "", "", "lists a tool with no name"},
		{"srv", strings.Repeat("x", MaxServedName-len("srv__")+1), "", "65 characters; model APIs accept at most 64"},
		{"fs", "files.read", "", `"fs__files.read" holds characters a model API refuses`},
		{"fs", "read file", "", "holds characters a model API refuses"},
		{"fs", "read/file", "", "holds characters a model API refuses"},
		{"fs", "lire_é", "", "holds characters a model API refuses"},
		{"fs", "x\n", "", "holds characters a model API refuses"},
	}
	for _, tt := range tests {
		got, err := ServedName(tt.server, tt.tool)
		if tt.err == "" {
			assert.Check(t, err, "%s/%q", tt.server, tt.tool)
			assert.Check(t, is.Equal(got, tt.want))
			assert.Check(t, is.Equal(ActionType(got), "mcp:"+tt.want))
			continue
		}
		assert.Check(t, is.ErrorContains(err, tt.err), "%s/%q", tt.server, tt.tool)
		assert.Check(t, is.Equal(got, ""), "%s/%q", tt.server, tt.tool)
	}
}

func TestHash(t *testing.T) {
	t.Parallel()
	base := Hash(loadTool(t, "echo"))
	assert.Assert(t, len(base) == 64 && strings.Trim(base, "0123456789abcdef") == "", base)

	// The same definition, keys in another order, numbers written
	// otherwise, whitespace gone: the same hash.
	assert.Check(t, is.Equal(Hash(loadTool(t, "echo-reordered")), base))
	// Re-serialised by the SDK and read again: the same hash.
	b, err := json.Marshal(loadTool(t, "echo"))
	assert.NilError(t, err)
	var again mcp.Tool
	assert.NilError(t, json.Unmarshal(b, &again))
	assert.Check(t, is.Equal(Hash(&again), base))
	// A schema held as a Go map rather than decoded JSON: the same hash.
	typed := loadTool(t, "echo")
	typed.InputSchema = map[string]any{
		"required": []string{"message"}, "type": "object",
		"properties": map[string]any{"times": map[string]any{"type": "integer", "minimum": 1}, "message": map[string]any{"type": "string", "description": "What to echo."}},
	}
	assert.Check(t, is.Equal(Hash(typed), base))
	// Neither the icons nor _meta say anything to a model.
	meta := loadTool(t, "echo")
	meta.Meta = mcp.Meta{"x": 1}
	meta.Icons = []mcp.Icon{{Source: "https://example.com/icon.png"}}
	assert.Check(t, is.Equal(Hash(meta), base))

	changed := map[string]*mcp.Tool{
		"description":   loadTool(t, "echo-description"),
		"input schema":  loadTool(t, "echo-schema"),
		"annotations":   loadTool(t, "echo-annotations"),
		"output schema": loadTool(t, "echo-output-schema"),
	}
	renamed := loadTool(t, "echo")
	renamed.Name = "echo2"
	changed["name"] = renamed
	retitled := loadTool(t, "echo")
	retitled.Title = "Echo!"
	changed["title"] = retitled
	noAnn := loadTool(t, "echo")
	noAnn.Annotations = nil
	changed["annotations removed"] = noAnn
	seen := map[string]string{base: "base"}
	for what, tool := range changed {
		h := Hash(tool)
		assert.Check(t, h != base, "changing the %s kept the hash", what)
		if prev, dup := seen[h]; dup {
			t.Errorf("changing the %s gives the same hash as %s", what, prev)
		}
		seen[h] = what
	}
}

// step is one listing of a server and what the catalog must make of it.
type step struct {
	name string
	// before runs before the listing is judged (approve, set pins).
	before func(c *Catalog)
	server string
	listed []string // testdata/tools names; "nil" lists a nil entry
	// served are the served names the catalog serves for server now.
	served []string
	// judged are the judgements, "<served or tool> <state> [reason]".
	judged []string
	// previous, per served name, is the hash a withheld change names.
	previous map[string]string
}

func TestJudge(t *testing.T) {
	t.Parallel()
	h := func(name string) string { return Hash(loadTool(t, name)) }
	tests := []struct {
		name  string
		pins  map[string]string
		taken []string
		steps []step
	}{
		{name: "first seen, then unchanged", steps: []step{
			{name: "first listing", server: "fs", listed: []string{"echo", "read"},
				served: []string{"fs__echo", "fs__read"}, judged: []string{"fs__echo first_seen", "fs__read first_seen"}},
			{name: "same again", server: "fs", listed: []string{"read", "echo-reordered"},
				served: []string{"fs__echo", "fs__read"}, judged: nil},
		}},
		{name: "changed definition withheld until approved", steps: []step{
			{name: "first", server: "fs", listed: []string{"echo"}, served: []string{"fs__echo"}, judged: []string{"fs__echo first_seen"}},
			{name: "description changed", server: "fs", listed: []string{"echo-description"}, served: nil,
				judged:   []string{"fs__echo withheld tool_definition_changed"},
				previous: map[string]string{"fs__echo": h("echo")}},
			{name: "still changed: still withheld", server: "fs", listed: []string{"echo-description"}, served: nil,
				judged:   []string{"fs__echo withheld tool_definition_changed"},
				previous: map[string]string{"fs__echo": h("echo")}},
			{name: "approved", before: func(c *Catalog) { c.Approve("fs__echo", h("echo-description")) },
				server: "fs", listed: []string{"echo-description"}, served: []string{"fs__echo"}, judged: nil},
			{name: "the old one is now the change", server: "fs", listed: []string{"echo"}, served: nil,
				judged:   []string{"fs__echo withheld tool_definition_changed"},
				previous: map[string]string{"fs__echo": h("echo-description")}},
		}},
		{name: "schema and annotation changes withheld", steps: []step{
			{name: "first", server: "fs", listed: []string{"echo"}, served: []string{"fs__echo"}, judged: []string{"fs__echo first_seen"}},
			{name: "schema", server: "fs", listed: []string{"echo-schema"}, served: nil, judged: []string{"fs__echo withheld tool_definition_changed"}},
			{name: "annotations", server: "fs", listed: []string{"echo-annotations"}, served: nil, judged: []string{"fs__echo withheld tool_definition_changed"}},
			{name: "back to the first", server: "fs", listed: []string{"echo"}, served: []string{"fs__echo"}, judged: nil},
		}},
		{name: "pin matches", pins: map[string]string{"fs__echo": h("echo")}, steps: []step{
			{name: "pinned", server: "fs", listed: []string{"echo"}, served: []string{"fs__echo"}, judged: []string{"fs__echo pinned"}},
			{name: "again: no judgement", server: "fs", listed: []string{"echo"}, served: []string{"fs__echo"}, judged: nil},
		}},
		{name: "pin mismatch withheld from the start", pins: map[string]string{"fs__echo": h("echo")}, steps: []step{
			{name: "never seen, not the pin", server: "fs", listed: []string{"echo-description", "read"}, served: []string{"fs__read"},
				judged:   []string{"fs__echo withheld tool_definition_changed", "fs__read first_seen"},
				previous: map[string]string{"fs__echo": h("echo")}},
			{name: "an approval does not beat the pin", before: func(c *Catalog) { c.Approve("fs__echo", h("echo-description")) },
				server: "fs", listed: []string{"echo-description"}, served: nil,
				judged: []string{"fs__echo withheld tool_definition_changed"}},
		}},
		{name: "pin set by a reload", steps: []step{
			{name: "first seen", server: "fs", listed: []string{"echo"}, served: []string{"fs__echo"}, judged: []string{"fs__echo first_seen"}},
			{name: "pinned to another definition", before: func(c *Catalog) { c.SetPins(map[string]string{"fs__echo": h("echo-schema")}) },
				server: "fs", listed: []string{"echo"}, served: nil,
				judged:   []string{"fs__echo withheld tool_definition_changed"},
				previous: map[string]string{"fs__echo": h("echo-schema")}},
			{name: "the pinned one is served", server: "fs", listed: []string{"echo-schema"}, served: []string{"fs__echo"}, judged: nil},
			{name: "pins dropped: first seen rules again", before: func(c *Catalog) { c.SetPins(nil) },
				server: "fs", listed: []string{"echo-schema"}, served: nil,
				judged:   []string{"fs__echo withheld tool_definition_changed"},
				previous: map[string]string{"fs__echo": h("echo")}},
		}},
		{name: "poisoned description withheld", steps: []step{
			{name: "poisoned", server: "math", listed: []string{"poisoned", "echo"}, served: []string{"math__echo"},
				judged: []string{"math__add withheld tool_description_injection", "math__echo first_seen"}},
			{name: "poisoned parameter description", server: "math2", listed: []string{"poisoned-param"}, served: nil,
				judged: []string{"math2__add withheld tool_description_injection"}},
		}},
		{name: "invalid definitions refused", steps: []step{
			{name: "schemas", server: "x", listed: []string{"schema-not-object", "schema-missing", "output-schema-not-object", "echo"},
				served: []string{"x__echo"},
				judged: []string{"x__list refused tool_definition_invalid", "x__nothing refused tool_definition_invalid",
					"x__count refused tool_definition_invalid", "x__echo first_seen"}},
			{name: "a name a model API refuses", server: "x", listed: []string{"dotted-name", "nil"}, served: nil,
				judged: []string{"files.read refused tool_name_invalid"}},
		}},
		{name: "duplicates and collisions refused", taken: []string{"shell__execute"}, steps: []step{
			{name: "listed twice", server: "fs", listed: []string{"read", "read-other", "echo"}, served: []string{"fs__echo"},
				judged: []string{"fs__read refused tool_name_invalid", "fs__read refused tool_name_invalid", "fs__echo first_seen"}},
			{name: "collides with the gateway's own tool", server: "shell", listed: []string{"execute", "echo"}, served: []string{"shell__echo"},
				judged: []string{"shell__execute refused tool_name_invalid", "shell__echo first_seen"}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := NewCatalog(tt.pins)
			taken := func(served string) bool {
				for _, n := range tt.taken {
					if n == served {
						return true
					}
				}
				return false
			}
			for _, s := range tt.steps {
				if s.before != nil {
					s.before(c)
				}
				var listed []*mcp.Tool
				for _, n := range s.listed {
					if n == "nil" {
						listed = append(listed, nil)
						continue
					}
					listed = append(listed, loadTool(t, n))
				}
				out, js := c.Judge(s.server, listed, taken)
				var served []string
				for _, tool := range out {
					served = append(served, tool.Served)
					assert.Check(t, is.Equal(tool.Server, s.server), s.name)
					assert.Check(t, is.Equal(tool.Def.Name, tool.Served), "%s: the definition is served under the served name", s.name)
					assert.Check(t, is.Equal(tool.Served, s.server+"__"+tool.Name), s.name)
					assert.Check(t, is.Equal(tool.SHA256, Hash(&mcp.Tool{Name: tool.Name, Title: tool.Def.Title, Description: tool.Def.Description,
						InputSchema: tool.Def.InputSchema, OutputSchema: tool.Def.OutputSchema, Annotations: tool.Def.Annotations})), s.name)
					got, ok := c.Lookup(tool.Served)
					assert.Check(t, ok, "%s: %s served but not found", s.name, tool.Served)
					assert.Check(t, is.Equal(got.SHA256, tool.SHA256), s.name)
				}
				assert.Check(t, is.DeepEqual(served, s.served), s.name)
				var judged []string
				for _, j := range js {
					name := j.Served
					if name == "" {
						name = j.Tool
					}
					line := strings.TrimSpace(name + " " + j.State + " " + string(j.Reason))
					judged = append(judged, line)
					assert.Check(t, is.Equal(j.Server, s.server), s.name)
					assert.Check(t, len(j.SHA256) == 64, "%s: %s has no hash", s.name, line)
					if j.Reason != "" {
						assert.Check(t, j.Message != "", "%s: %s carries no sentence", s.name, line)
						assert.Check(t, is.Contains(govern.Reasons(), j.Reason), s.name)
					}
					if want, ok := s.previous[j.Served]; ok {
						assert.Check(t, is.Equal(j.Previous, want), "%s: %s", s.name, line)
					}
					if j.State == audit.DefinitionFirstSeen || j.State == audit.DefinitionPinned {
						assert.Check(t, is.Equal(j.Previous, ""), s.name)
					}
					if j.Reason == govern.ReasonToolDefinitionChanged {
						assert.Check(t, j.Previous != "" && j.Previous != j.SHA256, "%s: a change names the hash it differs from", s.name)
					}
					// Whatever is withheld or refused is not served.
					if j.State == audit.DefinitionWithheld || j.State == audit.DefinitionRefused {
						if _, ok := c.Lookup(j.Served); ok && j.Served != "" {
							t.Errorf("%s: %s is %s and yet served", s.name, j.Served, j.State)
						}
					}
				}
				assert.Check(t, is.DeepEqual(judged, s.judged), s.name)
			}
		})
	}
}

func TestCatalogDropAndTools(t *testing.T) {
	t.Parallel()
	c := NewCatalog(nil)
	none := func(string) bool { return false }
	c.Judge("fs", []*mcp.Tool{loadTool(t, "read"), loadTool(t, "echo")}, none)
	c.Judge("calc", []*mcp.Tool{loadTool(t, "echo")}, none)
	var names []string
	for _, tool := range c.Tools() {
		names = append(names, tool.Served)
	}
	assert.DeepEqual(t, names, []string{"calc__echo", "fs__echo", "fs__read"})

	// A server that goes down serves nothing...
	c.Drop("fs")
	_, ok := c.Lookup("fs__read")
	assert.Check(t, !ok)
	_, ok = c.Lookup("calc__echo")
	assert.Check(t, ok, "another server's tools stay")
	// ...and what was first seen is still remembered when it comes back:
	// unchanged, served at once with no judgement; changed, withheld.
	out, js := c.Judge("fs", []*mcp.Tool{loadTool(t, "read"), loadTool(t, "echo-description")}, none)
	assert.Equal(t, len(out), 1)
	assert.Equal(t, out[0].Served, "fs__read")
	assert.Equal(t, len(js), 1)
	assert.Equal(t, js[0].Reason, govern.ReasonToolDefinitionChanged)

	// An empty listing serves nothing and forgets nothing.
	out, js = c.Judge("fs", nil, none)
	assert.Equal(t, len(out)+len(js), 0)
	_, ok = c.Lookup("fs__read")
	assert.Check(t, !ok)

	// Judge serves a copy under the served name: the listing it was
	// given (which the owner keeps, to judge again) is not renamed.
	listed := []*mcp.Tool{loadTool(t, "echo")}
	out, _ = c.Judge("calc", listed, none)
	assert.Equal(t, out[0].Def.Name, "calc__echo")
	assert.Equal(t, listed[0].Name, "echo")
}
