package main

import (
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// TestServeBoundFlags: a bound of --http that would not bound anything is
// refused before the gateway starts.
func TestServeBoundFlags(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "tokens")
	assert.NilError(t, os.WriteFile(tokens, []byte("tok-0123456789abcdef ci\n"), 0o600))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-sessions", "0"}, "--max-sessions 0: want at least 1"},
		{[]string{"--max-connections", "-1"}, "--max-connections -1: want at least 1"},
		{[]string{"--max-connections-per-peer", "0"}, "--max-connections-per-peer 0"},
		{[]string{"--session-idle-timeout", "10ms"}, "--session-idle-timeout 10ms: want at least 1s"},
	} {
		_, _, err := run(t, append([]string{"serve", "--http", "127.0.0.1:0", "--token-file", tokens}, tc.args...)...)
		assert.Check(t, err != nil, "%v", tc.args)
		if err != nil {
			assert.Check(t, is.Contains(err.Error(), tc.want), "%v", tc.args)
		}
	}
}
