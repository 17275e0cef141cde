package main

import (
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

func TestServeFlags(t *testing.T) {
	dir := t.TempDir()
	loose := filepath.Join(dir, "tokens")
	assert.NilError(t, os.WriteFile(loose, []byte("tok-0123456789abcdef ci\n"), 0o644))
	assert.NilError(t, os.Chmod(loose, 0o644))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--http", "127.0.0.1:0"}, "--http needs --token-file"},
		{[]string{"serve", "--http", ":8765", "--token-file", loose}, "name the host"},
		{[]string{"serve", "--http", "127.0.0.1:0", "--token-file", loose}, "chmod 600"},
		{[]string{"serve", "--stdio", "--http", "127.0.0.1:0"}, "exclusive"},
		{[]string{"serve", "--token-file", loose}, "--http only"},
	} {
		_, _, err := run(t, tc.args...)
		assert.Check(t, err != nil, "%v", tc.args)
		if err != nil {
			assert.Check(t, is.Contains(err.Error(), tc.want), "%v", tc.args)
		}
	}
}
