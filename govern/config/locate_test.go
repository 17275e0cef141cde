package config

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// TestLocate walks the search order by removing one source at a time, for
// a user gateway and for root, on a staged file system.
func TestLocate(t *testing.T) {
	t.Parallel()
	user := "/home/u/.config/mitrity/" + FileName
	for _, tc := range []struct {
		name  string
		flag  string
		euid  int
		env   map[string]string
		files map[string]error // path -> what stat says (absent: not exist)
		want  string
	}{
		{"flag first", "/from/flag.yaml", 1000, map[string]string{EnvConfig: "/from/env.yaml"}, map[string]error{user: nil}, "/from/flag.yaml"},
		{"then the variable", "", 1000, map[string]string{EnvConfig: "/from/env.yaml", "HOME": "/home/u"}, map[string]error{user: nil}, "/from/env.yaml"},
		{"then the user file", "", 1000, map[string]string{"HOME": "/home/u"}, map[string]error{user: nil, SystemPath: nil}, user},
		// There but unreadable is still the config: falling back would
		// swap the operator's file for another.
		{"an unreadable user file", "", 1000, map[string]string{"HOME": "/home/u"}, map[string]error{user: fs.ErrPermission, SystemPath: nil}, user},
		{"then the system file", "", 1000, map[string]string{"HOME": "/home/u"}, map[string]error{SystemPath: nil}, SystemPath},
		{"root has no user file", "", 0, map[string]string{"HOME": "/root", "XDG_CONFIG_HOME": "/root/.config"}, map[string]error{"/root/.config/mitrity/" + FileName: nil}, ""},
		{"root: the system file", "", 0, map[string]string{}, map[string]error{SystemPath: nil}, SystemPath},
		// The working directory is never read (the stat would say so):
		// it is where a sandboxed command writes.
		{"never ./", "", 1000, map[string]string{"HOME": "/home/u"}, map[string]error{FileName: nil, "./" + FileName: nil}, ""},
	} {
		stat := func(p string) (fs.FileInfo, error) {
			if err, ok := tc.files[p]; ok {
				return nil, err
			}
			return nil, fs.ErrNotExist
		}
		path, embedded := locate(tc.flag, tc.euid, func(k string) string { return tc.env[k] }, stat)
		assert.Check(t, is.Equal(path, tc.want), tc.name)
		assert.Check(t, is.Equal(embedded, tc.want == ""), tc.name)
	}
}

func TestStrayFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	assert.Equal(t, StrayFile(dir), "")
	assert.NilError(t, os.WriteFile(filepath.Join(dir, FileName), nil, 0o600))
	assert.Equal(t, StrayFile(dir), filepath.Join(dir, FileName))
}

func TestUserPath(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, tc := range []struct {
		euid int
		env  map[string]string
		want string
	}{
		{1000, map[string]string{"XDG_CONFIG_HOME": "/x", "HOME": "/h"}, "/x/mitrity/" + FileName},
		{1000, map[string]string{"XDG_CONFIG_HOME": "rel", "HOME": "/h"}, "/h/.config/mitrity/" + FileName},
		{1000, map[string]string{}, ""},
		{0, map[string]string{"XDG_CONFIG_HOME": "/x", "HOME": "/root"}, ""},
	} {
		assert.Equal(t, UserPath(tc.euid, env(tc.env)), tc.want)
	}
}

// TestSearchPaths: every file Locate could pick without a flag or the
// variable, for this user and for one started without $XDG_CONFIG_HOME.
func TestSearchPaths(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, tc := range []struct {
		euid int
		env  map[string]string
		want []string
	}{
		{1000, map[string]string{"HOME": "/h"}, []string{"/h/.config/mitrity/" + FileName, SystemPath}},
		{1000, map[string]string{"XDG_CONFIG_HOME": "/x", "HOME": "/h"}, []string{"/x/mitrity/" + FileName, "/h/.config/mitrity/" + FileName, SystemPath}},
		{1000, map[string]string{}, []string{SystemPath}},
		{0, map[string]string{"XDG_CONFIG_HOME": "/x", "HOME": "/root"}, []string{SystemPath}},
	} {
		assert.DeepEqual(t, SearchPaths(tc.euid, env(tc.env)), tc.want)
	}
}

// TestLoadRelativeName: a config named relatively (--config x.yaml) names
// itself that way in errors, as the operator typed it.
func TestLoadRelativeName(t *testing.T) {
	t.Chdir(t.TempDir())
	assert.NilError(t, os.WriteFile(FileName, []byte("exec:\n  enabled: true\n  shell: /bin/zsh\n  default_cwd: /workspace\n"), 0o600))
	_, err := fakeHost(stagedFiles).Load(FileName)
	assert.Error(t, err, `mitrity-gateway.yaml:3:10: exec.shell: "/bin/zsh": the basename must be bash or sh; zsh is refused because the command analyzer has no grammar for it`)

	_, err = Load("absent.yaml")
	assert.ErrorContains(t, err, "no such file")
}
