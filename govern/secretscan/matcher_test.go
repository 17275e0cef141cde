package secretscan

import (
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestMatcherFind(t *testing.T) {
	t.Parallel()
	const tok = "ghp_e2eSecretTokenValue0123456789abcdef"
	m := NewMatcher([]Secret{{ID: "gh", Value: tok}, {ID: "short", Value: "abc"}})
	for _, tc := range []struct {
		in   string
		want string
	}{
		{"Authorization: Bearer " + tok, "gh"},
		{"x=" + base64.StdEncoding.EncodeToString([]byte("user:"+tok)), "gh"},
		{hex.EncodeToString([]byte(tok)), "gh"},
		{url.QueryEscape("a b " + tok), "gh"},
		{"nothing here abc", ""},
	} {
		id, ok := m.Find([]byte(tc.in))
		assert.Check(t, is.Equal(id, tc.want), tc.in)
		assert.Check(t, is.Equal(ok, tc.want != ""), tc.in)
	}
	assert.Check(t, NewMatcher(nil).Empty())
	var nilM *Matcher
	_, ok := nilM.Find([]byte(tok))
	assert.Check(t, !ok)
}
