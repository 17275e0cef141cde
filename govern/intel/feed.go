package intel

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/netip"
	"os"
	"regexp"
	"strings"

	"github.com/mitrity/mitrity/govern/yamlfile"
)

// wireFeed is the file as written. Entries are mappings so that each can
// carry a note; yamlfile rejects unknown keys and wrong kinds with their
// line:column.
type wireFeed struct {
	Hosts    []wireHost    `yaml:"hosts"`
	SHA256   []wireHash    `yaml:"sha256"`
	Patterns []wirePattern `yaml:"patterns"`
}

type wireHost struct {
	Host string `yaml:"host"`
	Note string `yaml:"note"`
}

type wireHash struct {
	SHA256 string `yaml:"sha256"`
	Note   string `yaml:"note"`
}

type wirePattern struct {
	Pattern string `yaml:"pattern"`
	Note    string `yaml:"note"`
}

// Kind says which part of the feed a hit came from.
type Kind string

const (
	KindHost    Kind = "host"
	KindSHA256  Kind = "sha256"
	KindPattern Kind = "pattern"
)

// Hit is one indicator that matched. Value is what matched in the call (a
// host, a script hash, the matched text, shortened); Entry is the feed
// entry as written (*.evil.example, the hash, the pattern); Note is the
// entry's note.
type Hit struct {
	Kind  Kind   `json:"kind"`
	Value string `json:"value"`
	Entry string `json:"entry"`
	Note  string `json:"note,omitempty"`
}

// String is the hit for a person: "host evil.example (*.evil.example: C2
// from incident 42)".
func (h Hit) String() string {
	s := string(h.Kind) + " " + h.Value
	switch {
	case h.Entry != h.Value && h.Note != "":
		s += " (" + h.Entry + ": " + h.Note + ")"
	case h.Entry != h.Value:
		s += " (" + h.Entry + ")"
	case h.Note != "":
		s += " (" + h.Note + ")"
	}
	return s
}

type entry struct{ value, note string }

type pattern struct {
	re *regexp.Regexp
	entry
}

// Feed is a loaded, validated feed. It is immutable, so a Watcher can swap
// it while calls read it.
type Feed struct {
	// Path is the file it was loaded from; SHA256 is the hash of its bytes,
	// which a log line or an audit event can carry to say which version of
	// the feed decided.
	Path   string
	SHA256 string

	exact    map[string]entry // host -> entry
	suffix   map[string]entry // "evil.example" for "*.evil.example"
	hashes   map[string]entry
	patterns []pattern
}

// Counts reports how many indicators of each kind the feed holds.
func (f *Feed) Counts() (hosts, hashes, patterns int) {
	if f == nil {
		return 0, 0, 0
	}
	return len(f.exact) + len(f.suffix), len(f.hashes), len(f.patterns)
}

// Load reads and validates the feed at path. Every problem is reported at
// once, each as `file:line:col: path: message` (a *yamlfile.Errors).
func Load(path string) (*Feed, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return parse(path, data)
}

// readFile reads at most one byte more than a feed may hold, so an
// oversized file is refused without reading it all.
func readFile(path string) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("threat intel feed: %w", err)
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, yamlfile.MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("threat intel feed: %w", err)
	}
	return data, nil
}

func parse(path string, data []byte) (*Feed, error) {
	if len(data) > yamlfile.MaxFileBytes {
		return nil, fmt.Errorf("threat intel feed %s: larger than %d MiB", path, yamlfile.MaxFileBytes>>20)
	}
	var w wireFeed
	doc, err := yamlfile.Decode(path, data, &w)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	f := &Feed{Path: path, SHA256: hex.EncodeToString(sum[:]),
		exact: map[string]entry{}, suffix: map[string]entry{}, hashes: map[string]entry{}}
	errs := &yamlfile.Errors{}
	for i, h := range w.Hosts {
		p := yamlfile.Key(yamlfile.Index("hosts", i), "host")
		host, wildcard, err := parseHostEntry(h.Host)
		if err != nil {
			errs.Add(doc.Loc(p).Errorf("%q: %v", h.Host, err))
			continue
		}
		m := f.exact
		if wildcard {
			m = f.suffix
		}
		if _, dup := m[host]; !dup { // the first entry's note wins
			m[host] = entry{h.Host, h.Note}
		}
	}
	for i, h := range w.SHA256 {
		p := yamlfile.Key(yamlfile.Index("sha256", i), "sha256")
		sum := strings.ToLower(strings.TrimSpace(h.SHA256))
		if len(sum) != 64 || strings.Trim(sum, "0123456789abcdef") != "" {
			errs.Add(doc.Loc(p).Errorf("%q: want 64 hexadecimal digits (a SHA-256)", h.SHA256))
			continue
		}
		if _, dup := f.hashes[sum]; !dup {
			f.hashes[sum] = entry{sum, h.Note}
		}
	}
	for i, pt := range w.Patterns {
		p := yamlfile.Key(yamlfile.Index("patterns", i), "pattern")
		if pt.Pattern == "" {
			errs.Add(doc.Loc(p).Errorf("empty pattern"))
			continue
		}
		re, err := regexp.Compile(pt.Pattern)
		if err != nil {
			errs.Add(doc.Loc(p).Errorf("not a valid regular expression (Go RE2 syntax): %v", err))
			continue
		}
		// A pattern that matches the empty string matches every command:
		// almost certainly a mistake, and one that would block everything.
		if re.MatchString("") {
			errs.Add(doc.Loc(p).Errorf("%q matches the empty string, so it would match every command", pt.Pattern))
			continue
		}
		f.patterns = append(f.patterns, pattern{re, entry{pt.Pattern, pt.Note}})
	}
	if err := errs.Err(); err != nil {
		return nil, err
	}
	return f, nil
}

