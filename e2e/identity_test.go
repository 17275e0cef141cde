package e2e

import (
	"os"
	"testing"
)

// forGatewayIdentities runs f once per way the gateway is run, in
// parallel: as root with exec.run_as (asUser false), and as the
// unprivileged test user itself (asUser true). Both need root to set up.
func forGatewayIdentities(t *testing.T, f func(t *testing.T, asUser bool)) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("both identities need root to set up")
	}
	for _, asUser := range []bool{false, true} {
		name := "root-gateway"
		if asUser {
			name = "unprivileged-gateway"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f(t, asUser)
		})
	}
}
