package egress_test

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern/egress"
)

// publicResolver answers every name the matcher tests ask with one public
// address (data only; these tests never dial).
func publicResolver(names ...string) *fakeResolver {
	m := map[string][]string{}
	for _, n := range names {
		m[n+"."] = []string{"1.1.1.1"}
	}
	return newResolver(m)
}

func TestAllowlistMatch(t *testing.T) {
	t.Parallel()
	names := []string{"example.com", "a.example.com", "a.b.example.com", "badexample.com",
		"example.com.evil.org", "api.test.org", "exact.org", "sub.exact.org", "xn--bcher-kva.example",
		"other.net", "example.org"}
	type probe struct {
		host string
		port uint16
		want egress.Reason
	}
	tests := []struct {
		name   string
		cfg    egress.Config
		probes []probe
	}{
		{
			name: "entries",
			cfg: egress.Config{Allow: []string{
				"*.example.com", "api.test.org:8443", "exact.org", "Bücher.example",
				"9.9.9.9", "[2606:4700::1]:443", "2606:4700::2",
			}},
			probes: []probe{
				{"example.com", 443, egress.ReasonAllowlisted},
				{"example.com", 80, egress.ReasonAllowlisted},
				{"a.example.com", 443, egress.ReasonAllowlisted},
				{"a.b.example.com", 443, egress.ReasonAllowlisted},
				{"A.Example.COM.", 443, egress.ReasonAllowlisted},
				{"example.com", 8080, egress.ReasonNotAllowlisted},
				{"badexample.com", 443, egress.ReasonNotAllowlisted},
				{"example.com.evil.org", 443, egress.ReasonNotAllowlisted},
				{"api.test.org", 8443, egress.ReasonAllowlisted},
				{"api.test.org", 443, egress.ReasonNotAllowlisted},
				{"exact.org", 443, egress.ReasonAllowlisted},
				{"sub.exact.org", 443, egress.ReasonNotAllowlisted},
				{"bücher.example", 443, egress.ReasonAllowlisted},
				{"xn--bcher-kva.example", 80, egress.ReasonAllowlisted},
				{"9.9.9.9", 443, egress.ReasonAllowlisted},
				{"9.9.9.9", 80, egress.ReasonAllowlisted},
				{"9.9.9.9", 8443, egress.ReasonNotAllowlisted},
				{"9.9.9.8", 443, egress.ReasonNotAllowlisted},
				{"::ffff:9.9.9.9", 443, egress.ReasonNotAllowlisted}, // the literal itself must be listed
				{"2606:4700::1", 443, egress.ReasonAllowlisted},
				{"2606:4700::1", 80, egress.ReasonNotAllowlisted},
				{"2606:4700::2", 80, egress.ReasonAllowlisted},
				{"other.net", 443, egress.ReasonNotAllowlisted},
			},
		},
		{
			name: "star matches names, never IP literals",
			cfg:  egress.Config{Allow: []string{"*"}},
			probes: []probe{
				{"other.net", 443, egress.ReasonAllowlisted},
				{"example.org", 80, egress.ReasonAllowlisted},
				{"other.net", 22, egress.ReasonNotAllowlisted},
				{"1.1.1.1", 443, egress.ReasonNotAllowlisted},
				{"2606:4700::1", 443, egress.ReasonNotAllowlisted},
			},
		},
		{
			name: "star with a port",
			cfg:  egress.Config{Allow: []string{"*:8443"}},
			probes: []probe{
				{"other.net", 8443, egress.ReasonAllowlisted},
				{"other.net", 443, egress.ReasonNotAllowlisted},
			},
		},
		{
			name: "empty list is no egress",
			cfg:  egress.Config{Allow: []string{}},
			probes: []probe{
				{"example.com", 443, egress.ReasonNoEgress},
				{"1.1.1.1", 443, egress.ReasonNoEgress},
			},
		},
		{
			name: "configured ports",
			cfg:  egress.Config{Allow: []string{"exact.org", "example.org:443"}, AllowedPorts: []uint16{8080}},
			probes: []probe{
				{"exact.org", 8080, egress.ReasonAllowlisted},
				{"exact.org", 443, egress.ReasonNotAllowlisted},
				{"example.org", 443, egress.ReasonAllowlisted},
			},
		},
		{
			name: "no default ports",
			cfg:  egress.Config{Allow: []string{"exact.org", "example.org:443"}, AllowedPorts: []uint16{}},
			probes: []probe{
				{"exact.org", 443, egress.ReasonNotAllowlisted},
				{"example.org", 443, egress.ReasonAllowlisted},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newChecker(t, tc.cfg, egress.WithResolver(publicResolver(names...)))
			for _, p := range tc.probes {
				d := c.Check(t.Context(), p.host, p.port)
				assert.Check(t, is.Equal(d.Reason, p.want), "%s:%d (%s)", p.host, p.port, d.Detail)
				assert.Check(t, is.Equal(d.Allowed, p.want == egress.ReasonAllowlisted), "%s:%d", p.host, p.port)
			}
		})
	}
}