// parseHostEntry validates a feed host: a DNS name or an IP address, or
// *.suffix. Anything a URL would carry around a host (scheme, port, path)
// is refused rather than silently never matching.
func parseHostEntry(s string) (host string, wildcard bool, err error) {
	h := strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(h, "*."); ok {
		wildcard, h = true, rest
	}
	switch {
	case h == "":
		return "", false, fmt.Errorf("empty host")
	case strings.Contains(h, "://"):
		return "", false, fmt.Errorf("write the host alone, without a scheme")
	case strings.ContainsAny(h, "*"):
		return "", false, fmt.Errorf("a wildcard is allowed only as a leading \"*.\" label")
	case strings.ContainsAny(h, "/?#@"):
		return "", false, fmt.Errorf("write the host alone, without a path or user")
	}
	if a, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil {
		if wildcard {
			return "", false, fmt.Errorf("*. cannot prefix an IP address")
		}
		return a.Unmap().String(), false, nil
	}
	if strings.Contains(h, ":") {
		return "", false, fmt.Errorf("write the host alone, without a port")
	}
	h = normalizeHost(h)
	if !validHostname(h) {
		return "", false, fmt.Errorf("not a host name (letters, digits, '-', '_' and '.'; internationalised names in their xn-- form)")
	}
	return h, wildcard, nil
}

// canonicalHost is the one spelling a host is compared in: lower case, no
// trailing dot, no port, IP addresses in their canonical form (brackets
// off, IPv6 compressed, IPv4-mapped IPv6 as IPv4).
func canonicalHost(h string) string {
	// A port is not part of the host: [v6]:443, name:443.
	if strings.HasPrefix(h, "[") {
		if end := strings.IndexByte(h, ']'); end > 0 {
			h = h[1:end]
		}
	} else if strings.Count(h, ":") == 1 {
		h, _, _ = strings.Cut(h, ":")
	}
	h = normalizeHost(h)
	if a, err := netip.ParseAddr(h); err == nil {
		return a.Unmap().String()
	}
	return h
}

// normalizeHost lower-cases a host and drops a trailing dot, so that
// EVIL.example. and evil.example are one host.
func normalizeHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

func validHostname(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// Check matches a call against the feed: hosts the command may reach
// (HostsFrom), hashes of the scripts it runs (HashesFrom), and the judged
// command text against every pattern. Hits come in that order, each
// indicator once. A nil feed matches nothing.
func (f *Feed) Check(text string, hosts []string, hashes []string) []Hit {
	if f == nil {
		return nil
	}
	var hits []Hit
	seen := map[Hit]bool{}
	add := func(h Hit) {
		if !seen[h] {
			seen[h] = true
			hits = append(hits, h)
		}
	}
	for _, h := range hosts {
		h = canonicalHost(h)
		if e, ok := f.matchHost(h); ok {
			add(Hit{Kind: KindHost, Value: h, Entry: e.value, Note: e.note})
		}
	}
	for _, s := range hashes {
		if e, ok := f.hashes[strings.ToLower(s)]; ok {
			add(Hit{Kind: KindSHA256, Value: strings.ToLower(s), Entry: e.value, Note: e.note})
		}
	}
	for _, p := range f.patterns {
		if m := p.re.FindStringIndex(text); m != nil {
			add(Hit{Kind: KindPattern, Value: shorten(text[m[0]:m[1]]), Entry: p.value, Note: p.note})
		}
	}
	return hits
}

// Match is Check with each hit as a sentence (Hit.String), the shape the
// pipeline's threat-intel stage takes.
func (f *Feed) Match(text string, hosts, hashes []string) []string {
	var out []string
	for _, h := range f.Check(text, hosts, hashes) {
		out = append(out, h.String())
	}
	return out
}

// matchHost: an exact entry, or a *.suffix entry matching the host itself
// or any name under it (*.evil.example matches evil.example and
// a.b.evil.example, as in the egress allowlist).
func (f *Feed) matchHost(h string) (entry, bool) {
	if e, ok := f.exact[h]; ok {
		return e, true
	}
	for s := h; s != ""; {
		if e, ok := f.suffix[s]; ok {
			return e, true
		}
		i := strings.IndexByte(s, '.')
		if i < 0 {
			break
		}
		s = s[i+1:]
	}
	return entry{}, false
}

// shorten keeps a matched command fragment short enough for a log line.
func shorten(s string) string {
	const n = 80
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
