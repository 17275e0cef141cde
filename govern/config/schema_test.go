package config

import (
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

// beyondSchema lists, by bad file and path, each refusal of the loader that
// the gateway schema cannot make, and why. Every other refusal in
// testdata/bad the schema must make too, at the same place; a refusal
// listed here that the schema does make fails the test, so the list only
// shrinks (schematest.BadCorpus).
var beyondSchema = map[string]map[string]string{
	"admission-owner-default-socket.yaml":  {"admission.owners[0]": schematest.OnHost},
	"admission-owner-other-user.yaml":      {"admission.owners[1]": schematest.OnHost},
	"admission-owners-two-users-root.yaml": {"admission.owners[0]": schematest.OnHost, "admission.owners[1]": schematest.OnHost, "admission.owners[2]": schematest.OnHost},
	"agent-settable-credential.yaml":       {"exec.env.agent_settable[0]": schematest.CrossRef},
	"cidr-host-bits.yaml":                  {"exec.egress.denied_cidrs[0]": schematest.ByMeaning},
	"cred-file-undefined.yaml":             {`exec.credentials.files["key.json"]`: schematest.CrossRef},
	"cred-undefined.yaml":                  {"exec.credentials.env.GITHUB_TOKEN": schematest.CrossRef},
	"credential-id-collision.yaml":         {"credentials.gh_token": schematest.CrossRef},
	"cwd-absent-dir.yaml":                  {"exec.default_cwd": schematest.OnHost},
	"cwd-not-dir.yaml":                     {"exec.default_cwd": schematest.OnHost},
	"policy-missing.yaml":                  {"policy": schematest.OnHost},
	"private-cidr-loopback.yaml":           {"exec.egress.allowed_private_cidrs[0]": schematest.ByMeaning},
	"private-cidr-public.yaml":             {"exec.egress.allowed_private_cidrs[1]": schematest.ByMeaning},
	"run-as-required-for-root.yaml":        {"exec.run_as": schematest.OnHost},
	"run-as-root.yaml":                     {"exec.run_as": schematest.OnHost},
	"run-as-unknown.yaml":                  {"exec.run_as": schematest.OnHost},
	"settings-missing.yaml":                {"exec.sandbox.settings_file": schematest.OnHost},
	"shell-directory.yaml":                 {"exec.shell": schematest.OnHost},
	"shell-missing.yaml":                   {"exec.shell": schematest.OnHost},
	"shell-not-executable.yaml":            {"exec.shell": schematest.OnHost},
	"upstream-credential-undefined.yaml":   {"upstreams.github.env.GITHUB_TOKEN": schematest.CrossRef, "upstreams.api.headers.Authorization": schematest.CrossRef},
	"upstream-headers-bad.yaml":            {"upstreams.api.tls.ca_file": schematest.OnHost},
	"upstream-writable-roots.yaml":         {"upstreams.fs.writable_roots[1]": schematest.OnHost, "upstreams.fs.writable_roots[2]": schematest.OnHost},
}

// parseStaged loads the file as TestBadConfigs does (a "# euid: 0" line
// stages a root gateway) and returns its error.
func parseStaged(name string, data []byte) error {
	l := fakeHost(stagedFiles)
	if strings.Contains(string(data), "\n# euid: 0\n") || strings.HasPrefix(string(data), "# euid: 0\n") {
		l = asRoot(l)
	}
	_, err := l.Parse(name, data)
	return err
}

// TestSchemaShape: the schema names every key of the wire struct the
// loader decodes, with its kind, and no other; each leaf has a
// description for editors.
func TestSchemaShape(t *testing.T) {
	t.Parallel()
	assert.DeepEqual(t, schematest.Compile(t, schema.Gateway).Mismatches(reflect.TypeFor[wireConfig]()), []string(nil))
}

// TestSchemaBadConfigs: every refusal of testdata/bad the schema can make,
// it makes, at the place the loader names, and it refuses nothing else
// there; a file that is not one YAML document is the parser's to refuse.
func TestSchemaBadConfigs(t *testing.T) {
	t.Parallel()
	schematest.BadCorpus(t, schematest.Compile(t, schema.Gateway), "testdata/bad", 25, parseStaged, beyondSchema)
}

// TestSchemaGoodConfigs: the schema accepts every good config, the
// embedded default as the gateway loads it, and every config example in
// docs/. The good policy beside them is the policy schema's.
func TestSchemaGoodConfigs(t *testing.T) {
	t.Parallel()
	gw, pol := schematest.Compile(t, schema.Gateway), schematest.Compile(t, schema.Policy)
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
	loader := schematest.LoaderErrors(t, parseStaged(FileName, def))
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
