package dlp

import (
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestPieces(t *testing.T) {
	const v = "Zq8vK2mPx7Rt4LwN9bYc3HdJ6fGs1AeU"
	r, err := NewRedactor([]Secret{{ID: "gh", Value: v}})
	assert.NilError(t, err)
	tests := []struct {
		name  string
		texts []string
		want  [][]Match // nil: nothing to redact
	}{
		{"three argv words", []string{"echo", v[:11], v[11:22], v[22:]},
			[][]Match{nil, {{0, 11, "gh"}}, {{0, 11, "gh"}}, {{0, 10, "gh"}}}},
		{"file names under a shared directory, out of order", []string{"/w/" + v[22:], "/w/" + v[:11], "/w/" + v[11:22]},
			[][]Match{{{3, 13, "gh"}}, {{3, 14, "gh"}}, {{3, 14, "gh"}}}},
		{"one piece of 11 alone is under the bound", []string{"echo", v[:11]}, nil},
		{"two pieces of 8 make 16", []string{v[:8] + " and " + v[20:28]}, [][]Match{{{0, 8, "gh"}, {13, 21, "gh"}}}},
		{"runs inside other words are no pieces", []string{"x" + v[:11] + "y", v[11:22] + "z", "0" + v[22:]}, nil},
		{"ordinary text", []string{"git", "push", "origin", "main", "/workspace/deploy.sh"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.DeepEqual(t, r.Pieces(tc.texts), tc.want)
		})
	}
}

func TestMatches(t *testing.T) {
	const v = "Zq8vK2mPx7Rt4LwN9bYc3HdJ6fGs1AeU"
	r, err := NewRedactor([]Secret{{ID: "gh", Value: v}})
	assert.NilError(t, err)
	text := "a " + v + " b"
	ms := r.Matches([]byte(text))
	assert.Assert(t, is.Len(ms, 1))
	out, _ := r.Redact([]byte(text))
	assert.Check(t, is.Equal(text[:ms[0].Start]+CredentialMarker("gh")+text[ms[0].End:], string(out)), "Matches are the spans Redact replaces")
	assert.Check(t, is.Len(r.Matches([]byte("nothing here")), 0))
}
