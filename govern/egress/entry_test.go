package egress

import (
	"strings"
	"testing"
)

// The one grammar of an allowlist entry, as the policy, the proxy and a
// settings file read it.
func TestParseEntryGrammar(t *testing.T) {
	t.Parallel()
	canon := map[string]string{
		"*":                     "*",
		"*:8443":                "*:8443",
		"*.Example.COM":         "*.example.com",
		"api.github.com.":       "api.github.com",
		"API.github.com.:80":    "api.github.com:80",
		"xn--bcher-kva.example": "xn--bcher-kva.example",
		"Bücher.example":        "xn--bcher-kva.example",
		"localhost":             "localhost",
		"10.1.2.3":              "10.1.2.3",
		"10.1.2.3:5432":         "10.1.2.3:5432",
		"2001:DB8::1":           "2001:db8::1",
		"2001:db8:0::1":         "2001:db8::1",
		"[2001:db8::1]":         "2001:db8::1",
		"[2001:DB8::1]:443":     "[2001:db8::1]:443",
		"[::1]:443":             "[::1]:443",
		"_acme.example.com":     "_acme.example.com",
	}
	for in, want := range canon {
		e, err := ParseEntry(in)
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		if e.String() != want {
			t.Errorf("%q: canonical %q, want %q", in, e.String(), want)
		}
		if back, err := ParseEntry(e.String()); err != nil || back != e {
			t.Errorf("%q: the canonical form reads back as %+v, %v", in, back, err)
		}
	}
	bad := map[string]string{
		"":                               "empty",
		"https://api.github.com":         "not a URL",
		"api.github.com/x":               "not a URL",
		"user@host":                      "not a URL",
		"api.*.com":                      "wildcard",
		"**":                             "wildcard",
		"*.10.0.0.1":                     "not IP addresses",
		"host:0":                         "want 1 to 65535",
		"host:65536":                     "want 1 to 65535",
		"host:+80":                       "want 1 to 65535",
		"host:":                          "want 1 to 65535",
		"[::1":                           "unclosed",
		"[10.0.0.1]:80":                  "only an IPv6 literal",
		"[::1]443":                       "want [IPv6]:port",
		"fe80::1%eth0":                   "zone",
		"::ffff:127.0.0.1":               "write the IPv4 address 127.0.0.1",
		"[::ffff:127.0.0.1]:80":          "write the IPv4 address 127.0.0.1",
		"2130706433":                     "numeric host form",
		"0177.0.0.1":                     "numeric host form",
		"127.1":                          "numeric host form",
		"0x7f000001":                     "numeric host form",
		"a..b":                           "invalid label",
		"-a.com":                         "start or end with '-'",
		"*.a-.com":                       "start or end with '-'",
		strings.Repeat("a", 64) + ".com": "invalid label",
	}
	for in, want := range bad {
		if _, err := ParseEntry(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one saying %q", in, err, want)
		}
	}
}

// FuzzParseEntry: the canonical form of an entry parses to the same entry.
func FuzzParseEntry(f *testing.F) {
	for _, s := range []string{"*", "*.example.com:443", "10.0.0.1", "[::1]:443", "API.github.com.", "2001:db8::1", "Bücher.example"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseEntry(s)
		if err != nil {
			return
		}
		back, err := ParseEntry(e.String())
		if err != nil || back != e {
			t.Fatalf("%q -> %q -> %+v, %v", s, e.String(), back, err)
		}
	})
}
