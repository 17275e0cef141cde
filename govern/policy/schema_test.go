package policy

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern/schema"
	"github.com/mitrity/mitrity/govern/schema/schematest"
	"github.com/mitrity/mitrity/govern/yamlfile"
)

// beyondSchema lists, by bad file and path, each refusal of the loader that
// the policy schema cannot make, and why; every other refusal in
// testdata/bad the schema makes too, at the same place (see
// schematest.BadCorpus).
var beyondSchema = map[string]map[string]string{
	"agent-unknown-profile.yaml":  {"agents.ci.profile": schematest.CrossRef},
	"no-default-profile.yaml":     {"default_agent.profile": schematest.CrossRef},
	"rule-duplicate-name.yaml":    {"profiles.default.rules[1].name": schematest.CrossRef},
	"destination-decimal-ip.yaml": {"agents.ci.destinations[0]": schematest.ByMeaning},
	"several.yaml":                {"agents.ci.profile": schematest.CrossRef},
}

var policyKey = regexp.MustCompile(`(?m)^(default_agent|agents|profiles|tool_pins):`)

func TestSchemaShape(t *testing.T) {
	t.Parallel()
	assert.DeepEqual(t, schematest.Compile(t, schema.Policy).Mismatches(reflect.TypeFor[wirePolicy]()), []string(nil))
}

func TestSchemaBadPolicies(t *testing.T) {
	t.Parallel()
	parse := func(name string, data []byte) error {
		_, err := Parse(name, data)
		return err
	}
	schematest.BadCorpus(t, schematest.Compile(t, schema.Policy), "testdata/bad", 15, parse, beyondSchema)
}

// TestSchemaGoodPolicies: the schema accepts every good policy, the
// embedded default, and every policy example in docs/.
func TestSchemaGoodPolicies(t *testing.T) {
	t.Parallel()
	v := schematest.Compile(t, schema.Policy)
	files, err := filepath.Glob("testdata/good/*.yaml")
	assert.NilError(t, err)
	files = append(files, "../config/testdata/good/policy.yaml")
	for _, file := range files {
		data, err := os.ReadFile(file)
		assert.NilError(t, err)
		problems, err := v.Validate(data)
		assert.NilError(t, err)
		assert.Check(t, is.Len(problems, 0), "%s: %v", file, problems)
	}

	def := DefaultYAML()
	problems, err := v.Validate(def)
	assert.NilError(t, err)
	assert.Check(t, is.Len(problems, 0), "%v", problems)
	first, _, _ := strings.Cut(string(def), "\n")
	assert.Equal(t, first, "# yaml-language-server: $schema=file://"+schema.InstallDir+"/"+schema.Policy)

	docs, err := filepath.Glob("../../docs/*.md")
	assert.NilError(t, err)
	if len(docs) == 0 {
		t.Skip("docs/ is not beside this module")
	}
	found := 0
	for _, doc := range docs {
		md, err := os.ReadFile(doc)
		assert.NilError(t, err)
		for _, b := range schematest.YAMLBlocks(string(md)) {
			// A policy example decodes as a policy and names one of its
			// keys at the top (an empty block would decode too).
			if _, err := yamlfile.Decode("x", []byte(b.Text), &wirePolicy{}); err != nil || !policyKey.MatchString(b.Text) {
				continue
			}
			found++
			problems, err := v.Validate([]byte(b.Text))
			assert.NilError(t, err)
			assert.Check(t, is.Len(problems, 0), "%s:%s: %v\n%s", filepath.Base(doc), strconv.Itoa(b.Line), problems, b.Text)
		}
	}
	assert.Check(t, found >= 5, "found %d policy examples in docs/", found)
}
