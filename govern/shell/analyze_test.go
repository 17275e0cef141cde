package shell

import (
	"crypto/sha256"
	"encoding/hex"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern"
)

func TestCheckText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, text string
		pos        Pos // zero when the text is accepted
	}{
		{"plain", "git status", Pos{}},
		{"tab and newline", "a\tb\nc", Pos{}},
		{"utf-8", "echo héllo ✓", Pos{}},
		{"CR", "git\rstatus", Pos{Line: 1, Col: 4}},
		{"NUL", "echo a\x00b", Pos{Line: 1, Col: 7}},
		{"ESC on line 2", "ls\nx\x1b[2J", Pos{Line: 2, Col: 2}},
		{"DEL", "a\x7f", Pos{Line: 1, Col: 2}},
		{"vertical tab", "a\vb", Pos{Line: 1, Col: 2}},
		{"form feed", "a\fb", Pos{Line: 1, Col: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := checkText(tt.text)
			if tt.pos == (Pos{}) {
				assert.Assert(t, d == nil, "unexpected denial %v", d)
				return
			}
			assert.Assert(t, d != nil)
			assert.Equal(t, d.Reason, govern.ReasonInvalidInput)
			assert.DeepEqual(t, d.Pos, tt.pos)
			// The refusal's event names the text by its hash (an event
			// without one cannot be written, and the call went unaudited).
			a := Analyze(Input{Text: tt.text, Dialect: DialectBash})
			sum := sha256.Sum256([]byte(tt.text))
			assert.Check(t, is.Equal(a.SHA256, hex.EncodeToString(sum[:])))
			assert.Check(t, a.Denial != nil && a.Denial.Reason == govern.ReasonInvalidInput)
		})
	}
}

func TestTooLong(t *testing.T) {
	t.Parallel()
	ok := strings.Repeat("a", MaxCommandBytes)
	assert.Assert(t, Analyze(Input{Text: ok, Dialect: DialectBash}).Denial == nil)
	a := Analyze(Input{Text: ok + "b", Dialect: DialectBash})
	assert.Assert(t, a.Denial != nil)
	assert.Equal(t, a.Denial.Reason, govern.ReasonInvalidInput)
	assert.Check(t, is.Contains(a.Denial.Message, "64 KiB"))
}

func TestDialectRequired(t *testing.T) {
	t.Parallel()
	for _, d := range []Dialect{"", "zsh", "fish"} {
		a := Analyze(Input{Text: "ls", Dialect: d})
		assert.Assert(t, a.Denial != nil, "dialect %q accepted", d)
	}
}

func TestRewriteCredentials(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, out string
		ids     []string
	}{
		{"echo hi", "echo hi", nil},
		{"curl -H @- <<< ${credential:github_token}", "curl -H @- <<< ${MITRITY_CRED_GITHUB_TOKEN}", []string{"github_token"}},
		{"X=${credential:aws-prod.key} Y=${credential:aws-prod.key}", "X=${MITRITY_CRED_AWS_PROD_KEY} Y=${MITRITY_CRED_AWS_PROD_KEY}", []string{"aws-prod.key"}},
		{"a ${credential:a} ${credential:b}", "a ${MITRITY_CRED_A} ${MITRITY_CRED_B}", []string{"a", "b"}},
		// Not a credential reference: left for the parser to judge.
		{"echo ${credential:bad id}", "echo ${credential:bad id}", nil},
		{"echo ${credential:", "echo ${credential:", nil},
		{"echo ${credential:}", "echo ${credential:}", nil},
	}
	for _, tt := range tests {
		out, ids := RewriteCredentials(tt.in)
		assert.Equal(t, out, tt.out)
		assert.Check(t, cmp.Equal(ids, tt.ids), "ids %q, want %q", ids, tt.ids)
	}
}

func TestJudgedTextHash(t *testing.T) {
	t.Parallel()
	a := Analyze(Input{Text: "echo ${credential:x}", Dialect: DialectBash})
	assert.Equal(t, a.Text, "echo ${MITRITY_CRED_X}")
	// printf %s 'echo ${MITRITY_CRED_X}' | sha256sum
	assert.Equal(t, a.SHA256, "613b0223cdcf262a9019f94725d582be85fa154a99c60c4efd92e285d38818ed")
	assert.DeepEqual(t, a.Credentials, []string{"x"})
}

// TestNoNetworkImports keeps the analyzer a pure function of its input:
// it must not be able to reach the network or run programs.
func TestNoNetworkImports(t *testing.T) {
	t.Parallel()
	deps, err := exec.Command("go", "list", "-deps", ".").Output()
	assert.NilError(t, err)
	for _, dep := range strings.Fields(string(deps)) {
		assert.Check(t, dep != "net" && dep != "net/http", "govern/shell depends on %s", dep)
	}
	// mvdan.cc/sh/v3/internal links os/exec; this package itself must not.
	own, err := exec.Command("go", "list", "-f", "{{join .Imports \" \"}}", ".").Output()
	assert.NilError(t, err)
	for _, imp := range strings.Fields(string(own)) {
		assert.Check(t, imp != "os/exec", "govern/shell imports os/exec")
	}
}
