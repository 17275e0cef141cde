package egress_test

import (
	"net/netip"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/mitrity/mitrity/govern/egress"
)

// Every range the spec names, at its edges, in each spelling an attacker
// could use. Public addresses here are data only: nothing is dialed.
func TestClassify(t *testing.T) {
	t.Parallel()
	c := newChecker(t, egress.Config{})
	tests := []struct {
		addr string
		want egress.Category // "" means allowed
	}{
		{"0.0.0.0", egress.CategoryUnspecified},
		{"0.1.2.3", egress.CategoryUnspecified},
		{"127.0.0.2", egress.CategoryLoopback},
		{"127.255.255.254", egress.CategoryLoopback},
		{"169.254.0.1", egress.CategoryLinkLocal},
		{"169.254.255.254", egress.CategoryLinkLocal},
		{"224.0.0.1", egress.CategoryMulticast},
		{"239.255.255.250", egress.CategoryMulticast},
		{"255.255.255.255", egress.CategoryBroadcast},
		{"240.0.0.1", egress.CategoryReserved},
		{"255.255.255.254", egress.CategoryReserved},
		{"10.0.0.1", egress.CategoryPrivate},
		{"10.255.255.255", egress.CategoryPrivate},
		{"172.16.0.1", egress.CategoryPrivate},
		{"172.31.255.255", egress.CategoryPrivate},
		{"192.168.0.1", egress.CategoryPrivate},
		{"100.64.0.1", egress.CategoryCGNAT},
		{"100.127.255.255", egress.CategoryCGNAT},
		{"192.0.0.1", egress.CategoryIETFProtocol},
		{"198.18.0.1", egress.CategoryBenchmarking},
		{"198.19.255.255", egress.CategoryBenchmarking},
		{"192.0.2.1", egress.CategoryDocumentation},
		{"198.51.100.1", egress.CategoryDocumentation},
		{"203.0.113.1", egress.CategoryDocumentation},
		{"192.88.99.1", egress.CategorySpecialPurpose}, // 6to4 relay anycast, from the IANA table
		{"192.31.196.1", egress.CategorySpecialPurpose},

		{"169.254.169.254", egress.CategoryMetadata},
		{"169.254.170.2", egress.CategoryMetadata},
		{"100.100.100.200", egress.CategoryMetadata},
		{"192.0.0.192", egress.CategoryMetadata},
		{"168.63.129.16", egress.CategoryMetadata},
		{"fd00:ec2::254", egress.CategoryMetadata},
		{"fd20:ce::254", egress.CategoryMetadata},
		{"::ffff:169.254.169.254", egress.CategoryMetadata},
		{"::ffff:168.63.129.16", egress.CategoryMetadata},

		{"::", egress.CategoryUnspecified},
		{"::1", egress.CategoryHostInterface}, // ::1 is on lo in the test interface set
		{"fe80::1", egress.CategoryLinkLocal},
		{"febf:ffff::1", egress.CategoryLinkLocal},
		{"ff02::1", egress.CategoryMulticast},
		{"ff0e::1", egress.CategoryMulticast},
		{"fc00::1", egress.CategoryUniqueLocal},
		{"fd12:3456::1", egress.CategoryUniqueLocal},
		{"fec0::1", egress.CategorySiteLocal},
		{"64:ff9b::7f00:1", egress.CategoryNAT64},
		{"64:ff9b::808:808", egress.CategoryNAT64},
		{"64:ff9b:1::1", egress.CategoryNAT64},
		{"2002:7f00:1::1", egress.Category6to4},
		{"2002:808:808::1", egress.Category6to4},
		{"2001::1", egress.CategoryTeredo},
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", egress.CategoryTeredo},
		{"2001:db8::1", egress.CategoryDocumentation},
		{"3fff::1", egress.CategoryDocumentation},
		{"100::1", egress.CategoryDiscard},
		{"2001:2::1", egress.CategorySpecialPurpose}, // 2001::/23, outside Teredo
		{"4000::1", egress.CategoryNotGlobalUnicast},
		{"::2:0:0:1", egress.CategoryNotGlobalUnicast},

		// Mapped and compatible forms are judged by the IPv4 inside.
		{"::ffff:127.0.0.1", egress.CategoryHostInterface},
		{"::ffff:127.0.0.2", egress.CategoryLoopback},
		{"::ffff:10.0.0.1", egress.CategoryPrivate},
		{"::ffff:0.0.0.0", egress.CategoryUnspecified},
		{"::127.0.0.2", egress.CategoryLoopback},
		{"::169.254.169.254", egress.CategoryMetadata},
		{"::10.0.0.1", egress.CategoryPrivate},
		{"::1.1.1.1", egress.CategoryIPv4Compatible},

		// The host's own addresses, public or not.
		{"127.0.0.1", egress.CategoryHostInterface},
		{"10.9.9.9", egress.CategoryHostInterface},
		{"93.184.216.34", egress.CategoryHostInterface},
		{"::ffff:93.184.216.34", egress.CategoryHostInterface},
		{"2606:2800:220:1:248:1893:25c8:1946", egress.CategoryHostInterface},

		{"fe80::1%eth0", egress.CategoryInvalid},

		{"1.1.1.1", ""},
		{"9.9.9.9", ""},
		{"::ffff:1.1.1.1", ""},
		{"172.15.255.255", ""},
		{"172.32.0.1", ""},
		{"100.63.255.255", ""},
		{"100.128.0.1", ""},
		{"198.17.255.255", ""},
		{"198.20.0.1", ""},
		{"192.0.1.1", ""},
		{"223.255.255.255", ""},
		{"2606:4700:4700::1111", ""},
		{"2a00:1450:4001::1", ""},
	}
	for _, tc := range tests {
		t.Run(tc.addr, func(t *testing.T) {
			t.Parallel()
			a := netip.MustParseAddr(tc.addr)
			cat, ok := c.Classify(a)
			assert.Equal(t, cat, tc.want)
			assert.Equal(t, ok, tc.want == "")
		})
	}
	t.Run("invalid", func(t *testing.T) {
		t.Parallel()
		cat, ok := c.Classify(netip.Addr{})
		assert.Equal(t, cat, egress.CategoryInvalid)
		assert.Assert(t, !ok)
	})
}

