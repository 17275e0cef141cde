package intel

import (
	"net/netip"
	"path"
	"strings"

	"github.com/mitrity/mitrity/govern/shell"
)

// urlSchemes are the schemes whose authority is a network host a command
// may reach.
var urlSchemes = map[string]bool{
	"http": true, "https": true, "ftp": true, "ftps": true, "sftp": true, "ssh": true, "git": true,
	"git+ssh": true, "ssh+git": true, "git+https": true, "git+http": true, "ws": true, "wss": true,
	"rsync": true, "telnet": true, "scp": true, "smb": true, "ldap": true, "ldaps": true,
}

// knownScheme accepts a scheme, or a word ending in one: option letters
// glued to a URL (curl -Hhttps://...) do not hide it.
func knownScheme(s string) bool {
	if urlSchemes[s] {
		return true
	}
	for k := range urlSchemes {
		if strings.HasSuffix(s, k) {
			return true
		}
	}
	return false
}

// copyCommands name a remote as host:path (scp file host:/tmp); their
// other arguments are local files.
var copyCommands = map[string]bool{"scp": true, "rsync": true, "sftp": true}

// netCommands take a destination as a bare argument (curl example.com,
// nc evil.example 4444, ssh host), so their host-like arguments count even
// without a scheme.
var netCommands = map[string]bool{
	"curl": true, "wget": true, "nc": true, "ncat": true, "netcat": true, "telnet": true, "ssh": true, "mosh": true, "ssh-copy-id": true, "autossh": true, "ping": true, "ping6": true,
	"dig": true, "nslookup": true, "host": true, "whois": true, "traceroute": true, "tracepath": true, "ftp": true,
	"socat": true, "http": true, "https": true, "xh": true, "aria2c": true, "openssl": true,
}

