package policy

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Destination is one entry of an agent's egress allowlist.
type Destination struct {
	// Any is "*": every host.
	Any bool
	// Wildcard is "*.example.com": example.com and every name under it.
	Wildcard bool
	// Host is the lower-case name (without "*.") or the IP literal's text;
	// empty when Any.
	Host string
	// IP is set for an IP literal, which matches only itself.
	IP netip.Addr
	// Port is the only port the entry allows; 0 means exec.egress.allowed_ports.
	Port uint16
}

// String is the entry in canonical form: lower case, no trailing dot, an
// IPv6 literal in brackets when it carries a port.
func (d Destination) String() string {
	var host string
	switch {
	case d.Any:
		host = "*"
	case d.Wildcard:
		host = "*." + d.Host
	default:
		host = d.Host
	}
	if d.Port == 0 {
		return host
	}
	if d.IP.Is6() {
		host = "[" + host + "]"
	}
	return host + ":" + strconv.Itoa(int(d.Port))
}

// ParseDestination parses an allowlist entry: "*", "*.example.com",
// "example.com", an IPv4 literal, or an IPv6 literal ("[::1]:443" when it has
// a port), each with an optional ":port". Names are lower-cased. It refuses
// what a resolver might read differently than a person (decimal or octal
// IPv4 forms, IPv6 zones, IPv4-mapped IPv6) and non-ASCII names, which must
// be written in their xn-- form.
func ParseDestination(s string) (Destination, error) {
	var d Destination
	if s == "" {
		return d, fmt.Errorf("empty")
	}
	if strings.Contains(s, "://") || strings.ContainsAny(s, "/?#@") {
		return d, fmt.Errorf("%q: want host[:port], not a URL", s)
	}
	s = strings.ToLower(s)
	host, port, err := splitPort(s)
	if err != nil {
		return d, fmt.Errorf("%q: %w", s, err)
	}
	d.Port = port
	switch {
	case host == "*":
		d.Any = true
		return d, nil
	case strings.HasPrefix(host, "*."):
		d.Wildcard = true
		host = host[2:]
	case strings.Contains(host, "*"):
		return d, fmt.Errorf("%q: '*' is allowed only alone or as a leading \"*.\"", s)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		switch {
		case d.Wildcard:
			return d, fmt.Errorf("%q: an IP address cannot take \"*.\"", s)
		case ip.Zone() != "":
			return d, fmt.Errorf("%q: an IPv6 zone is not allowed", s)
		case ip.Is4In6():
			return d, fmt.Errorf("%q: write the IPv4 address %s", s, ip.Unmap())
		}
		d.IP, d.Host = ip, ip.String()
		return d, nil
	}
	host = strings.TrimSuffix(host, ".")
	if msg := hostnameProblem(host); msg != "" {
		return d, fmt.Errorf("%q: %s", s, msg)
	}
	d.Host = host
	return d, nil
}

// splitPort separates an optional ":port", honouring "[v6]:port" and a bare
// IPv6 literal (several colons, no brackets, no port).
func splitPort(s string) (string, uint16, error) {
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", 0, fmt.Errorf("missing ']'")
		}
		host, rest := s[1:end], s[end+1:]
		if _, err := netip.ParseAddr(host); err != nil || !strings.Contains(host, ":") {
			return "", 0, fmt.Errorf("brackets hold an IPv6 address")
		}
		if rest == "" {
			return host, 0, nil
		}
		if !strings.HasPrefix(rest, ":") {
			return "", 0, fmt.Errorf("want [address]:port")
		}
		p, err := parsePort(rest[1:])
		return host, p, err
	}
	if strings.Count(s, ":") > 1 {
		return s, 0, nil // a bare IPv6 literal; with a port it needs brackets
	}
	host, port, ok := strings.Cut(s, ":")
	if !ok {
		return s, 0, nil
	}
	p, err := parsePort(port)
	return host, p, err
}

func parsePort(s string) (uint16, error) {
	n, err := strconv.Atoi(s)
	if err != nil || s[0] == '+' || s[0] == '-' || n < 1 || n > 65535 {
		return 0, fmt.Errorf("port %q: want 1 to 65535", s)
	}
	return uint16(n), nil
}

func hostnameProblem(h string) string {
	if h == "" {
		return "no host name"
	}
	if len(h) > 253 {
		return "a host name is at most 253 characters"
	}
	labels := strings.Split(h, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return "each dot-separated label of a host name is 1 to 63 characters"
		}
		if l[0] == '-' || l[len(l)-1] == '-' {
			return "a host name label cannot start or end with '-'"
		}
		for _, r := range l {
			switch {
			case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			case r > 0x7f:
				return "write an internationalised name in its xn-- (punycode) form"
			default:
				return fmt.Sprintf("%q is not allowed in a host name", r)
			}
		}
	}
	// All-digit last labels are IPv4 forms a resolver may accept
	// (2130706433, 0177.0.0.1, 127.1) and no real top-level domain.
	last := labels[len(labels)-1]
	hex := strings.HasPrefix(last, "0x") && strings.Trim(last[2:], "0123456789abcdef") == ""
	if strings.Trim(last, "0123456789") == "" || hex {
		return "not a host name, and not an IP address in dotted-decimal form"
	}
	return ""
}
