package rules

import (
	"path"
	"strings"
)

// under reports whether p is dir or inside it, lexically: both are cleaned,
// a leading ~, $HOME or ${HOME} becomes home, and a relative path is taken
// against cwd when cwd is absolute. Symlinks are not resolved (the sandbox's
// deny-read set is the wall for those); this is for writing rules, not for
// enforcing containment.
func under(p, dir, home, cwd string) bool {
	if p == "" || dir == "" {
		return false
	}
	p = expandPath(p, home, cwd)
	dir = expandPath(dir, home, cwd)
	if dir == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}

func expandPath(p, home, cwd string) string {
	// Dynamic words arrive as source text, so the quoted spellings count.
	for _, prefix := range []string{"~", "${HOME}", "$HOME", `"${HOME}"`, `"$HOME"`} {
		rest, ok := strings.CutPrefix(p, prefix)
		if !ok || rest != "" && rest[0] != '/' {
			continue
		}
		h := home
		if h == "" {
			// No HOME known: keep one spelling so that ~/x, $HOME/x and
			// ${HOME}/x still compare equal.
			h = "~"
		}
		p = h + rest
		break
	}
	if !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "~") && strings.HasPrefix(cwd, "/") {
		p = cwd + "/" + p
	}
	return path.Clean(p)
}

// argvHas reports whether flag is among the options of argv (argv[0] is the
// command name and is skipped; scanning stops at "--"). A long option also
// matches its --flag=value form. A one-letter short option (-f) also matches
// when bundled with others (-uf, -fv): rules deny on what the tool would
// read, and most tools read bundles. Anything else must match exactly.
func argvHas(argv []string, flag string) bool {
	if flag == "" || len(argv) < 2 {
		return false
	}
	long := strings.HasPrefix(flag, "--") && len(flag) > 2
	short := len(flag) == 2 && flag[0] == '-' && flag[1] != '-'
	for _, a := range argv[1:] {
		if a == "--" {
			return false
		}
		switch {
		case a == flag:
			return true
		case long && strings.HasPrefix(a, flag+"="):
			return true
		case short && len(a) > 2 && a[0] == '-' && a[1] != '-' && strings.IndexByte(a[1:], flag[1]) >= 0:
			return true
		}
	}
	return false
}
