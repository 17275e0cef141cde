package schema_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern/schema"
	"github.com/mitrity/mitrity/govern/schema/schematest"
)

// Both schemas compile (against the draft 2020-12 meta-schema) and say
// which draft they are, so an editor reads them as written.
func TestCompile(t *testing.T) {
	t.Parallel()
	for _, name := range []string{schema.Gateway, schema.Policy} {
		_, err := schema.Compile(name)
		assert.NilError(t, err, name)
		b, err := schema.Bytes(name)
		assert.NilError(t, err)
		var doc struct {
			Schema string `json:"$schema"`
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		assert.NilError(t, dec.Decode(&doc))
		assert.Check(t, is.Equal(doc.Schema, "https://json-schema.org/draft/2020-12/schema"), name)
	}
	_, err := schema.Compile("nope.json")
	assert.Check(t, err != nil)
}

// Validate names each problem by the path the loaders use, a refused key
// at the key itself, whichever mapping holds it (jsonschema v6.0.3 alone
// would name the last mapping it visited).
func TestValidatePaths(t *testing.T) {
	t.Parallel()
	v, err := schema.Compile(schema.Gateway)
	assert.NilError(t, err)
	tests := []struct {
		name, yaml string
		want       []string // paths
	}{
		{"empty", "", nil},
		{"comment only", "# nothing\n", nil},
		{"list index", "exec:\n  egress:\n    allowed_ports: [443, 0]\n", []string{"exec.egress.allowed_ports[1]"}},
		{"quoted key", "exec:\n  credentials:\n    files:\n      a/b: \"${credential:x}\"\n", []string{`exec.credentials.files["a/b"]`}},
		{"refused keys in two mappings, the later one clean", "exec:\n  credentials:\n    env:\n      LD_PRELOAD: \"${credential:x}\"\nupstreams:\n  fs:\n    command: [/bin/x]\n    env:\n      OK_NAME: v\n", []string{"exec.credentials.env.LD_PRELOAD"}},
		{"the same key refused in two mappings", "exec:\n  credentials:\n    env:\n      PATH: \"${credential:x}\"\nupstreams:\n  fs:\n    command: [/bin/x]\n    env:\n      PATH: /bin\n", []string{"exec.credentials.env.PATH", "upstreams.fs.env.PATH"}},
		{"merge key resolved", "exec:\n  limits:\n    <<: {pids: 4}\n", []string{"exec.limits.pids"}},
		{"alias resolved", "exec:\n  limits: &l\n    pids: 8\nnotifications:\n  webhook:\n    timeout_seconds: 31\n", []string{"notifications.webhook.timeout_seconds"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ps, err := v.Validate([]byte(tc.yaml))
			assert.NilError(t, err)
			var got []string
			for _, p := range ps {
				got = append(got, p.Path)
			}
			assert.DeepEqual(t, got, tc.want)
		})
	}
	_, err = v.Validate([]byte("a: 1\n---\nb: 2\n"))
	assert.Check(t, is.ErrorIs(err, schema.ErrNotOneDocument))
	_, err = v.Validate([]byte("exec: [\n"))
	assert.Check(t, is.ErrorIs(err, schema.ErrNotOneDocument))
}

func TestRelated(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		schema, loader string
		want           bool
	}{
		{"exec.shell", "exec.shell", true},
		{"exec", "exec.shel", true},                // an unknown key, named at its mapping
		{"upstreams.fs.env", "upstreams.fs", true}, // inside the entry the loader names
		{"", "agents", true},
		{"exec.limits", "exec.shell", false},
		{"exec.limits.pids", "exec.limits.pid", false},
		{`exec.credentials.files`, `exec.credentials.files["a.b"]`, true},
		{"a.b[1]", "a.b[10]", false},
	} {
		assert.Check(t, is.Equal(schematest.Related(tc.schema, tc.loader), tc.want), "%q %q", tc.schema, tc.loader)
	}
}

func TestYAMLBlocks(t *testing.T) {
	t.Parallel()
	md := "# t\n\n```yaml\na: 1\n```\n\n- item\n\n  ```yaml\n  b:\n    c: 2\n  ```\n\n```sh\nno\n```\n"
	got := schematest.YAMLBlocks(md)
	assert.DeepEqual(t, got, []schematest.Block{{Line: 4, Text: "a: 1\n"}, {Line: 10, Text: "b:\n  c: 2\n"}})
}
