// Package e2e builds every Mitrity binary and drives them as users and real
// clients do. It holds only tests; run them with `make test`, which builds
// bin/ first and points MITRITY_BIN at it.
package e2e
