package egress

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"code.dny.dev/ssrf"
)

// Category names the class of a refused address. It is the detail behind
// ReasonRefusedAddress in logs and denial events; the agent only ever sees
// the reason.
type Category string

// Address categories. Each is refused; only CategoryPrivate and
// CategoryUniqueLocal can be let through, by allowed_private_cidrs.
const (
	CategoryInvalid          Category = "invalid"            // not an address, or scoped by a zone
	CategoryUnspecified      Category = "unspecified"        // 0.0.0.0/8, ::
	CategoryLoopback         Category = "loopback"           // 127/8, ::1
	CategoryLinkLocal        Category = "link_local"         // 169.254/16, fe80::/10
	CategoryMulticast        Category = "multicast"          // 224/4, ff00::/8
	CategoryBroadcast        Category = "broadcast"          // 255.255.255.255
	CategoryReserved         Category = "reserved"           // 240/4
	CategoryPrivate          Category = "private"            // 10/8, 172.16/12, 192.168/16
	CategoryUniqueLocal      Category = "unique_local"       // fc00::/7
	CategorySiteLocal        Category = "site_local"         // fec0::/10, deprecated but routable inside sites
	CategoryCGNAT            Category = "cgnat"              // 100.64/10, shared address space
	CategoryIETFProtocol     Category = "ietf_protocol"      // 192.0.0.0/24
	CategoryBenchmarking     Category = "benchmarking"       // 198.18/15
	CategoryDocumentation    Category = "documentation"      // TEST-NETs, 2001:db8::/32, 3fff::/20
	CategoryDiscard          Category = "discard"            // 100::/64
	CategoryNAT64            Category = "nat64"              // 64:ff9b::/96, 64:ff9b:1::/48: embeds any IPv4
	Category6to4             Category = "6to4"               // 2002::/16: embeds any IPv4
	CategoryTeredo           Category = "teredo"             // 2001::/32: embeds any IPv4
	CategoryIPv4Compatible   Category = "ipv4_compatible"    // ::a.b.c.d, deprecated
	CategoryMetadata         Category = "metadata"           // cloud instance-metadata endpoints
	CategoryHostInterface    Category = "host_interface"     // an address of this host
	CategoryDeniedCIDR       Category = "denied_cidr"        // the operator's denied_cidrs
	CategorySpecialPurpose   Category = "special_purpose"    // the rest of the IANA special-purpose registries
	CategoryNotGlobalUnicast Category = "not_global_unicast" // IPv6 outside 2000::/3
)

// metadataAddrs are the cloud instance-metadata endpoints: the common IMDS
// address (AWS, GCP, Azure, OCI), AWS's IPv6 one, GCP's IPv6 one, ECS task
// metadata, Alibaba, Oracle Cloud Classic and the Azure wireserver. Most sit
// in ranges refused anyway; listing them names the refusal, keeps the two
// unique-local ones shut whatever allowed_private_cidrs says, and is the only
// rule that refuses 168.63.129.16, a public address.
var metadataAddrs = map[netip.Addr]bool{
	netip.MustParseAddr("169.254.169.254"): true,
	netip.MustParseAddr("169.254.170.2"):   true,
	netip.MustParseAddr("fd00:ec2::254"):   true,
	netip.MustParseAddr("fd20:ce::254"):    true,
	netip.MustParseAddr("100.100.100.200"): true,
	netip.MustParseAddr("192.0.0.192"):     true,
	netip.MustParseAddr("168.63.129.16"):   true,
}

// rangeRule is one row of the classification tables. private rows are the
// only ones allowed_private_cidrs can open.
type rangeRule struct {
	prefix   netip.Prefix
	category Category
	private  bool
}

func rule(p string, c Category) rangeRule { return rangeRule{netip.MustParsePrefix(p), c, false} }
func privateRule(p string, c Category) rangeRule {
	return rangeRule{netip.MustParsePrefix(p), c, true}
}

// v4Rules and v6Rules name the ranges the spec lists, so a refusal says
// which; the IANA tables of code.dny.dev/ssrf then catch what is left.
var (
	v4Rules = []rangeRule{
		rule("0.0.0.0/8", CategoryUnspecified),
		rule("127.0.0.0/8", CategoryLoopback),
		rule("169.254.0.0/16", CategoryLinkLocal),
		rule("224.0.0.0/4", CategoryMulticast),
		rule("255.255.255.255/32", CategoryBroadcast),
		rule("240.0.0.0/4", CategoryReserved),
		rule("100.64.0.0/10", CategoryCGNAT),
		rule("192.0.0.0/24", CategoryIETFProtocol),
		rule("198.18.0.0/15", CategoryBenchmarking),
		rule("192.0.2.0/24", CategoryDocumentation),
		rule("198.51.100.0/24", CategoryDocumentation),
		rule("203.0.113.0/24", CategoryDocumentation),
		privateRule("10.0.0.0/8", CategoryPrivate),
		privateRule("172.16.0.0/12", CategoryPrivate),
		privateRule("192.168.0.0/16", CategoryPrivate),
	}
	v6Rules = []rangeRule{
		rule("::/128", CategoryUnspecified),
		rule("::1/128", CategoryLoopback),
		rule("fe80::/10", CategoryLinkLocal),
		rule("ff00::/8", CategoryMulticast),
		rule("64:ff9b::/96", CategoryNAT64),
		rule("64:ff9b:1::/48", CategoryNAT64),
		rule("2002::/16", Category6to4),
		rule("2001::/32", CategoryTeredo),
		rule("2001:db8::/32", CategoryDocumentation),
		rule("3fff::/20", CategoryDocumentation),
		rule("fec0::/10", CategorySiteLocal),
		rule("100::/64", CategoryDiscard),
		privateRule("fc00::/7", CategoryUniqueLocal),
	}
	ipv4Compatible = netip.MustParsePrefix("::/96")
)

