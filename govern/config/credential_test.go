package config

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

const secret = "s3cr3t-value-0123"

// fetchErr checks that a refusal names the credential and never the value.
func fetchErr(t *testing.T, s CredentialSource, want string) {
	t.Helper()
	v, err := s.Fetch(context.Background())
	assert.ErrorContains(t, err, want)
	assert.Check(t, is.Equal(v, ""))
	assert.Check(t, is.Contains(err.Error(), `credential "`+s.ID+`"`))
	assert.Check(t, !strings.Contains(err.Error(), secret), "the value leaked into %q", err)
}

func TestFetchEnv(t *testing.T) { // t.Setenv: not parallel
	t.Setenv("MITRITY_TEST_CRED", secret)
	v, err := CredentialSource{ID: "gh", Env: "MITRITY_TEST_CRED"}.Fetch(context.Background())
	assert.NilError(t, err)
	assert.Equal(t, v, secret)

	t.Setenv("MITRITY_TEST_CRED", "")
	fetchErr(t, CredentialSource{ID: "gh", Env: "MITRITY_TEST_CRED"}, "$MITRITY_TEST_CRED is empty or unset")

	t.Setenv("MITRITY_TEST_CRED", "short")
	fetchErr(t, CredentialSource{ID: "gh", Env: "MITRITY_TEST_CRED"}, "the value is 5 bytes; at least 8 are required")
}

func writeCred(t *testing.T, content string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "cred")
	assert.NilError(t, os.WriteFile(p, []byte(content), 0o600))
	assert.NilError(t, os.Chmod(p, mode))
	return p
}

func TestFetchFile(t *testing.T) {
	t.Parallel()
	for _, mode := range []os.FileMode{0o600, 0o400} {
		p := writeCred(t, secret+"\n", mode)
		v, err := CredentialSource{ID: "gh", File: p}.Fetch(context.Background())
		assert.NilError(t, err, "mode %04o", mode)
		assert.Equal(t, v, secret, "one trailing newline is dropped")
	}
	p := writeCred(t, secret+"\n\n", 0o600)
	v, err := CredentialSource{ID: "gh", File: p}.Fetch(context.Background())
	assert.NilError(t, err)
	assert.Equal(t, v, secret+"\n", "only one")

	for _, mode := range []os.FileMode{0o644, 0o640, 0o700, 0o604} {
		p := writeCred(t, secret, mode)
		fetchErr(t, CredentialSource{ID: "gh", File: p}, "want 0600 or 0400")
	}
	fetchErr(t, CredentialSource{ID: "gh", File: writeCred(t, "", 0o600)}, "the value is empty")
	fetchErr(t, CredentialSource{ID: "gh", File: writeCred(t, "1234567\n", 0o600)}, "the value is 7 bytes")
	fetchErr(t, CredentialSource{ID: "gh", File: writeCred(t, strings.Repeat("x", MaxCredentialBytes+1), 0o600)}, "larger than 64 KiB")
	fetchErr(t, CredentialSource{ID: "gh", File: t.TempDir()}, "not a regular file")
	fetchErr(t, CredentialSource{ID: "gh", File: filepath.Join(t.TempDir(), "absent")}, "no such file")
}

func TestFetchFileOtherOwner(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("chown to another user needs root")
	}
	p := writeCred(t, secret, 0o600)
	assert.NilError(t, os.Chown(p, 65534, 65534))
	fetchErr(t, CredentialSource{ID: "gh", File: p}, "owned by uid 65534, not the gateway's uid 0")
}

func TestFetchCommand(t *testing.T) {
	t.Parallel()
	v, err := CredentialSource{ID: "gh", Command: []string{"/bin/echo", secret}}.Fetch(context.Background())
	assert.NilError(t, err)
	assert.Equal(t, v, secret)

	// No shell: the argument is one word, printed as is.
	v, err = CredentialSource{ID: "gh", Command: []string{"/bin/echo", "$HOME;$(id)"}}.Fetch(context.Background())
	assert.NilError(t, err)
	assert.Equal(t, v, "$HOME;$(id)")

	fetchErr(t, CredentialSource{ID: "gh", Command: []string{"/bin/false"}}, "/bin/false exited with status 1")
	fetchErr(t, CredentialSource{ID: "gh", Command: []string{"/bin/echo", "short"}}, "the value is 5 bytes")
	fetchErr(t, CredentialSource{ID: "gh", Command: []string{"/nonexistent/helper"}}, "no such file")
	fetchErr(t, CredentialSource{ID: "gh", Command: []string{}}, "empty command")

	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = CredentialSource{ID: "gh", Command: []string{"/bin/sleep", "30"}}.Fetch(ctx)
	assert.ErrorContains(t, err, "did not finish in time")
	assert.Check(t, time.Since(start) < 5*time.Second)
}

func TestFetchNoSource(t *testing.T) {
	t.Parallel()
	fetchErr(t, CredentialSource{ID: "gh"}, "no source")
}
