package egress

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// entryKind is what an allowlist entry matches.
type entryKind uint8

const (
	entryAny    entryKind = iota // "*": every name (never an IP literal)
	entrySuffix                  // "*.example.com": example.com and its subdomains
	entryExact                   // "example.com"
	entryAddr                    // "10.1.2.3", "[2001:db8::1]:443": that literal only
)

// EntryKind is what an allowlist entry matches, for other readers of the
// syntax (a sandbox settings file narrowing an allowlist).
type EntryKind = entryKind

// The kinds of entry.
const (
	EntryAny    = entryAny
	EntrySuffix = entrySuffix
	EntryExact  = entryExact
	EntryAddr   = entryAddr
)

// Entry is one parsed allowlist entry: Name is canonical (the base name of
// a suffix), Port 0 means "the allowed ports".
type Entry struct {
	Kind EntryKind
	Name string
	Addr netip.Addr
	Port uint16
}

// ParseEntry parses one allowlist entry: host, *.domain, *, an IP literal
// (IPv6 bare or in brackets), with an optional :port. It is the one
// grammar of an allowlist entry: the policy's agents[].destinations, the
// proxy's allowlist and a sandbox settings file's domains are each read
// with it. A name is canonicalised exactly as a destination the proxy is
// asked for is (lower case, no trailing dot, a Unicode name in its xn--
// form); what a resolver might read differently than a person (decimal,
// octal or hex IPv4 forms, IPv6 zones, IPv4-mapped IPv6) is refused.
func ParseEntry(raw string) (Entry, error) {
	e, err := parseEntry(raw)
	return Entry{Kind: e.kind, Name: e.name, Addr: e.addr, Port: e.port}, err
}

// String is the entry in canonical form, which ParseEntry reads back as
// the same entry: "*", "*.name", "name", an IP literal (an IPv6 one in
// brackets when it carries a port), each with ":port" when it has one.
func (e Entry) String() string {
	var host string
	switch e.Kind {
	case EntryAny:
		host = "*"
	case EntrySuffix:
		host = "*." + e.Name
	case EntryExact:
		host = e.Name
	case EntryAddr:
		host = e.Addr.String()
		if e.Port != 0 && e.Addr.Is6() {
			host = "[" + host + "]"
		}
	}
	if e.Port == 0 {
		return host
	}
	return host + ":" + strconv.Itoa(int(e.Port))
}

// entry is one parsed allowlist entry. port 0 means "the allowed ports".
type entry struct {
	raw  string
	kind entryKind
	name string // canonical; the base name for entrySuffix
	addr netip.Addr
	port uint16
}

// parseEntry parses one allowlist entry. Names are canonicalised exactly as
// destinations are, so an entry written in Unicode or upper case matches.
func parseEntry(raw string) (entry, error) {
	e := entry{raw: raw}
	s := strings.TrimSpace(raw)
	if s == "" {
		return e, fmt.Errorf("empty entry")
	}
	if strings.Contains(s, "://") || strings.ContainsAny(s, "/?#@ ") {
		return e, fmt.Errorf("%q: want host, *.domain or IP, with an optional :port, not a URL", raw)
	}
	host := s
	// A port: "[v6]:port", or exactly one colon ("name:port", "1.2.3.4:port").
	// Two or more colons without brackets is a bare IPv6 literal.
	switch {
	case strings.HasPrefix(s, "["):
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return e, fmt.Errorf("%q: unclosed [", raw)
		}
		host = s[1:end]
		rest := s[end+1:]
		if rest != "" {
			p, ok := strings.CutPrefix(rest, ":")
			if !ok {
				return e, fmt.Errorf("%q: want [IPv6]:port", raw)
			}
			port, ok := parsePort(p)
			if !ok {
				return e, fmt.Errorf("%q: port %q: want 1 to 65535", raw, p)
			}
			e.port = port
		}
		a, ok := parseLiteral(host)
		if !ok || !a.IsValid() || !a.Is6() {
			return e, fmt.Errorf("%q: only an IPv6 literal (without zone) goes in brackets", raw)
		}
		if a.Is4In6() {
			return e, fmt.Errorf("%q: write the IPv4 address %s", raw, a.Unmap())
		}
		e.kind, e.addr = entryAddr, a
		return e, nil
	case strings.Count(s, ":") == 1:
		h, p, _ := strings.Cut(s, ":")
		port, ok := parsePort(p)
		if !ok {
			return e, fmt.Errorf("%q: port %q: want 1 to 65535", raw, p)
		}
		host, e.port = h, port
	}
	switch {
	case host == "*":
		e.kind = entryAny
		return e, nil
	case strings.HasPrefix(host, "*."):
		h, err := CanonicalHost(host[2:])
		if err != nil {
			return e, fmt.Errorf("%q: %v", raw, err)
		}
		if h.IsAddr() {
			return e, fmt.Errorf("%q: a wildcard applies to names, not IP addresses", raw)
		}
		if err := entryName(h.Name); err != nil {
			return e, fmt.Errorf("%q: %v", raw, err)
		}
		e.kind, e.name = entrySuffix, h.Name
		return e, nil
	case strings.Contains(host, "*"):
		return e, fmt.Errorf("%q: a wildcard is only \"*\" or a leading \"*.\"", raw)
	}
	h, err := CanonicalHost(host)
	if err != nil {
		return e, fmt.Errorf("%q: %v", raw, err)
	}
	if h.IsAddr() {
		if h.Addr.Is4In6() {
			return e, fmt.Errorf("%q: write the IPv4 address %s", raw, h.Addr.Unmap())
		}
		e.kind, e.addr = entryAddr, h.Addr
		return e, nil
	}
	if err := entryName(h.Name); err != nil {
		return e, fmt.Errorf("%q: %v", raw, err)
	}
	e.kind, e.name = entryExact, h.Name
	return e, nil
}

// entryName is what an entry's name must be beyond a destination's: no
// label starts or ends with '-' (a name a person writes is a real one).
func entryName(name string) error {
	for label := range strings.SplitSeq(name, ".") {
		if strings.HasPrefix(label, "-") || strings.HasSuffix(label, "-") {
			return fmt.Errorf("a host name label cannot start or end with '-'")
		}
	}
	return nil
}

// matchHost reports whether e matches the canonical host, ignoring ports.
func (e entry) matchHost(h Host) bool {
	if h.IsAddr() {
		// An IP literal is allowed only by that literal: "*" does not cover
		// addresses, or every SSRF trick would be one "*" away.
		return e.kind == entryAddr && e.addr == h.Addr
	}
	switch e.kind {
	case entryAny:
		return true
	case entrySuffix:
		return h.Name == e.name || strings.HasSuffix(h.Name, "."+e.name)
	case entryExact:
		return h.Name == e.name
	}
	return false
}

// allowlist is the parsed list with the ports an entry without :port takes.
type allowlist struct {
	entries []entry
	ports   []uint16
}

// match returns the entry allowing host:port, if any.
func (l *allowlist) match(h Host, port uint16) (entry, bool) {
	for _, e := range l.entries {
		if !e.matchHost(h) {
			continue
		}
		if e.port == port || e.port == 0 && slices.Contains(l.ports, port) {
			return e, true
		}
	}
	return entry{}, false
}
