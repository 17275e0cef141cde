package config

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern/schema"
	"github.com/mitrity/mitrity/govern/schema/schematest"
	"github.com/mitrity/mitrity/govern/yamlfile"
)

// Why a loader error is beyond any JSON Schema: the schema sees one file's
// text, not the host, not one value against another elsewhere in the
// file, and not what an address means.
const (
	onHost    = "what the host has: files, users, who runs the gateway"
	crossRef  = "one value checked against another part of the file"
	byMeaning = "what the value means, beyond its text"
)

// beyondSchema lists, by bad file and path, each refusal of the loader that
// the gateway schema cannot make, and why. Every other refusal in
// testdata/bad the schema must make too, at the same place; a refusal
// listed here that the schema does make fails the test, so the list only
// shrinks.
var beyondSchema = map[string]map[string]string{
	"admission-owner-default-socket.yaml":  {"admission.owners[0]": onHost},
	"admission-owner-other-user.yaml":      {"admission.owners[1]": onHost},
	"admission-owners-two-users-root.yaml": {"admission.owners[0]": onHost, "admission.owners[1]": onHost, "admission.owners[2]": onHost},
	"agent-settable-credential.yaml":       {"exec.env.agent_settable[0]": crossRef},
	"cidr-host-bits.yaml":                  {"exec.egress.denied_cidrs[0]": byMeaning},
	"cred-file-undefined.yaml":             {`exec.credentials.files["key.json"]`: crossRef},
	"cred-undefined.yaml":                  {"exec.credentials.env.GITHUB_TOKEN": crossRef},
	"credential-id-collision.yaml":         {"credentials.gh_token": crossRef},
	"cwd-absent-dir.yaml":                  {"exec.default_cwd": onHost},
	"cwd-not-dir.yaml":                     {"exec.default_cwd": onHost},
	"policy-missing.yaml":                  {"policy": onHost},
	"private-cidr-loopback.yaml":           {"exec.egress.allowed_private_cidrs[0]": byMeaning},
	"private-cidr-public.yaml":             {"exec.egress.allowed_private_cidrs[1]": byMeaning},
	"run-as-required-for-root.yaml":        {"exec.run_as": onHost},
	"run-as-root.yaml":                     {"exec.run_as": onHost},
	"run-as-unknown.yaml":                  {"exec.run_as": onHost},
	"settings-missing.yaml":                {"exec.sandbox.settings_file": onHost},
	"shell-directory.yaml":                 {"exec.shell": onHost},
	"shell-missing.yaml":                   {"exec.shell": onHost},
	"shell-not-executable.yaml":            {"exec.shell": onHost},
	"upstream-credential-undefined.yaml":   {"upstreams.github.env.GITHUB_TOKEN": crossRef, "upstreams.api.headers.Authorization": crossRef},
	"upstream-headers-bad.yaml":            {"upstreams.api.tls.ca_file": onHost},
	"upstream-writable-roots.yaml":         {"upstreams.fs.writable_roots[1]": onHost, "upstreams.fs.writable_roots[2]": onHost},
}

func gatewaySchema(t *testing.T) *schema.Validator {
	t.Helper()
	v, err := schema.Compile(schema.Gateway)
	assert.NilError(t, err)
	return v
}

// loaderErrors loads the file as TestBadConfigs does (a "# euid: 0" line
// stages a root gateway) and returns its problems.
func loaderErrors(t *testing.T, name string, data []byte) []yamlfile.FieldError {
	t.Helper()
	l := fakeHost(stagedFiles)
	if strings.Contains(string(data), "\n# euid: 0\n") || strings.HasPrefix(string(data), "# euid: 0\n") {
		l = asRoot(l)
	}
	_, err := l.Parse(name, data)
	if err == nil {
		return nil
	}
	var errs *yamlfile.Errors
	assert.Assert(t, errors.As(err, &errs), "%T: %v", err, err)
	return errs.List
}

// TestSchemaShape: the schema names every key of the wire struct the
// loader decodes, with its kind, and no other; each leaf has a
// description for editors.
func TestSchemaShape(t *testing.T) {
	t.Parallel()
	assert.DeepEqual(t, gatewaySchema(t).Mismatches(reflect.TypeFor[wireConfig]()), []string(nil))
}

