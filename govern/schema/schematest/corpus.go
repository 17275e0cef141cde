package schematest

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern/schema"
	"github.com/mitrity/mitrity/govern/yamlfile"
)

// Why a loader refusal is beyond any JSON Schema: the schema sees one
// file's text, not the host, not one value against another elsewhere in
// the file, and not what an address means.
const (
	OnHost    = "what the host has: files, users, who runs the gateway"
	CrossRef  = "one value checked against another part of the file"
	ByMeaning = "what the value means, beyond its text"
)

// Compile compiles the named embedded schema, or fails t.
func Compile(t testing.TB, name string) *schema.Validator {
	t.Helper()
	v, err := schema.Compile(name)
	assert.NilError(t, err)
	return v
}

// LoaderErrors returns the problems a loader's error lists: none for nil;
// any other error than a *yamlfile.Errors fails t.
func LoaderErrors(t testing.TB, err error) []yamlfile.FieldError {
	t.Helper()
	if err == nil {
		return nil
	}
	var errs *yamlfile.Errors
	assert.Assert(t, errors.As(err, &errs), "%T: %v", err, err)
	return errs.List
}

// BadCorpus checks the schema v against a loader over dir/*.yaml (at least
// atLeast files): load refuses each file; every refusal the schema can
// make, it makes, at the place the loader names, and it refuses nothing
// else there (see Agree); a file that is not one YAML document is the
// parser's to refuse. beyond lists, by file name and path, each refusal no
// schema can make, and why; a name in it with no file fails the test, so
// the list only shrinks.
func BadCorpus(t *testing.T, v *schema.Validator, dir string, atLeast int, load func(name string, data []byte) error, beyond map[string]map[string]string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	assert.NilError(t, err)
	assert.Assert(t, len(files) >= atLeast, "%d files in %s", len(files), dir)
	refused := 0
	for _, file := range files {
		base := filepath.Base(file)
		t.Run(base, func(t *testing.T) {
			data, err := os.ReadFile(file)
			assert.NilError(t, err)
			loader := LoaderErrors(t, load(file, data))
			assert.Assert(t, len(loader) > 0, "the loader accepts %s", file)
			problems, err := v.Validate(data)
			if errors.Is(err, schema.ErrNotOneDocument) {
				for _, fe := range loader {
					assert.Check(t, is.Equal(fe.Path, ""), "%s: the loader found a value to refuse; the schema found no document", fe)
				}
				return
			}
			assert.NilError(t, err)
			for _, d := range Agree(loader, problems, beyond[base]) {
				t.Error(d)
			}
			if len(problems) > 0 {
				refused++
			}
		})
	}
	for base := range beyond {
		_, err := os.Stat(filepath.Join(dir, base))
		assert.Check(t, err, "the beyond-schema list names %s", base)
	}
	t.Logf("%d of %d files in %s refused by the schema too", refused, len(files), dir)
}