// Names are resolved on the host, rooted (no search domain), and ANY
// refused address in the answer refuses the destination.
func TestCheckResolution(t *testing.T) {
	t.Parallel()
	res := newResolver(map[string][]string{
		"good.test.":     {"1.1.1.1", "2606:4700::1111"},
		"loop.test.":     {"127.0.0.1"},
		"loop6.test.":    {"::1"},
		"mapped.test.":   {"::ffff:127.0.0.2"},
		"mixed.test.":    {"1.1.1.1", "127.0.0.1"},
		"mixed6.test.":   {"2606:4700::1111", "fe80::1"},
		"meta.test.":     {"169.254.169.254"},
		"private.test.":  {"10.1.2.3"},
		"dup.test.":      {"1.1.1.1", "::ffff:1.1.1.1", "1.1.1.1"},
		"empty.test.":    {},
		"rebind.test.":   {"1.1.1.1", "0.0.0.0"},
		"intranet.":      {"1.1.1.1"},
		"nat64.test.":    {"64:ff9b::a9fe:a9fe"},
		"self.test.":     {"93.184.216.34"},
		"metadata.test.": {"100.100.100.200"},
	})
	c := newChecker(t, egress.Config{Allow: []string{"*"}}, egress.WithResolver(res))
	tests := []struct {
		host  string
		want  egress.Reason
		cat   egress.Category
		addrs []string
	}{
		{host: "good.test", want: egress.ReasonAllowlisted, addrs: []string{"1.1.1.1", "2606:4700::1111"}},
		{host: "dup.test", want: egress.ReasonAllowlisted, addrs: []string{"1.1.1.1"}},
		{host: "intranet", want: egress.ReasonAllowlisted, addrs: []string{"1.1.1.1"}},
		{host: "loop.test", want: egress.ReasonRefusedAddress, cat: egress.CategoryHostInterface},
		{host: "loop6.test", want: egress.ReasonRefusedAddress, cat: egress.CategoryHostInterface},
		{host: "mapped.test", want: egress.ReasonRefusedAddress, cat: egress.CategoryLoopback},
		{host: "mixed.test", want: egress.ReasonRefusedAddress, cat: egress.CategoryHostInterface},
		{host: "mixed6.test", want: egress.ReasonRefusedAddress, cat: egress.CategoryLinkLocal},
		{host: "rebind.test", want: egress.ReasonRefusedAddress, cat: egress.CategoryUnspecified},
		{host: "meta.test", want: egress.ReasonRefusedAddress, cat: egress.CategoryMetadata},
		{host: "metadata.test", want: egress.ReasonRefusedAddress, cat: egress.CategoryMetadata},
		{host: "private.test", want: egress.ReasonRefusedAddress, cat: egress.CategoryPrivate},
		{host: "nat64.test", want: egress.ReasonRefusedAddress, cat: egress.CategoryNAT64},
		{host: "self.test", want: egress.ReasonRefusedAddress, cat: egress.CategoryHostInterface},
		{host: "empty.test", want: egress.ReasonResolveFailed},
		{host: "unknown.test", want: egress.ReasonResolveFailed},
	}
	for _, tc := range tests {
		d := c.Check(t.Context(), tc.host, 443)
		assert.Check(t, is.Equal(d.Reason, tc.want), "%s: %s", tc.host, d.Detail)
		assert.Check(t, is.Equal(d.Category, tc.cat), tc.host)
		var got []string
		for _, a := range d.Addrs {
			got = append(got, a.String())
		}
		assert.Check(t, is.DeepEqual(got, tc.addrs), tc.host)
	}
	for _, q := range res.lookups() {
		assert.Check(t, strings.HasSuffix(q, "."), "lookup of %q is not rooted", q)
	}
}

