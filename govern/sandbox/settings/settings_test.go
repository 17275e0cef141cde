package settings

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern/sandbox"
)

func TestLoad(t *testing.T) {
	t.Parallel()
	s, err := Load("testdata/workspace-only.json")
	assert.NilError(t, err)
	want := &sandbox.Narrowing{
		DenyRead:   []string{"/home", "~/.cache", "secrets"},
		AllowRead:  []string{"/home/shared"},
		LimitWrite: true,
		AllowWrite: []string{"."},
		DenyWrite:  []string{".env", "config/production.json"},
	}
	if d := cmp.Diff(want, s.Narrowing()); d != "" {
		t.Errorf("Narrowing (-want +got):\n%s", d)
	}
	// The narrowing is a copy: the spec cannot change the settings.
	s.Narrowing().DenyRead[0] = "/changed"
	assert.Check(t, is.Equal(s.Narrowing().DenyRead[0], "/home"))
}

func TestLoadMissing(t *testing.T) {
	t.Parallel()
	_, err := Load(filepath.Join(t.TempDir(), "none.json"))
	var se *Error
	assert.Assert(t, errors.As(err, &se))
	assert.Check(t, errors.Is(err, os.ErrNotExist) || is.Contains(err.Error(), "no such file")().Success())
}

func TestEmptySectionsNarrowNothing(t *testing.T) {
	t.Parallel()
	s, err := Parse("s.json", []byte(`{}`))
	assert.NilError(t, err)
	assert.Check(t, s.Narrowing() == nil)
	assert.Check(t, is.DeepEqual(s.NarrowEgress([]string{"*", "x.example.com:8443"}, []uint16{443}), []string{"*", "x.example.com:8443"}))
	// An empty allowWrite is not the same as none: nothing stays writable.
	s, err = Parse("s.json", []byte(`{"filesystem": {"denyRead": [], "allowWrite": [], "denyWrite": []}}`))
	assert.NilError(t, err)
	assert.Check(t, is.DeepEqual(s.Narrowing(), &sandbox.Narrowing{LimitWrite: true}))
	// An empty allowedDomains is no network at all.
	s, err = Parse("s.json", []byte(`{"network": {"allowedDomains": [], "deniedDomains": []}}`))
	assert.NilError(t, err)
	assert.Check(t, is.Len(s.NarrowEgress([]string{"*"}, []uint16{443}), 0))
}