// privatePrefixes are the ranges allowed_private_cidrs may name.
func privatePrefixes() []netip.Prefix {
	var ps []netip.Prefix
	for _, r := range append(append([]rangeRule(nil), v4Rules...), v6Rules...) {
		if r.private {
			ps = append(ps, r.prefix)
		}
	}
	return ps
}

// interfaceRefresh is how old the host's interface address set may get
// before a classification re-reads it: addresses come and go (DHCP, VPNs,
// containers) during a long execution.
const interfaceRefresh = 2 * time.Second

// ifaceSnapshot is the host's own addresses at one time.
type ifaceSnapshot struct {
	addrs map[netip.Addr]bool
	at    time.Time
}

// classifier decides whether an address may ever be dialed, independently
// of any name: it is what both Check and the dialer's Control hook ask.
type classifier struct {
	denied         []netip.Prefix
	allowedPrivate []netip.Prefix
	// testAllowed is set only by tests (export_test.go): addresses let
	// through before any rule, so a loopback listener can stand in for the
	// internet. Nothing outside this package's tests can set it.
	testAllowed []netip.Prefix

	// interfaceAddrs lists the host's addresses; nil means net.InterfaceAddrs.
	interfaceAddrs func() ([]netip.Addr, error)
	now            func() time.Time
	iface          atomic.Pointer[ifaceSnapshot]
	refreshMu      sync.Mutex
}

// hostInterfaceAddrs is net.InterfaceAddrs as netip addresses.
func hostInterfaceAddrs() ([]netip.Addr, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	out := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		var ip net.IP
		switch v := a.(type) {
		case *net.IPNet:
			ip = v.IP
		case *net.IPAddr:
			ip = v.IP
		}
		if na, ok := netip.AddrFromSlice(ip); ok {
			out = append(out, na.Unmap())
		}
	}
	return out, nil
}

// refresh re-reads the host's addresses. On failure the previous set stays:
// a set that shrank to nothing would let the host's own addresses through.
func (c *classifier) refresh() error {
	list := c.interfaceAddrs
	if list == nil {
		list = hostInterfaceAddrs
	}
	addrs, err := list()
	if err != nil {
		return err
	}
	set := make(map[netip.Addr]bool, len(addrs))
	for _, a := range addrs {
		set[a.Unmap().WithZone("")] = true
	}
	c.iface.Store(&ifaceSnapshot{addrs: set, at: c.clock()})
	return nil
}

func (c *classifier) clock() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Now()
}

// isHostAddr reports whether a is one of the host's own addresses,
// refreshing a stale set first (one refresher at a time; the others use the
// set they have).
func (c *classifier) isHostAddr(a netip.Addr) bool {
	snap := c.iface.Load()
	if snap == nil || c.clock().Sub(snap.at) > interfaceRefresh {
		if c.refreshMu.TryLock() {
			_ = c.refresh()
			c.refreshMu.Unlock()
			snap = c.iface.Load()
		}
	}
	return snap != nil && snap.addrs[a]
}

// classify returns the category of a refused address, or ok when a may be
// dialed. IPv4-mapped addresses are unmapped first, and the IPv4 inside an
// IPv4-compatible address is classified too, so no spelling of a refused
// IPv4 address is anything but refused.
func (c *classifier) classify(a netip.Addr) (Category, bool) {
	if !a.IsValid() || a.Zone() != "" {
		return CategoryInvalid, false
	}
	a = a.Unmap()
	for _, p := range c.testAllowed {
		if p.Contains(a) {
			return "", true
		}
	}
	if a.Is6() && ipv4Compatible.Contains(a) && a != netip.IPv6Unspecified() && a != netip.IPv6Loopback() {
		b := a.As16()
		if cat, ok := c.classify(netip.AddrFrom4([4]byte(b[12:]))); !ok {
			return cat, false
		}
		return CategoryIPv4Compatible, false
	}
	if metadataAddrs[a] {
		return CategoryMetadata, false
	}
	// The host's own addresses and the operator's denials come before the
	// private ranges, so allowed_private_cidrs cannot re-open them.
	if c.isHostAddr(a) {
		return CategoryHostInterface, false
	}
	for _, p := range c.denied {
		if p.Contains(a) {
			return CategoryDeniedCIDR, false
		}
	}
	rules := v4Rules
	if a.Is6() {
		rules = v6Rules
	}
	for _, r := range rules {
		if !r.prefix.Contains(a) {
			continue
		}
		if r.private {
			for _, p := range c.allowedPrivate {
				if p.Contains(a) {
					return "", true
				}
			}
		}
		return r.category, false
	}
	if a.Is4() {
		for _, p := range ssrf.IPv4DeniedPrefixes {
			if p.Contains(a) {
				return CategorySpecialPurpose, false
			}
		}
		return "", true
	}
	if !ssrf.IPv6GlobalUnicast.Contains(a) {
		return CategoryNotGlobalUnicast, false
	}
	for _, p := range ssrf.IPv6DeniedPrefixes {
		if p.Contains(a) {
			return CategorySpecialPurpose, false
		}
	}
	return "", true
}

// HostInterfaceAddrs lists this host's own addresses, the set the
// classifier refuses as host_interface.
func HostInterfaceAddrs() ([]netip.Addr, error) { return hostInterfaceAddrs() }
