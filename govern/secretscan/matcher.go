package secretscan

import "bytes"

// Matcher finds any form of any of its secrets in a buffer. It is
// immutable and safe for concurrent use.
type Matcher struct {
	forms  [][]byte
	owners []string // form -> secret id
}

// NewMatcher builds a matcher over every form of every secret; values
// shorter than MinSecretBytes are left out (they cannot be told from
// ordinary text).
func NewMatcher(secrets []Secret) *Matcher {
	m := &Matcher{}
	seen := map[string]bool{}
	for _, s := range secrets {
		if len(s.Value) < MinSecretBytes {
			continue
		}
		for _, v := range Variants(s.Value) {
			if !seen[v] {
				seen[v] = true
				m.forms = append(m.forms, []byte(v))
				m.owners = append(m.owners, s.ID)
			}
		}
	}
	return m
}

// Empty reports whether the matcher has nothing to find.
func (m *Matcher) Empty() bool { return m == nil || len(m.forms) == 0 }

// Find returns the id of a secret one of whose forms b contains.
func (m *Matcher) Find(b []byte) (id string, ok bool) {
	if m == nil {
		return "", false
	}
	for i, f := range m.forms {
		if bytes.Contains(b, f) {
			return m.owners[i], true
		}
	}
	return "", false
}
