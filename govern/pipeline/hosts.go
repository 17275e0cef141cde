package pipeline

import (
	"net/url"
	"strings"

	"github.com/mitrity/mitrity/govern/shell"
)

// hostsOf lists the hosts a command names: URLs in its words and
// /dev/tcp|udp redirections.
func hostsOf(a *shell.Analysis) []string {
	seen := map[string]bool{}
	var out []string
	add := func(h string) {
		h = strings.ToLower(strings.TrimSuffix(h, "."))
		if h != "" && !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	for _, c := range a.Commands {
		for _, w := range c.Argv {
			if i := strings.Index(w.Value, "://"); i > 0 {
				j := i
				for j > 0 && isSchemeChar(w.Value[j-1]) {
					j--
				}
				if u, err := url.Parse(w.Value[j:]); err == nil {
					add(u.Hostname())
				}
			}
		}
		for _, r := range c.Redirects {
			if r.Network {
				parts := strings.Split(r.Path, "/")
				if len(parts) > 3 {
					add(parts[3])
				}
			}
		}
	}
	return out
}

func isSchemeChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'
}
