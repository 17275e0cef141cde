package framework

import (
	"testing"

	"gotest.tools/v3/assert"
)

func TestCheckHookPath(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"/usr/local/bin/mitrity-hook", "/opt/mitrity-1.2.3/bin/mitrity-hook", "/home/dev/.local/bin/mitrity-hook"} {
		assert.Check(t, CheckHookPath(ok), ok)
	}
	for bad, want := range map[string]string{
		"mitrity-hook":                    "not absolute",
		"/opt/my tools/mitrity-hook":      `holds ' '`,
		"/opt/$HOME/mitrity-hook":         `holds '$'`,
		"/opt/x;rm/mitrity-hook":          `holds ';'`,
		"/opt/'q'/mitrity-hook":           `holds '\''`,
		"/opt/../bin/mitrity-hook":        "not clean",
		"/opt//bin/mitrity-hook":          "not clean",
		"/opt/bin/mitrity-hook\n":         `holds '\n'`,
		"/opt/bin/mitrity-h\u00f6\u00f6k": `holds 'ö'`,
	} {
		assert.ErrorContains(t, CheckHookPath(bad), want, bad)
	}
}

func TestRelayCommand(t *testing.T) {
	t.Parallel()
	got, err := RelayCommand("/usr/local/bin/mitrity-hook", "mt1_0123456789abcdef")
	assert.NilError(t, err)
	assert.Equal(t, got, "/usr/local/bin/mitrity-hook exec mt1_0123456789abcdef")
	assert.Equal(t, RelayPattern("/usr/local/bin/mitrity-hook"), "/usr/local/bin/mitrity-hook exec *")
	for _, ticket := range []string{"short", "mt1_0123456789abcdef; rm -rf /", "mt1 0123456789abcdef", string(make([]byte, 300))} {
		_, err := RelayCommand("/usr/local/bin/mitrity-hook", ticket)
		assert.Check(t, err != nil, "ticket %q accepted", ticket)
	}
	_, err = RelayCommand("mitrity-hook", "mt1_0123456789abcdef")
	assert.ErrorContains(t, err, "not absolute")
}

func TestReferencesHook(t *testing.T) {
	t.Parallel()
	const hook = "/opt/tools/mh"
	for cmd, want := range map[string]bool{
		"ls -la":                                 false,
		"/usr/local/bin/mitrity-hook exec mt1_x": true,
		"touch ~/x; mitrity-hook exec mt1_x":     true,
		"/opt/tools/mh exec mt1_x":               true,
		"cat README.md":                          false,
	} {
		assert.Equal(t, ReferencesHook(cmd, hook), want, cmd)
	}
}
