package shell

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
)

// TestAliasTrapDifferential runs alias and trap constructs in the real
// shells (bash 5.2, dash) and checks the analysis against what ran: every
// external `/usr/bin/echo RAN:<tag>` the shell ran is in the command tree
// (or the analysis is opaque), and when the shell put the credential's
// value on an external command's argv (the echo prints it), the analysis
// denies credential_in_argv.
func TestAliasTrapDifferential(t *testing.T) {
	const secret = "tok-S3CRET"
	cases := []struct {
		dialect Dialect
		text    string
	}{
		{DialectBash, "shopt -s expand_aliases\nalias c='/usr/bin/echo RAN:c'\nc"},
		{DialectBash, "shopt -s expand_aliases\nalias c='/usr/bin/echo RAN:c \"$GITHUB_TOKEN\"'\nc"},
		{DialectBash, "set -o posix\nalias c='/usr/bin/echo RAN:posix \"$GITHUB_TOKEN\"'\nc"},
		{DialectBash, "shopt -s expand_aliases\nalias s='command ' c='/usr/bin/echo RAN:blank'\ns c"},
		{DialectBash, "shopt -s expand_aliases\nalias a=b b='/usr/bin/echo RAN:chain'\na"},
		{DialectBash, "shopt -s expand_aliases\nalias e='/usr/bin/echo RAN:e;'\ne e"},
		{DialectBash, "shopt -s expand_aliases\nalias c='/usr/bin/echo RAN:kept'\nf() { c; }\nunalias c\nf"},
		{DialectBash, "shopt -s expand_aliases\nf() { alias c='/usr/bin/echo RAN:fn \"$GITHUB_TOKEN\"'; }\nf\nc"},
		{DialectBash, "shopt -s expand_aliases; alias c='/usr/bin/echo RAN:sameline'; c"},
		{DialectSh, "alias c='/usr/bin/echo RAN:dash \"$GITHUB_TOKEN\"'\nc"},
		{DialectSh, "alias p='printf %s \"$GITHUB_TOKEN\" | xargs /usr/bin/echo RAN:pipe'\np"},
		{DialectBash, `trap '/usr/bin/echo RAN:exit "$x"' EXIT; x=$GITHUB_TOKEN`},
		{DialectBash, `trap '/usr/bin/echo RAN:err "$x"' ERR; x=$GITHUB_TOKEN; false`},
		{DialectBash, `trap '/usr/bin/echo RAN:debug "$x"' DEBUG; x=$GITHUB_TOKEN; :`},
		{DialectBash, `f(){ /usr/bin/echo RAN:fexit "$x"; }; trap f EXIT; x=$GITHUB_TOKEN`},
		{DialectBash, `f(){ /usr/bin/echo RAN:later "$x"; }; trap f EXIT; f(){ /usr/bin/echo RAN:redef; }; x=$GITHUB_TOKEN`},
		{DialectBash, `trap '$c RAN:var' EXIT; c=/usr/bin/echo; c=true`},
		{DialectBash, `f(){ trap '/usr/bin/echo RAN:ret "$x"' RETURN; x=$GITHUB_TOKEN; }; f`},
		{DialectBash, `(trap '/usr/bin/echo RAN:sub "$x"' EXIT; x=$GITHUB_TOKEN)`},
		{DialectBash, `trap '/usr/bin/echo RAN:early "$x"' EXIT; x=$GITHUB_TOKEN; exit 0; x=ok`},
		{DialectSh, `trap '/usr/bin/echo RAN:dashexit "$x"' EXIT; x=$GITHUB_TOKEN`},
		{DialectBash, `trap '/usr/bin/echo RAN:clean "$x"' EXIT; x=ok`},
	}
	ran := 0
	for _, c := range cases {
		sh := shellPath(t, c.dialect)
		if sh == "" {
			continue
		}
		args := []string{sh, "-c", c.text}
		if c.dialect == DialectBash {
			args = []string{sh, "--noprofile", "--norc", "-c", c.text}
		}
		cmd := &exec.Cmd{Path: sh, Args: args, Dir: t.TempDir(), Env: []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "GITHUB_TOKEN=" + secret}}
		var b bytes.Buffer
		cmd.Stdout, cmd.Stderr = &b, &b
		_ = cmd.Run()
		ran++
		dir, err := filepath.EvalSymlinks(t.TempDir())
		assert.NilError(t, err)
		a := Analyze(Input{Text: c.text, Dialect: c.dialect, Cwd: dir, Path: []string{"/usr/bin", "/bin"}, Home: "/home/agent",
			InspectionRoots: []string{dir}, WritableRoots: []string{dir}, CredentialVars: []string{"GITHUB_TOKEN"}})
		var report strings.Builder
		assert.NilError(t, a.WriteReport(&report))
		denied := a.Denial != nil && a.Denial.Reason == "credential_in_argv"
		for _, line := range strings.Split(b.String(), "\n") {
			tag, ok := strings.CutPrefix(line, "RAN:")
			if !ok {
				continue
			}
			tag, _, _ = strings.Cut(tag, " ")
			if strings.Contains(line, secret) && !denied {
				t.Errorf("%s: the shell put the credential on /usr/bin/echo's argv (%q); the analysis does not deny it\n$ %s\n%s", c.dialect, line, c.text, report.String())
			}
			listed := false
			for _, cmd := range a.Commands {
				if len(cmd.Argv) > 1 && cmd.Argv[1].Value == "RAN:"+tag {
					listed = true
				}
			}
			if !listed && !a.Opaque() && !denied {
				t.Errorf("%s: the shell ran /usr/bin/echo RAN:%s, which the analysis does not list\n$ %s\n%s", c.dialect, tag, c.text, report.String())
			}
		}
	}
	if ran == 0 {
		t.Skip("neither /bin/bash nor dash is installed")
	}
}
