package govern

import "strings"

// CredentialPrefix starts the name of every variable that carries a
// brokered credential; CredentialDirVar names the directory of credential
// files.
const (
	CredentialPrefix = "MITRITY_CRED_"
	CredentialDirVar = "MITRITY_CRED_DIR"
)

// ValidCredentialID reports whether id may name a credential: 1 to 128
// letters, digits, '_', '-' and '.'.
func ValidCredentialID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}

// CredentialVar is the variable ${credential:<id>} is rewritten to and the
// credential injected as: the id upper-cased, anything not a letter or
// digit becoming '_'.
func CredentialVar(id string) string {
	b := []byte(strings.ToUpper(id))
	for i, c := range b {
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '_'
		}
	}
	return CredentialPrefix + string(b)
}