// Every refusal names the field and where it is.
func TestParseRefuses(t *testing.T) {
	t.Parallel()
	fs := `"filesystem": {"denyRead": [], "allowWrite": ["."], "denyWrite": []}`
	for _, tc := range []struct {
		name, in, want string
	}{
		{"unknown top-level field", "{\n  \"filesystem\": {\"denyRead\": [], \"allowWrite\": [], \"denyWrite\": []},\n  \"denyEverything\": true\n}",
			"s.json:3:3: denyEverything: unknown field"},
		{"unknown nested field", "{\"filesystem\": {\"denyRead\": [], \"allowWrite\": [], \"denyWrite\": [], \"denyReed\": []}}",
			"s.json:1:68: filesystem.denyReed: unknown field"},
		{"srt setting not applied here", `{"credentials": {}}`,
			"s.json:1:2: credentials: a sandbox-runtime setting this sandbox does not apply (declare credentials in exec.credentials; deny files with filesystem.denyRead): remove it"},
		{"proxy port", `{"network": {"allowedDomains": [], "deniedDomains": [], "httpProxyPort": 8080}}`,
			"s.json:1:57: network.httpProxyPort: a sandbox-runtime setting this sandbox does not apply (the egress proxy here is the gateway's own): remove it"},
		{"widening boolean", `{` + fs + `, "enableWeakerNestedSandbox": true}`,
			"s.json:1:101: enableWeakerNestedSandbox: true is refused: it would weaken the sandbox (a settings file can only narrow the sandbox)"},
		{"filesystem disabled", `{"filesystem": {"disabled": true, "denyRead": [], "allowWrite": [], "denyWrite": []}}`,
			"s.json:1:29: filesystem.disabled: true is refused: it would switch the file-system rules off (a settings file can only narrow the sandbox)"},
		{"unix sockets", `{"network": {"allowedDomains": [], "deniedDomains": [], "allowUnixSockets": ["/var/run/docker.sock"]}}`,
			"s.json:1:78: network.allowUnixSockets: would widen the sandbox: its seccomp filter denies Unix sockets; remove it"},
		{"required list missing", `{"filesystem": {"denyRead": ["/srv"]}}`,
			"s.json:1:37: filesystem.allowWrite: missing: sandbox-runtime requires it (an empty list is allowed; an empty allowWrite leaves nothing writable)"},
		{"network list missing", `{"network": {"deniedDomains": []}}`,
			"s.json:1:33: network.allowedDomains: missing: sandbox-runtime requires it (an empty allowedDomains allows no network at all)"},
		{"duplicate key", `{"network": {"allowedDomains": [], "allowedDomains": ["x.com"], "deniedDomains": []}}`,
			"s.json:1:36: network.allowedDomains: appears twice"},
		{"wrong type", `{"filesystem": {"denyRead": "/home", "allowWrite": [], "denyWrite": []}}`,
			"s.json:1:29: filesystem.denyRead: want a list of strings, not a string"},
		{"wrong element type", `{"filesystem": {"denyRead": ["/a", 7], "allowWrite": [], "denyWrite": []}}`,
			"s.json:1:36: filesystem.denyRead[1]: want a string, not a number"},
		{"glob", "{\"filesystem\": {\n \"denyRead\": [\"**/.env\"], \"allowWrite\": [], \"denyWrite\": []}}",
			`s.json:2:15: filesystem.denyRead[0]: "**/.env": globs are not supported: list the paths (a pattern that matched nothing would skip the narrowing silently)`},
		{"deny root", `{"filesystem": {"denyRead": ["/"], "allowWrite": [], "denyWrite": []}}`,
			"s.json: filesystem.denyRead[0]: / would hide everything the command needs to run; deny the regions meant (e.g. /home)"},
		{"other user's home", `{"filesystem": {"denyRead": ["~bob/x"], "allowWrite": [], "denyWrite": []}}`,
			`s.json:1:30: filesystem.denyRead[0]: "~bob/x": only ~ and ~/... (the sandbox user's home) are understood`},
		{"bare star allowed", `{"network": {"allowedDomains": ["*"], "deniedDomains": []}}`,
			`s.json:1:33: network.allowedDomains[0]: "*": sandbox-runtime refuses a bare * in allowedDomains; leave the network section out to keep the agent's allowlist`},
		{"url", `{"network": {"allowedDomains": ["https://x.com"], "deniedDomains": []}}`,
			`s.json:1:33: network.allowedDomains[0]: "https://x.com": want host, *.domain or IP, with an optional :port, not a URL`},
		{"ambiguous v6", `{"network": {"allowedDomains": ["2001:db8::1:443"], "deniedDomains": []}}`,
			`s.json:1:33: network.allowedDomains[0]: "2001:db8::1:443": an IPv6 literal goes in brackets ([2001:db8::1], [2001:db8::1]:443)`},
		{"tld wildcard", `{"network": {"allowedDomains": ["*.com"], "deniedDomains": []}}`,
			`s.json:1:33: network.allowedDomains[0]: "*.com": a wildcard over a top-level domain is too broad`},
		{"not an object", `["filesystem"]`, "s.json:1:1: want an object, not a list"},
		{"syntax", "{\"filesystem\": {\"denyRead\": [,]}}", "s.json:1:30: invalid JSON: invalid character ',' looking for beginning of value"},
		{"truncated", `{"filesystem": {`, "s.json:1:17: invalid JSON: unexpected end of file"},
		{"trailing data", `{} {}`, "s.json:1:4: unexpected { after the settings object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("s.json", []byte(tc.in))
			assert.Error(t, err, tc.want)
			var se *Error
			assert.Check(t, errors.As(err, &se))
		})
	}
}