// TestSchemaBadConfigs: every refusal of testdata/bad the schema can make,
// it makes, at the place the loader names, and it refuses nothing else
// there; a file that is not one YAML document is the parser's to refuse.
func TestSchemaBadConfigs(t *testing.T) {
	t.Parallel()
	v := gatewaySchema(t)
	files, err := filepath.Glob("testdata/bad/*.yaml")
	assert.NilError(t, err)
	assert.Assert(t, len(files) >= 25)
	refused := 0
	for _, file := range files {
		base := filepath.Base(file)
		t.Run(base, func(t *testing.T) {
			data, err := os.ReadFile(file)
			assert.NilError(t, err)
			loader := loaderErrors(t, file, data)
			assert.Assert(t, len(loader) > 0, "the loader accepts %s", file)
			problems, err := v.Validate(data)
			if errors.Is(err, schema.ErrNotOneDocument) {
				for _, fe := range loader {
					assert.Check(t, is.Equal(fe.Path, ""), "%s: the loader found a value to refuse; the schema found no document", fe)
				}
				return
			}
			assert.NilError(t, err)
			for _, d := range schematest.Agree(loader, problems, beyondSchema[base]) {
				t.Error(d)
			}
			if len(problems) > 0 {
				refused++
			}
		})
	}
	for base := range beyondSchema {
		_, err := os.Stat(filepath.Join("testdata/bad", base))
		assert.Check(t, err, "beyondSchema names %s", base)
	}
	t.Logf("%d of %d bad configs refused by the schema too", refused, len(files))
}

// TestSchemaGoodConfigs: the schema accepts every good config, the
// embedded default as the gateway loads it, and every config example in
// docs/. The good policy beside them is the policy schema's.
func TestSchemaGoodConfigs(t *testing.T) {
	t.Parallel()
	gw, pol := gatewaySchema(t), compile(t, schema.Policy)
	files, err := filepath.Glob("testdata/good/*.yaml")
	assert.NilError(t, err)
	for _, file := range files {
		data, err := os.ReadFile(file)
		assert.NilError(t, err)
		v := gw
		if _, err := yamlfile.Decode(file, data, &wireConfig{}); err != nil {
			v = pol // not a config: the policy the good configs name
		}
		problems, err := v.Validate(data)
		assert.NilError(t, err)
		assert.Check(t, is.Len(problems, 0), "%s: %v", file, problems)
	}

	// Copied to a file as is, the embedded default lacks only the working
	// directory, for the schema as for the loader; with the one the
	// gateway fills in, it passes.
	def := DefaultYAML()
	problems, err := gw.Validate(def)
	assert.NilError(t, err)
	loader := loaderErrors(t, FileName, def)
	assert.Assert(t, is.Len(loader, 1))
	assert.DeepEqual(t, schematest.Agree(loader, problems, nil), []string(nil))
	filled := strings.Replace(string(def), "\nexec:\n", "\nexec:\n  default_cwd: /srv/repo\n", 1)
	assert.Assert(t, filled != string(def))
	problems, err = gw.Validate([]byte(filled))
	assert.NilError(t, err)
	assert.Check(t, is.Len(problems, 0), "%v", problems)

	// The first line points an editor at the installed schema.
	first, _, _ := strings.Cut(string(def), "\n")
	assert.Equal(t, first, "# yaml-language-server: $schema=file://"+schema.InstallDir+"/"+schema.Gateway)

	configs := docConfigs(t)
	assert.Assert(t, len(configs) >= 10, "found %d config examples in docs/", len(configs))
	t.Logf("config examples in docs/: %s", strings.Join(slices.Sorted(maps.Keys(configs)), " "))
	for where, text := range configs {
		problems, err := gw.Validate([]byte(text))
		assert.NilError(t, err, where)
		assert.Check(t, is.Len(problems, 0), "%s: %v\n%s", where, problems, text)
	}
}

func compile(t *testing.T, name string) *schema.Validator {
	t.Helper()
	v, err := schema.Compile(name)
	assert.NilError(t, err)
	return v
}

// docConfigs are the ```yaml blocks of docs/*.md that the loader decodes as
// a config (its keys, its kinds): a config example, whole or a block of
// one, by "file:line".
func docConfigs(t *testing.T) map[string]string {
	t.Helper()
	docs, err := filepath.Glob("../../docs/*.md")
	assert.NilError(t, err)
	if len(docs) == 0 {
		t.Skip("docs/ is not beside this module")
	}
	out := map[string]string{}
	for _, doc := range docs {
		md, err := os.ReadFile(doc)
		assert.NilError(t, err)
		for _, b := range schematest.YAMLBlocks(string(md)) {
			if _, err := yamlfile.Decode("x", []byte(b.Text), &wireConfig{}); err != nil {
				continue // a policy, or a fragment of one
			}
			out[filepath.Base(doc)+":"+strconv.Itoa(b.Line)] = b.Text
		}
	}
	return out
}