// HostsFrom lists the hosts the analysed text may reach, lower-cased and
// without duplicates, in order of appearance: the host of every URL in any
// argument (http(s), ftp, ssh, git and similar), user@host: scp and git
// remotes, socat TCP:host:port addresses, /dev/tcp/HOST/PORT and
// /dev/udp/HOST/PORT redirections, and host-like arguments (a dotted name
// or an IP address) of network commands. It errs towards listing too much:
// the list is matched against a feed, where a spurious candidate costs
// nothing and a missing one is a miss. A host that is itself dynamic
// ($HOST) yields nothing; a static host in a dynamic word
// ("https://evil.example/$X") counts.
func HostsFrom(a *shell.Analysis) []string {
	if a == nil {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	add := func(h string) {
		h = canonicalHost(h)
		if _, err := netip.ParseAddr(h); err != nil && !validHostname(h) {
			return
		}
		if !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	for _, c := range a.Commands {
		name := ""
		if len(c.Argv) > 0 {
			name = path.Base(c.Argv[0].Value)
		}
		for i, w := range c.Argv {
			// A dynamic word is its source text: its static part can still
			// name a host ("https://evil.example/$X"), and a host that is
			// itself dynamic ($HOST) fails validation in add.
			if i == 0 {
				continue
			}
			for _, h := range hostsInWord(w.Value, netCommands[name], copyCommands[name]) {
				add(h)
			}
		}
		for _, r := range c.Redirects {
			if h, ok := devTCPHost(r.Path); ok {
				add(h)
			}
		}
	}
	return out
}

// HashesFrom lists the SHA-256 of every script the analysis pinned.
func HashesFrom(a *shell.Analysis) []string {
	if a == nil {
		return nil
	}
	out := make([]string, 0, len(a.Pins))
	for _, p := range a.Pins {
		out = append(out, p.SHA256)
	}
	return out
}

// hostsInWord finds hosts in one argument.
func hostsInWord(w string, network, copying bool) []string {
	var out []string
	// URLs, anywhere in the word (--url=https://..., -Hhttps://...).
	for rest := w; ; {
		i := strings.Index(rest, "://")
		if i < 0 {
			break
		}
		j := i
		for j > 0 && isSchemeByte(rest[j-1]) {
			j--
		}
		scheme := strings.ToLower(rest[j:i])
		rest = rest[i+3:]
		if knownScheme(scheme) {
			if h := authorityHost(rest); h != "" {
				out = append(out, h)
			}
		}
	}
	if strings.Contains(w, "://") {
		return out
	}
	if h, ok := devTCPHost(w); ok {
		return append(out, h)
	}
	// The value of --opt=VALUE is checked like a word of its own.
	v := w
	if strings.HasPrefix(v, "-") {
		eq := strings.IndexByte(v, '=')
		if eq < 0 {
			return out
		}
		v = v[eq+1:]
	}
	// user@host:path (scp, rsync, git remotes); host:path needs the user,
	// or HEAD:main would read as a host.
	if at := strings.IndexByte(v, '@'); at > 0 {
		hostPart := v[at+1:]
		if colon := strings.IndexByte(hostPart, ':'); colon > 0 && !strings.HasPrefix(hostPart, "[") {
			return append(out, hostPart[:colon])
		}
		if strings.HasPrefix(hostPart, "[") {
			if end := strings.IndexByte(hostPart, ']'); end > 0 {
				return append(out, hostPart[1:end])
			}
		}
		if network && !strings.ContainsAny(hostPart, "/:") {
			return append(out, hostPart) // ssh user@host
		}
		return out
	}
	if copying {
		// host:path, where host is a name (not ./x:y or /a:b).
		if colon := strings.IndexByte(v, ':'); colon > 0 && !strings.ContainsAny(v[:colon], "/") {
			return append(out, v[:colon])
		}
		return out
	}
	if !network {
		return out
	}
	// socat addresses: TCP:host:port, OPENSSL:host:port, ...
	if i := strings.IndexByte(v, ':'); i > 0 {
		switch strings.ToUpper(v[:i]) {
		case "TCP", "TCP4", "TCP6", "UDP", "UDP4", "UDP6", "OPENSSL", "SSL", "TCP-CONNECT", "SOCKS4", "SOCKS4A", "PROXY":
			rest := v[i+1:]
			if j := strings.IndexAny(rest, ":,"); j > 0 {
				rest = rest[:j]
			}
			return append(out, rest)
		}
	}
	// A bare destination: an IP address, or a dotted name ending in a
	// label that is not all digits, optionally with a port or a path.
	h := v
	if j := strings.IndexByte(h, '/'); j >= 0 {
		h = h[:j]
	}
	if ip, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
		return append(out, ip.String())
	}
	if j := strings.LastIndexByte(h, ':'); j > 0 {
		h = h[:j]
	}
	if looksLikeDomain(h) {
		out = append(out, h)
	}
	return out
}

// authorityHost is the host of a URL's authority (after the scheme's //):
// userinfo and port removed, IPv6 brackets kept off.
func authorityHost(rest string) string {
	end := len(rest)
	for i := 0; i < len(rest); i++ {
		if strings.IndexByte("/?#\"' \t\\", rest[i]) >= 0 {
			end = i
			break
		}
	}
	auth := rest[:end]
	if at := strings.LastIndexByte(auth, '@'); at >= 0 {
		auth = auth[at+1:]
	}
	if strings.HasPrefix(auth, "[") {
		if j := strings.IndexByte(auth, ']'); j > 0 {
			return auth[1:j]
		}
		return ""
	}
	if j := strings.IndexByte(auth, ':'); j >= 0 {
		auth = auth[:j]
	}
	return auth
}

// devTCPHost parses bash's /dev/tcp/HOST/PORT and /dev/udp/HOST/PORT.
func devTCPHost(p string) (string, bool) {
	for _, prefix := range []string{"/dev/tcp/", "/dev/udp/"} {
		if rest, ok := strings.CutPrefix(p, prefix); ok {
			if j := strings.IndexByte(rest, '/'); j > 0 {
				return rest[:j], true
			}
			return "", false
		}
	}
	return "", false
}

func isSchemeByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'
}

// looksLikeDomain: at least two labels and a last label with a letter, so
// that 1.2 or ./build are not taken for hosts.
func looksLikeDomain(h string) bool {
	h = strings.TrimSuffix(h, ".")
	i := strings.LastIndexByte(h, '.')
	if i <= 0 || i == len(h)-1 || !validHostname(strings.ToLower(h)) {
		return false
	}
	for _, c := range h[i+1:] {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			return true
		}
	}
	return false
}
