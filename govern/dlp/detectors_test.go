package dlp

import (
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

func TestDetectors(t *testing.T) {
	t.Parallel()
	all, err := Bind([]string{"all"})
	assert.NilError(t, err)
	hitCases := map[string]string{
		"aws_access_key_id":          "aws configure set aws_access_key_id AKIAIOSFODNN7EXAMPLE",
		"github_token":               "git clone https://x:ghp_" + strings.Repeat("a1B2", 9) + "@github.com/o/r",
		"gitlab_token":               "PRIVATE-TOKEN: glpat-abcdefghij0123456789",
		"slack_token":                "curl -d token=xoxb-1234567890-abcdefghij",
		"slack_webhook":              "https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXXXXXXXXXX",
		"stripe_key":                 "sk_live_" + strings.Repeat("4eC39HqLyjWDarjtT1zdp7dc", 1),
		"google_api_key":             "key=AIzaSyA-1234567890abcdefghijklmnopqrstu",
		"npm_token":                  "//registry.npmjs.org/:_authToken=npm_" + strings.Repeat("a", 36),
		"private_key":                "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\n-----END OPENSSH PRIVATE KEY-----",
		"jwt":                        "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
		"connection_string_password": "psql postgres://app:s3cr3t-pw@db.internal:5432/app",
		"anthropic_api_key":          "ANTHROPIC_API_KEY=sk-ant-api03-" + strings.Repeat("x", 40),
	}
	for name, text := range hitCases {
		hits := all.Scan(text)
		found := false
		for _, h := range hits {
			found = found || h.Detector == name
		}
		assert.Check(t, found, "%s: no hit in %q (%v)", name, text, hits)
		red, _ := all.Redact(text)
		assert.Check(t, strings.Contains(red, "[REDACTED:dlp:"), name)
	}
	clean := []string{
		"git status", "go test ./...", "curl https://api.github.com/repos/o/r", "echo AKIA",
		"postgres://localhost/app", "npm ci", "ssh-keygen -t ed25519", "sk-learn is a library",
		"grep -rn 'BEGIN PUBLIC KEY' .",
	}
	for _, c := range clean {
		assert.Check(t, len(all.Scan(c)) == 0, "false positive on %q: %v", c, all.Scan(c))
	}
}

func TestBind(t *testing.T) {
	t.Parallel()
	b, err := Bind([]string{"github_token"})
	assert.NilError(t, err)
	assert.Equal(t, len(b.Scan("AKIAIOSFODNN7EXAMPLE")), 0)
	_, err = Bind([]string{"nope"})
	assert.ErrorContains(t, err, `unknown DLP detector "nope"`)
}
