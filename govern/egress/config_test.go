package egress_test

import (
	"encoding/json"
	"errors"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern/egress"
)

func TestParseConfig(t *testing.T) {
	t.Parallel()
	cfg, err := egress.ParseConfig([]byte(`{
		"allow": ["*.example.com", "api.test.org:8443"],
		"allowed_ports": [443, 8080],
		"denied_cidrs": ["1.1.1.0/24", "2606:4700::1"],
		"allowed_private_cidrs": ["10.1.0.0/16", "fd12::/16"]
	}`))
	assert.NilError(t, err)
	want := egress.Config{
		Allow:               []string{"*.example.com", "api.test.org:8443"},
		AllowedPorts:        []uint16{443, 8080},
		DeniedCIDRs:         []netip.Prefix{netip.MustParsePrefix("1.1.1.0/24"), netip.MustParsePrefix("2606:4700::1/128")},
		AllowedPrivateCIDRs: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("fd12::/16")},
	}
	assert.DeepEqual(t, cfg, want, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b }))

	cfg, err = egress.ParseConfig([]byte(`{}`))
	assert.NilError(t, err)
	assert.Check(t, cfg.Allow == nil && cfg.AllowedPorts == nil, "absent fields stay unset: %+v", cfg)
	cfg, err = egress.ParseConfig([]byte(`{"allowed_ports": []}`))
	assert.NilError(t, err)
	assert.Check(t, cfg.AllowedPorts != nil && len(cfg.AllowedPorts) == 0)
}

// Every invalid configuration is refused before anything is built, and the
// error names the field.
func TestConfigErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		json  string
		field string
	}{
		{`{"alow": []}`, "alow"},
		{`{"allow": "example.com"}`, "allow"},
		{`{"allowed_ports": [0]}`, "allowed_ports[0]"},
		{`{"allowed_ports": [443, 70000]}`, "allowed_ports[1]"},
		{`{"denied_cidrs": ["nope"]}`, "denied_cidrs[0]"},
		{`{"denied_cidrs": ["::ffff:10.0.0.0/104"]}`, "denied_cidrs[0]"},
		{`{"allowed_private_cidrs": ["8.8.8.0/24"]}`, "allowed_private_cidrs[0]"},
		{`{"allowed_private_cidrs": ["10.0.0.0/7"]}`, "allowed_private_cidrs[0]"},
		{`{"allowed_private_cidrs": ["127.0.0.0/8"]}`, "allowed_private_cidrs[0]"},
		{`{"allowed_private_cidrs": ["fe80::/10"]}`, "allowed_private_cidrs[0]"},
		{`{"allow": ["ok.org", "https://example.com"]}`, "allow[1]"},
		{`{"allow": ["example.com/path"]}`, "allow[0]"},
		{`{"allow": ["*.*.example.com"]}`, "allow[0]"},
		{`{"allow": ["foo*.example.com"]}`, "allow[0]"},
		{`{"allow": ["*.10.0.0.1"]}`, "allow[0]"},
		{`{"allow": ["example.com:0"]}`, "allow[0]"},
		{`{"allow": ["example.com:65536"]}`, "allow[0]"},
		{`{"allow": ["example.com:08"]}`, "allow[0]"},
		{`{"allow": ["[::1"]}`, "allow[0]"},
		{`{"allow": ["[example.com]:443"]}`, "allow[0]"},
		{`{"allow": ["[10.0.0.1]:443"]}`, "allow[0]"},
		{`{"allow": ["[::1]443"]}`, "allow[0]"},
		{`{"allow": ["127.1"]}`, "allow[0]"},
		{`{"allow": ["2130706433"]}`, "allow[0]"},
		{`{"allow": ["exa mple.com"]}`, "allow[0]"},
		{`{"allow": [""]}`, "allow[0]"},
		{`{"allow": ["fe80::1%eth0"]}`, "allow[0]"},
		{`{} {}`, "trailing"},
	}
	for _, tc := range tests {
		t.Run(tc.json, func(t *testing.T) {
			t.Parallel()
			cfg, err := egress.ParseConfig([]byte(tc.json))
			if err == nil {
				_, err = egress.NewChecker(cfg, egress.WithInterfaceAddrs(testIfaces))
			}
			assert.Assert(t, err != nil)
			assert.Check(t, errors.Is(err, egress.ErrInvalidConfig), "%v", err)
			assert.Check(t, is.Contains(err.Error(), tc.field))
		})
	}
}

func TestConfigValidEntries(t *testing.T) {
	t.Parallel()
	for _, e := range []string{
		"*", "*:8443", "*.example.com", "*.example.com:8443", "example.com", "Example.COM.",
		"example.com:8443", "bücher.example", "10.1.2.3", "10.1.2.3:443", "[2001:db8::1]:443",
		"[2001:db8::1]", "2001:db8::1", "intranet",
	} {
		_, err := egress.NewChecker(egress.Config{Allow: []string{e}}, egress.WithInterfaceAddrs(testIfaces))
		assert.Check(t, err, e)
	}
}

// What the gateway writes on the proxy's stdin reads back as the same
// configuration, absent and empty port lists kept apart.
func TestConfigJSONRoundTrip(t *testing.T) {
	t.Parallel()
	cmpPrefix := cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })
	for _, cfg := range []egress.Config{
		{Allow: []string{"*.example.com", "api.test.org:8443", "[2001:db8::1]:443"},
			AllowedPorts:        []uint16{443, 8080},
			DeniedCIDRs:         []netip.Prefix{netip.MustParsePrefix("1.1.1.0/24"), netip.MustParsePrefix("2606:4700::1/128")},
			AllowedPrivateCIDRs: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")}},
		{Allow: []string{"example.com"}},
		{Allow: []string{"example.com"}, AllowedPorts: []uint16{}},
		{},
	} {
		assert.NilError(t, cfg.Validate())
		b, err := json.Marshal(cfg)
		assert.NilError(t, err)
		got, err := egress.ParseConfig(b)
		assert.NilError(t, err, "%s", b)
		want := cfg
		if want.Allow == nil {
			want.Allow = []string{} // written as [], read as empty
		}
		assert.DeepEqual(t, got, want, cmpPrefix)
		assert.Check(t, (got.AllowedPorts == nil) == (cfg.AllowedPorts == nil), "%s", b)
	}
	err := egress.Config{Allow: []string{"ok.org", "https://x"}}.Validate()
	assert.ErrorIs(t, err, egress.ErrInvalidConfig)
	assert.ErrorContains(t, err, "allow[1]")
}
