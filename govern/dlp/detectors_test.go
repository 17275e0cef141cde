package dlp

import (
	"slices"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

func names(t *testing.T, binding string) []string {
	t.Helper()
	ds, err := Detectors(binding)
	assert.NilError(t, err)
	var out []string
	for _, d := range ds {
		out = append(out, d.Name+"/"+d.Source)
	}
	return out
}

func TestBind(t *testing.T) {
	t.Parallel()
	b, err := Bind([]string{"github_token"})
	assert.NilError(t, err)
	assert.Equal(t, len(b.Scan("AKIAIOSFODNN7EXAMPLE")), 0)
	_, err = Bind([]string{"nope"})
	assert.ErrorContains(t, err, `unknown DLP detector "nope"`)
	_, err = Bind([]string{"github_token", "nope"})
	assert.ErrorContains(t, err, `unknown DLP detector "nope"`)
	_, err = Bind([]string{"all", "nope"})
	assert.ErrorContains(t, err, `unknown DLP detector "nope"`)

	// Every name a hit can carry can be bound, and so can "all".
	for _, n := range DetectorNames() {
		_, err := Bind([]string{n})
		assert.Check(t, err, n)
	}
	all, err := Bind([]string{"all"})
	assert.NilError(t, err)
	c := mustCatalog()
	assert.Equal(t, len(all.Names()), len(c.ds))
	// A name given twice, or inside "all", binds once.
	both, err := Bind([]string{"jwt", "jwt", "all"})
	assert.NilError(t, err)
	assert.Equal(t, len(both.Names()), len(c.ds))
}

// TestCatalog: the built-in names keep working and widen to the gitleaks
// rules for the same issuer; gitleaks ids bind by themselves.
func TestCatalog(t *testing.T) {
	t.Parallel()
	assert.DeepEqual(t, names(t, "aws_access_key_id"), []string{"aws_access_key_id/mitrity", "aws-access-token/gitleaks"})
	assert.DeepEqual(t, names(t, "aws-access-token"), []string{"aws-access-token/gitleaks"})
	assert.DeepEqual(t, names(t, "jwt"), []string{"jwt/mitrity", "jwt/gitleaks", "jwt-base64/gitleaks"})
	// gitleaks' one-line private-key rule brings the multi-line block.
	assert.DeepEqual(t, names(t, "private-key"), []string{"private_key/mitrity", "private-key/gitleaks"})
	assert.Assert(t, slices.Contains(names(t, "github_token"), "github-fine-grained-pat/gitleaks"))
	for _, old := range []string{"aws_access_key_id", "github_token", "gitlab_token", "slack_token", "slack_webhook", "stripe_key",
		"google_api_key", "npm_token", "openai_api_key", "anthropic_api_key", "private_key", "jwt", "connection_string_password"} {
		assert.Check(t, slices.Contains(DetectorNames(), old), "%s is no longer a detector", old)
	}
	// Rules that need a file path cannot judge output and are left out.
	for _, pathOnly := range []string{"pkcs12-file", "kubernetes-secret-yaml"} {
		_, err := Detectors(pathOnly)
		assert.ErrorContains(t, err, "unknown DLP detector")
	}
	assert.Check(t, len(DetectorNames()) > 200, "%d detectors", len(DetectorNames()))
	assert.Check(t, slices.IsSorted(DetectorNames()))
	assert.Check(t, slices.Contains(BindingNames(), "private-key"))
}

func TestResolution(t *testing.T) {
	t.Parallel()
	all := bindAll(t)
	// An Anthropic key is also an OpenAI-shaped key: the specific wins.
	key := "sk-ant-api03-" + strings.Repeat("x", 40)
	_, hits := all.Redact("ANTHROPIC_API_KEY=" + key)
	assert.DeepEqual(t, hits, []Hit{{Detector: "anthropic_api_key", Start: 18, End: 18 + len(key)}})
	// One secret, many matching detectors: one hit, from a built-in.
	tok := "ghp_" + strings.Repeat("aB3d", 9)
	got, hits := all.Redact("x " + tok + " y")
	assert.Equal(t, got, "x [REDACTED:dlp:github_token] y")
	assert.Equal(t, len(hits), 1)
	// Scan returns what Redact replaces.
	text := "a " + tok + "\nb AKIAY34FZKBOKMUTVV7A"
	_, want := all.Redact(text)
	assert.DeepEqual(t, all.Scan(text), want)
}

// TestSecretSpan: a rule's secret group is what goes, unless the group
// sits inside the token (then the whole match goes).
func TestSecretSpan(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ binding, in, want string }{
		// generic-api-key: the value, not the name.
		{"generic-api-key", `api_key = "Zx9q8w7e6r5t4y3u2i1o0pLkJhGf"`, `api_key = "[REDACTED:dlp:generic-api-key]"`},
		// jwt-base64's first group is the header's opening: all goes.
		{"jwt-base64", "ZXlKaGJHY2lPaUpJVXpJMU5pSjkuZXlKemRXSWlPaUl4TWpNME5UWTNPRGt3SW4wLmRvemo=",
			"[REDACTED:dlp:jwt-base64]"},
		{"azure_storage_key", "AccountKey=" + strings.Repeat("Ab3+", 21) + "xy==;", "AccountKey=[REDACTED:dlp:azure_storage_key];"},
	} {
		b, err := Bind([]string{tc.binding})
		assert.NilError(t, err)
		got, _ := b.Redact(tc.in)
		assert.Check(t, got == tc.want, "%s: got %q want %q", tc.binding, got, tc.want)
	}
}

func TestEntropy(t *testing.T) {
	t.Parallel()
	assert.Equal(t, entropy(nil), 0.0)
	assert.Equal(t, entropy([]byte("aaaa")), 0.0)
	assert.Equal(t, entropy([]byte("abcd")), 2.0)
	assert.Equal(t, entropy([]byte("aabb")), 1.0)
}

func TestLower(t *testing.T) {
	t.Parallel()
	var all []byte
	for c := range 256 {
		all = append(all, byte(c))
	}
	all = append(all, all...) // past the 8-byte blocks and into the tail
	got := make([]byte, len(all))
	lower(got, all)
	for i, c := range all {
		want := c
		if 'A' <= c && c <= 'Z' {
			want += 'a' - 'A'
		}
		assert.Equal(t, got[i], want, "byte %#x", c)
	}
}