// Names refused before resolving: the resolver is never asked, whatever
// the allowlist says.
func TestCheckRefusedNames(t *testing.T) {
	t.Parallel()
	for _, host := range []string{
		"localhost", "LOCALHOST.", "foo.localhost", "metadata.google.internal",
		"Metadata.Google.Internal.", "metadata", "metadata.goog",
	} {
		res := newResolver(map[string][]string{host + ".": {"1.1.1.1"}})
		c := newChecker(t, egress.Config{Allow: []string{"*", host, "*." + strings.TrimSuffix(host, ".")}}, egress.WithResolver(res))
		d := c.Check(t.Context(), host, 80)
		assert.Check(t, is.Equal(d.Reason, egress.ReasonRefusedName), host)
		assert.Check(t, is.Len(res.lookups(), 0), host)
	}
}

func TestCheckResolverError(t *testing.T) {
	t.Parallel()
	res := newResolver(nil)
	res.err = errors.New("SERVFAIL")
	c := newChecker(t, egress.Config{Allow: []string{"*"}}, egress.WithResolver(res))
	d := c.Check(t.Context(), "example.com", 443)
	assert.Equal(t, d.Reason, egress.ReasonResolveFailed)
	assert.Assert(t, !strings.Contains(d.Message(), "SERVFAIL"), "internal detail in the agent's message")
}

// IP literal entries still pass the classifier: listing 10.1.2.3 does not
// open the private range; allowed_private_cidrs does.
func TestCheckLiteralStillClassified(t *testing.T) {
	t.Parallel()
	c := newChecker(t, egress.Config{Allow: []string{"10.1.2.3", "169.254.169.254", "127.0.0.1:8080"}})
	for _, tc := range []struct {
		host string
		port uint16
	}{{"10.1.2.3", 443}, {"169.254.169.254", 80}, {"127.0.0.1", 8080}} {
		d := c.Check(t.Context(), tc.host, tc.port)
		assert.Check(t, is.Equal(d.Reason, egress.ReasonRefusedAddress), tc.host)
	}
	c = newChecker(t, egress.Config{Allow: []string{"10.1.2.3"}, AllowedPrivateCIDRs: []netip.Prefix{netip.MustParsePrefix("10.1.2.0/24")}})
	d := c.Check(t.Context(), "10.1.2.3", 443)
	assert.Check(t, d.Allowed, d.Detail)
}

func TestZeroCheckerAllowsNothing(t *testing.T) {
	t.Parallel()
	var c egress.Checker
	d := c.Check(t.Context(), "example.com", 443)
	assert.Equal(t, d.Reason, egress.ReasonNoEgress)
	_, err := c.Dial(t.Context(), d)
	assert.Assert(t, errors.Is(err, egress.ErrRefusedAddress))
}

func TestDecisionMessage(t *testing.T) {
	t.Parallel()
	res := newResolver(map[string][]string{"meta.test.": {"169.254.169.254"}})
	c := newChecker(t, egress.Config{Allow: []string{"*"}}, egress.WithResolver(res))
	d := c.Check(t.Context(), "meta.test", 443)
	msg := d.Message()
	assert.Check(t, is.Contains(msg, "refused_address"))
	assert.Check(t, is.Contains(msg, "meta.test:443"))
	assert.Check(t, !strings.Contains(msg, "169.254"), "address leaked into %q", msg)
	assert.Check(t, !strings.Contains(msg, "metadata"), "category leaked into %q", msg)
}

// RefusalReasons is every reason a refusal gives, and each has its own
// sentence for the agent.
func TestRefusalReasons(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, r := range egress.RefusalReasons() {
		assert.Check(t, r != egress.ReasonAllowlisted)
		msg := egress.Decision{Reason: r, Target: "x:1"}.Message()
		assert.Check(t, !strings.HasSuffix(msg, ": refused"), "%s has no sentence of its own", r)
		assert.Check(t, !seen[msg], "%s repeats a sentence", r)
		seen[msg] = true
	}
}