func TestNarrowEgress(t *testing.T) {
	t.Parallel()
	ports := []uint16{443, 80}
	for _, tc := range []struct {
		name            string
		allowed, denied string
		allowlist, want []string
	}{
		{"intersection keeps the narrower side", `"*.github.com", "example.org"`, ``,
			[]string{"*", "api.github.com", "*.example.org", "other.net"}, []string{"*.github.com", "example.org", "api.github.com"}},
		{"a settings wildcard inside an allowlist wildcard", `"*.api.example.com"`, ``,
			[]string{"*.example.com"}, []string{"*.api.example.com"}},
		{"ports: the file's port must be an allowed one when the entry has none", `"a.com:443", "b.com:8443", "c.com"`, ``,
			[]string{"a.com", "b.com", "c.com:8443"}, []string{"a.com:443", "c.com:8443"}},
		{"an explicit port must match", `"a.com:443"`, ``,
			[]string{"a.com:8443", "a.com:443"}, []string{"a.com:443"}},
		{"IP literals only by the literal", `"10.0.0.1", "[2001:db8::1]:443", "*.example.com"`, ``,
			[]string{"*", "10.0.0.1", "2001:db8::1"}, []string{"*.example.com", "10.0.0.1", "[2001:db8::1]:443"}},
		{"denied host covers the entry", `"*.example.com"`, `"x.example.com"`,
			[]string{"x.example.com", "y.example.com"}, []string{"y.example.com"}},
		{"denied host cuts into a wildcard: dropped whole", `"*.example.com"`, `"x.example.com"`,
			[]string{"*"}, nil},
		{"denied port comes off", `"a.com"`, `"a.com:80"`,
			[]string{"a.com", "a.com:8080"}, []string{"a.com:443", "a.com:8080"}},
		{"deny everything", `"a.com"`, `"*"`,
			[]string{"a.com", "10.0.0.1"}, nil},
		{"deny all on one port", `"a.com", "b.com:8443"`, `"*:443"`,
			[]string{"*"}, []string{"a.com:80"}},
		{"unicode and case canonicalised", `"BÜCHER.example"`, ``,
			[]string{"xn--bcher-kva.example"}, []string{"xn--bcher-kva.example"}},
		{"unparsable allowlist entries dropped", `"a.com"`, ``,
			[]string{"https://a.com", "a.com"}, []string{"a.com"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := Parse("s.json", []byte(`{"network": {"allowedDomains": [`+tc.allowed+`], "deniedDomains": [`+tc.denied+`]}}`))
			assert.NilError(t, err)
			got := s.NarrowEgress(tc.allowlist, ports)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("NarrowEgress(%v) (-want +got):\n%s", tc.allowlist, d)
			}
		})
	}
}

// Whatever the file says, nothing comes out that the allowlist did not
// allow: every result entry is matched, host and port, by an input entry.
func TestNarrowEgressNeverWidens(t *testing.T) {
	t.Parallel()
	ports := []uint16{443, 80}
	lists := [][]string{{"*"}, {"*.example.com"}, {"example.com:8443"}, {"10.0.0.1"}, {"a.example.com", "b.example.org:80"}}
	files := []string{
		`"*.example.com", "example.com:8443", "10.0.0.1:443", "b.example.org"`,
		`"a.example.com:80"`,
		`"other.net"`,
	}
	for _, l := range lists {
		for _, f := range files {
			s, err := Parse("s.json", []byte(`{"network": {"allowedDomains": [`+f+`], "deniedDomains": ["c.example.com"]}}`))
			assert.NilError(t, err)
			for _, got := range s.NarrowEgress(l, ports) {
				g, err := parsePattern(got, true)
				assert.NilError(t, err)
				covered := false
				for _, raw := range l {
					a, _ := parsePattern(raw, true)
					m, ok := meetHost(a, g)
					m.port = 0
					portOK := a.port == g.port || a.port == 0 && (g.port == 0 || g.port == 443 || g.port == 80)
					if ok && m.String() == (pattern{kind: g.kind, name: g.name, addr: g.addr}).String() && portOK {
						covered = true
					}
				}
				assert.Check(t, covered, "%v narrowed by %s gave %s", l, f, got)
			}
		}
	}
}
