package settings

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/mitrity/mitrity/govern/egress"
)

// kind is what a destination pattern's host part matches: the allowlist's
// own kinds (one parser for the syntax, govern/egress's).
type kind = egress.EntryKind

const (
	kindAny    = egress.EntryAny    // "*": every name (an allowlist's "*" never an IP literal)
	kindSuffix = egress.EntrySuffix // "*.example.com": example.com and its subdomains
	kindExact  = egress.EntryExact  // "example.com"
	kindAddr   = egress.EntryAddr   // an IP literal
)

// pattern is one destination entry: a host part and a port (0: none
// given, which means the allowed ports in an agent's allowlist and any port
// in a settings file).
type pattern struct {
	kind kind
	name string // canonical; the base name for kindSuffix
	addr netip.Addr
	port uint16
}

// parsePattern reads the destination syntax shared by the agent's
// allowlist and sandbox-runtime's lists: host, *.domain, *, an IPv4
// literal or a bracketed IPv6 literal, with an optional :port. The
// allowlist also takes a bare IPv6 literal (bareV6); sandbox-runtime
// refuses one as ambiguous.
func parsePattern(raw string, bareV6 bool) (pattern, error) {
	s := strings.TrimSpace(raw)
	if !bareV6 && !strings.HasPrefix(s, "[") && strings.Count(s, ":") > 1 {
		return pattern{}, fmt.Errorf("%q: an IPv6 literal goes in brackets ([2001:db8::1], [2001:db8::1]:443)", raw)
	}
	e, err := egress.ParseEntry(raw)
	if err != nil {
		return pattern{}, err
	}
	if e.Kind == kindAddr && e.Addr.Zone() != "" {
		return pattern{}, fmt.Errorf("%q: an IP literal without a zone", raw)
	}
	return pattern{kind: e.Kind, name: e.Name, addr: e.Addr, port: e.Port}, nil
}

// parseSettingsPattern adds sandbox-runtime's own limits: no bare "*" in
// allowedDomains (deniedDomains may deny everything), and no wildcard over
// a single label ("*.com").
func parseSettingsPattern(raw string, deny bool) (pattern, error) {
	p, err := parsePattern(raw, false)
	if err != nil {
		return p, err
	}
	switch {
	case p.kind == kindAny && !deny:
		return p, fmt.Errorf("%q: sandbox-runtime refuses a bare * in allowedDomains; leave the network section out to keep the agent's allowlist", raw)
	case p.kind == kindSuffix && !strings.Contains(p.name, "."):
		return p, fmt.Errorf("%q: a wildcard over a top-level domain is too broad", raw)
	}
	return p, nil
}

func (p pattern) String() string {
	var h string
	switch p.kind {
	case kindAny:
		h = "*"
	case kindSuffix:
		h = "*." + p.name
	case kindExact:
		h = p.name
	case kindAddr:
		h = p.addr.String()
		if p.addr.Is6() {
			h = "[" + h + "]"
		}
	}
	if p.port != 0 {
		h += ":" + strconv.Itoa(int(p.port))
	}
	return h
}

// under reports whether name is base or one of its subdomains.
func under(base, name string) bool { return name == base || strings.HasSuffix(name, "."+base) }

// meetHost is the host part both a and b match, in the allowlist's
// reading: "*" and "*.d" match names only, and *.d matches d itself.
func meetHost(a, b pattern) (pattern, bool) {
	if a.kind == kindAddr || b.kind == kindAddr {
		return a, a.kind == kindAddr && b.kind == kindAddr && a.addr == b.addr
	}
	switch {
	case a.kind == kindAny:
		return b, true
	case b.kind == kindAny:
		return a, true
	case a.kind == kindSuffix && b.kind == kindSuffix:
		if under(a.name, b.name) {
			return b, true
		}
		return a, under(b.name, a.name)
	case a.kind == kindSuffix:
		return b, under(a.name, b.name)
	case b.kind == kindSuffix:
		return a, under(b.name, a.name)
	}
	return a, a.name == b.name
}

// coversHost reports whether every host d matches is matched by deny.
// A deny "*" covers IP literals too.
func coversHost(deny, d pattern) bool {
	switch deny.kind {
	case kindAny:
		return true
	case kindAddr:
		return d.kind == kindAddr && d.addr == deny.addr
	case kindExact:
		return d.kind == kindExact && d.name == deny.name
	}
	return (d.kind == kindSuffix || d.kind == kindExact) && under(deny.name, d.name)
}

// overlapsHost reports whether some host is matched by both.
func overlapsHost(deny, d pattern) bool {
	if deny.kind == kindAny {
		return true
	}
	_, ok := meetHost(deny, d)
	return ok
}

// NarrowEgress returns the agent's allowlist as the settings file narrows
// it: each entry is intersected with the file's allowedDomains, and what
// its deniedDomains match is taken out. allowedPorts are the ports an
// allowlist entry without :port allows (exec.egress.allowed_ports). The
// result never allows a destination allowlist does not.
//
// The allowlist syntax has no exceptions, so an entry that a denied entry
// cuts into only partly (*.example.com less secret.example.com) is dropped
// whole; list the wanted names instead. A wildcard in the file is read as
// everywhere here: *.example.com matches example.com itself too.
// Without a network section, the allowlist is returned unchanged.
// Entries that do not parse are dropped (the egress checker would refuse
// them anyway).
func (s *Settings) NarrowEgress(allowlist []string, allowedPorts []uint16) []string {
	if s == nil || s.net == nil {
		return slices.Clone(allowlist)
	}
	var out []string
	add := func(p pattern) {
		if str := p.String(); !slices.Contains(out, str) {
			out = append(out, str)
		}
	}
	for _, raw := range allowlist {
		a, err := parsePattern(raw, true)
		if err != nil {
			continue
		}
		for _, allow := range s.net.allowed {
			m, ok := meetHost(a, allow)
			if !ok {
				continue
			}
			switch {
			case allow.port == 0:
				m.port = a.port
			case a.port == 0 && slices.Contains(allowedPorts, allow.port), a.port == allow.port:
				m.port = allow.port
			default:
				continue
			}
			for _, r := range s.subtractDenied(m, allowedPorts) {
				add(r)
			}
		}
	}
	return out
}

// subtractDenied takes the file's deniedDomains out of one entry: ports it
// denies come off, and an entry a denied host cuts into partly is dropped.
func (s *Settings) subtractDenied(p pattern, allowedPorts []uint16) []pattern {
	ports := []uint16{p.port}
	if p.port == 0 {
		ports = slices.Clone(allowedPorts)
	}
	whole := true // still every port the entry started with
	for _, d := range s.net.denied {
		if !overlapsHost(d, p) {
			continue
		}
		hit := d.port == 0 || slices.Contains(ports, d.port)
		if !hit {
			continue
		}
		if !coversHost(d, p) {
			return nil
		}
		if d.port == 0 {
			return nil
		}
		ports = slices.DeleteFunc(ports, func(x uint16) bool { return x == d.port })
		whole = false
	}
	if whole {
		return []pattern{p}
	}
	out := make([]pattern, 0, len(ports))
	for _, port := range ports {
		q := p
		q.port = port
		out = append(out, q)
	}
	return out
}
