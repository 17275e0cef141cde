package egress_test

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"gotest.tools/v3/assert"

	"github.com/mitrity/mitrity/govern/egress"
)

func TestCanonicalHost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want string // canonical name or address; "" with reason set means refused
		addr bool
		bad  egress.Reason
	}{
		{in: "example.com", want: "example.com"},
		{in: "Example.COM", want: "example.com"},
		{in: "example.com.", want: "example.com"},
		{in: "EXAMPLE.com.", want: "example.com"},
		{in: "bücher.example", want: "xn--bcher-kva.example"},
		{in: "BÜCHER.example", want: "xn--bcher-kva.example"},
		{in: "xn--bcher-kva.example", want: "xn--bcher-kva.example"},
		{in: "例え.テスト", want: "xn--r8jz45g.xn--zckzah"},
		{in: "ＥＸＡＭＰＬＥ．com", want: "example.com"}, // full-width letters and stop
		{in: "example。com", want: "example.com"}, // ideographic full stop
		{in: "a_b.example.com", want: "a_b.example.com"},
		{in: "r3---sn-abc.googlevideo.com", want: "r3---sn-abc.googlevideo.com"},
		{in: "1e100.net", want: "1e100.net"},
		{in: "123.example", want: "123.example"},
		{in: "127.0.0.1.nip.io", want: "127.0.0.1.nip.io"}, // a name; its addresses decide
		{in: "intranet", want: "intranet"},

		{in: "127.0.0.1", want: "127.0.0.1", addr: true},
		{in: "127.0.0.1.", want: "127.0.0.1", addr: true},
		{in: "１２７.０.０.１", want: "127.0.0.1", addr: true}, // full-width digits map to a literal
		{in: "::1", want: "::1", addr: true},
		{in: "::ffff:127.0.0.1", want: "::ffff:127.0.0.1", addr: true},
		{in: "2001:DB8::1", want: "2001:db8::1", addr: true},

		{in: "2130706433", bad: egress.ReasonNumericHost},
		{in: "0x7f000001", bad: egress.ReasonNumericHost},
		{in: "0x7F000001", bad: egress.ReasonNumericHost},
		{in: "0x7f.1", bad: egress.ReasonNumericHost},
		{in: "0x7f.0.0.1", bad: egress.ReasonNumericHost},
		{in: "0177.0.0.1", bad: egress.ReasonNumericHost},
		{in: "017700000001", bad: egress.ReasonNumericHost},
		{in: "127.1", bad: egress.ReasonNumericHost},
		{in: "127.0.1", bad: egress.ReasonNumericHost},
		{in: "1.2.3.4.5", bad: egress.ReasonNumericHost},
		{in: "127.000.000.001", bad: egress.ReasonNumericHost},
		{in: "foo.0x1f", bad: egress.ReasonNumericHost},
		{in: "0x", bad: egress.ReasonNumericHost},
		{in: "２１３０７０６４３３", bad: egress.ReasonNumericHost}, // full-width decimal

		{in: "", bad: egress.ReasonInvalidHost},
		{in: "example.com..", bad: egress.ReasonInvalidHost},
		{in: "a..b", bad: egress.ReasonInvalidHost},
		{in: ".example.com", bad: egress.ReasonInvalidHost},
		{in: "exa mple.com", bad: egress.ReasonInvalidHost},
		{in: "evil.com\x00.example.com", bad: egress.ReasonInvalidHost},
		{in: "evil.com/x", bad: egress.ReasonInvalidHost},
		{in: "user@evil.com", bad: egress.ReasonInvalidHost},
		{in: "evil.com%2f", bad: egress.ReasonInvalidHost},
		{in: "fe80::1%eth0", bad: egress.ReasonInvalidHost},
		{in: strings.Repeat("a", 64) + ".com", bad: egress.ReasonInvalidHost},
		{in: strings.Repeat("abcdefghi.", 26) + "com", bad: egress.ReasonInvalidHost},
		{in: strings.Repeat("a", 2000), bad: egress.ReasonInvalidHost},
		{in: "xn--a.example", bad: egress.ReasonInvalidHost}, // invalid punycode
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			h, err := egress.CanonicalHost(tc.in)
			if tc.bad != "" {
				assert.Assert(t, err != nil, "got %+v", h)
				d := newChecker(t, egress.Config{Allow: []string{"*"}}).Check(t.Context(), tc.in, 443)
				assert.Equal(t, d.Reason, tc.bad, "detail %s", d.Detail)
				assert.Assert(t, !d.Allowed)
				return
			}
			assert.NilError(t, err)
			assert.Equal(t, h.String(), tc.want)
			assert.Equal(t, h.IsAddr(), tc.addr)
		})
	}
}

