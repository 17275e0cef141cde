package service

import (
	"testing"

	"gotest.tools/v3/assert"
)

// TestSubstituteKeepsNumbers: substituting a credential reference changes
// that string and nothing else: numbers go on exactly as the agent wrote
// them (an id past 2^53 through a float64 would name another object).
func TestSubstituteKeepsNumbers(t *testing.T) {
	t.Parallel()
	got, err := substitute([]byte(`{"auth":"Bearer ${credential:gh}","id":9007199254740993,"n":[1.5,12345678901234567890123],"f":0.10000000000000000555}`),
		map[string]string{"gh": "s3cret"})
	assert.NilError(t, err)
	assert.Equal(t, string(got), `{"auth":"Bearer s3cret","f":0.10000000000000000555,"id":9007199254740993,"n":[1.5,12345678901234567890123]}`)
}