// allowed_private_cidrs opens parts of the private ranges and nothing else:
// not metadata, not the host's own addresses, not denied_cidrs.
func TestClassifyOperatorRanges(t *testing.T) {
	t.Parallel()
	c := newChecker(t, egress.Config{
		AllowedPrivateCIDRs: []netip.Prefix{
			netip.MustParsePrefix("10.0.0.0/8"),
			netip.MustParsePrefix("192.168.7.0/24"),
			netip.MustParsePrefix("fd00::/8"),
		},
		DeniedCIDRs: []netip.Prefix{
			netip.MustParsePrefix("10.66.0.0/16"),
			netip.MustParsePrefix("1.1.1.0/24"),
			netip.MustParsePrefix("2606:4700::/32"),
		},
	})
	tests := []struct {
		addr string
		want egress.Category
	}{
		{"10.1.2.3", ""},
		{"::ffff:10.1.2.3", ""},
		{"192.168.7.9", ""},
		{"192.168.8.9", egress.CategoryPrivate},
		{"172.16.0.1", egress.CategoryPrivate},
		{"fd12::1", ""},
		{"fc00::1", egress.CategoryUniqueLocal},
		{"fd00:ec2::254", egress.CategoryMetadata},
		{"fd20:ce::254", egress.CategoryMetadata},
		{"10.9.9.9", egress.CategoryHostInterface},
		{"10.66.1.1", egress.CategoryDeniedCIDR},
		{"1.1.1.1", egress.CategoryDeniedCIDR},
		{"::ffff:1.1.1.1", egress.CategoryDeniedCIDR},
		{"2606:4700:4700::1111", egress.CategoryDeniedCIDR},
		{"127.0.0.2", egress.CategoryLoopback},
		{"9.9.9.9", ""},
	}
	for _, tc := range tests {
		t.Run(tc.addr, func(t *testing.T) {
			t.Parallel()
			cat, ok := c.Classify(netip.MustParseAddr(tc.addr))
			assert.Equal(t, cat, tc.want)
			assert.Equal(t, ok, tc.want == "")
		})
	}
}

// The real interfaces of this machine are refused, whatever they are.
func TestClassifyRealInterfaces(t *testing.T) {
	t.Parallel()
	c, err := egress.NewChecker(egress.Config{})
	assert.NilError(t, err)
	addrs, err := egress.HostInterfaceAddrs()
	assert.NilError(t, err)
	assert.Assert(t, len(addrs) > 0)
	for _, a := range addrs {
		_, ok := c.Classify(a)
		assert.Assert(t, !ok, "host address %s allowed", a)
	}
}

// Interface addresses that appear later (DHCP, a VPN coming up) are
// refused once the set is refreshed.
func TestClassifyInterfaceRefresh(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	ifaces := []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	c := newChecker(t, egress.Config{},
		egress.WithInterfaceAddrs(func() ([]netip.Addr, error) {
			mu.Lock()
			defer mu.Unlock()
			return append([]netip.Addr{}, ifaces...), nil
		}),
		egress.WithClock(func() time.Time { mu.Lock(); defer mu.Unlock(); return now }),
	)
	fresh := netip.MustParseAddr("9.9.9.9")
	_, ok := c.Classify(fresh)
	assert.Assert(t, ok)

	mu.Lock()
	ifaces = append(ifaces, fresh)
	now = now.Add(3 * time.Second)
	mu.Unlock()
	cat, ok := c.Classify(fresh)
	assert.Assert(t, !ok)
	assert.Equal(t, cat, egress.CategoryHostInterface)
}
