package policy

import (
	"errors"
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

// Why a loader error is beyond any JSON Schema: one value checked against
// another part of the file, or what a value means beyond its text.
const (
	crossRef  = "one value checked against another part of the file"
	byMeaning = "what the value means, beyond its text"
)

// beyondSchema lists, by bad file and path, each refusal of the loader that
// the policy schema cannot make, and why; every other refusal in
// testdata/bad the schema makes too, at the same place (see the config's
// TestSchemaBadConfigs).
var beyondSchema = map[string]map[string]string{
	"agent-unknown-profile.yaml":  {"agents.ci.profile": crossRef},
	"no-default-profile.yaml":     {"default_agent.profile": crossRef},
	"rule-duplicate-name.yaml":    {"profiles.default.rules[1].name": crossRef},
	"destination-decimal-ip.yaml": {"agents.ci.destinations[0]": byMeaning},
	"several.yaml":                {"agents.ci.profile": crossRef},
}

var policyKey = regexp.MustCompile(`(?m)^(default_agent|agents|profiles|tool_pins):`)

func policySchema(t *testing.T) *schema.Validator {
	t.Helper()
	v, err := schema.Compile(schema.Policy)
	assert.NilError(t, err)
	return v
}

func TestSchemaShape(t *testing.T) {
	t.Parallel()
	assert.DeepEqual(t, policySchema(t).Mismatches(reflect.TypeFor[wirePolicy]()), []string(nil))
}

func TestSchemaBadPolicies(t *testing.T) {
	t.Parallel()
	v := policySchema(t)
	files, err := filepath.Glob("testdata/bad/*.yaml")
	assert.NilError(t, err)
	assert.Assert(t, len(files) >= 15)
	for _, file := range files {
		base := filepath.Base(file)
		t.Run(base, func(t *testing.T) {
			data, err := os.ReadFile(file)
			assert.NilError(t, err)
			_, err = Parse(file, data)
			var errs *yamlfile.Errors
			assert.Assert(t, errors.As(err, &errs), "%s: %v", file, err)
			problems, err := v.Validate(data)
			if errors.Is(err, schema.ErrNotOneDocument) {
				for _, fe := range errs.List {
					assert.Check(t, is.Equal(fe.Path, ""), "%s: the loader found a value to refuse; the schema found no document", fe)
				}
				return
			}
			assert.NilError(t, err)
			for _, d := range schematest.Agree(errs.List, problems, beyondSchema[base]) {
				t.Error(d)
			}
		})
	}
	for base := range beyondSchema {
		_, err := os.Stat(filepath.Join("testdata/bad", base))
		assert.Check(t, err, "beyondSchema names %s", base)
	}
}

// TestSchemaGoodPolicies: the schema accepts every good policy, the
// embedded default, and every policy example in docs/.
func TestSchemaGoodPolicies(t *testing.T) {
	t.Parallel()
	v := policySchema(t)
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