func TestSplitHostPort(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		host string
		port uint16
		bad  egress.Reason
	}{
		{in: "example.com:443", host: "example.com", port: 443},
		{in: "[::ffff:127.0.0.1]:80", host: "::ffff:127.0.0.1", port: 80},
		{in: "[2001:db8::1]:8443", host: "2001:db8::1", port: 8443},
		{in: "example.com", bad: egress.ReasonInvalidHost},
		{in: "example.com:", bad: egress.ReasonInvalidPort},
		{in: "example.com:0", bad: egress.ReasonInvalidPort},
		{in: "example.com:65536", bad: egress.ReasonInvalidPort},
		{in: "example.com:0443", bad: egress.ReasonInvalidPort},
		{in: "example.com:+443", bad: egress.ReasonInvalidPort},
		{in: "example.com:https", bad: egress.ReasonInvalidPort},
		{in: "[example.com]:443", bad: egress.ReasonInvalidHost},
		{in: "::1:443", bad: egress.ReasonInvalidHost},
		{in: "2130706433:443", bad: egress.ReasonNumericHost},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			h, port, err := egress.SplitHostPort(tc.in)
			if tc.bad != "" {
				assert.Assert(t, err != nil)
				d := newChecker(t, egress.Config{Allow: []string{"*"}}).CheckAuthority(t.Context(), tc.in)
				assert.Equal(t, d.Reason, tc.bad)
				return
			}
			assert.NilError(t, err)
			assert.Equal(t, h.String(), tc.host)
			assert.Equal(t, port, tc.port)
		})
	}
}

// fakeResolver answers from a table and records what it was asked, so
// tests can prove a refused name was never looked up.
type fakeResolver struct {
	answers map[string][]netip.Addr // by rooted name
	err     error
	asked   chan string
}

func newResolver(answers map[string][]string) *fakeResolver {
	r := &fakeResolver{answers: map[string][]netip.Addr{}, asked: make(chan string, 1024)}
	for name, as := range answers {
		for _, a := range as {
			r.answers[name] = append(r.answers[name], netip.MustParseAddr(a))
		}
	}
	return r
}

func (r *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	select {
	case r.asked <- host:
	default:
	}
	if r.err != nil {
		return nil, r.err
	}
	a, ok := r.answers[host]
	if !ok {
		return nil, errors.New("no such host")
	}
	return a, nil
}

func (r *fakeResolver) lookups() []string {
	var out []string
	for {
		select {
		case h := <-r.asked:
			out = append(out, h)
		default:
			return out
		}
	}
}

// testIfaces stands in for the host's interfaces in table tests, so results
// do not depend on the machine. 93.184.216.34 plays a public address of
// this host.
func testIfaces() ([]netip.Addr, error) {
	return []netip.Addr{
		netip.MustParseAddr("127.0.0.1"),
		netip.MustParseAddr("::1"),
		netip.MustParseAddr("10.9.9.9"),
		netip.MustParseAddr("93.184.216.34"),
		netip.MustParseAddr("2606:2800:220:1:248:1893:25c8:1946"),
	}, nil
}

// newChecker builds a checker with test interfaces and, unless opts bring
// one, a resolver that knows nothing.
func newChecker(t *testing.T, cfg egress.Config, opts ...egress.Option) *egress.Checker {
	t.Helper()
	base := []egress.Option{egress.WithInterfaceAddrs(testIfaces), egress.WithResolver(newResolver(nil))}
	c, err := egress.NewChecker(cfg, append(base, opts...)...)
	assert.NilError(t, err)
	return c
}
