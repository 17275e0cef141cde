package egress

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// Host is a destination host in canonical form: a lower-case ASCII DNS name
// without a trailing dot, or an IP literal. Exactly one of Name and Addr is
// set. Matching, logging and the report all use this form, so one
// destination has one spelling however the agent wrote it.
type Host struct {
	Name string
	Addr netip.Addr
}

// IsAddr reports whether h is an IP literal.
func (h Host) IsAddr() bool { return h.Addr.IsValid() }

// String is the name or the address (IPv6 without brackets).
func (h Host) String() string {
	if h.IsAddr() {
		return h.Addr.String()
	}
	return h.Name
}

// hostPort formats host and port as one destination, brackets included for
// IPv6, the way the report and the logs name it.
func hostPort(host string, port uint16) string {
	return net.JoinHostPort(host, strconv.FormatUint(uint64(port), 10))
}

const (
	maxNameLen  = 253 // RFC 1035, without the trailing dot
	maxLabelLen = 63
	// maxRawHost bounds what is even looked at; anything longer is refused
	// before IDNA processing.
	maxRawHost = 1024
)

// idnaProfile is UTS #46 lookup processing as browsers do it: width, case
// and compatibility mapping (so "ＥＸＡＭＰＬＥ。com" is example.com),
// Bidi rule, DNS lengths, but no hyphen or STD3 checks, because real names
// such as "r3---sn-x.googlevideo.com" and "a_b.example.com" exist. The
// character set is then checked by validName.
var idnaProfile = idna.New(
	idna.MapForLookup(),
	idna.BidiRule(),
	idna.Transitional(false),
	idna.CheckHyphens(false),
	idna.StrictDomainName(false),
	idna.VerifyDNSLength(true),
)

// hostError is why a host cannot be canonicalised; reason is what Check
// reports.
type hostError struct {
	reason Reason
	msg    string
}

func (e *hostError) Error() string { return e.msg }

// CanonicalHost returns the canonical form of a destination host as written
// in a request (IPv6 literals without brackets). It lower-cases, drops one
// trailing dot and applies IDNA ToASCII; an IDNA error is a refusal. A
// strict dotted-quad or an IPv6 literal (without a zone) is an IP literal.
// Any other numeric form an URL parser or inet_aton would read as IPv4
// ("2130706433", "0x7f.1", "0177.0.0.1", "127.1") is refused, because
// whichever parser reads it decides where it goes.
func CanonicalHost(raw string) (Host, error) {
	if raw == "" {
		return Host{}, &hostError{ReasonInvalidHost, "empty host"}
	}
	if len(raw) > maxRawHost {
		return Host{}, &hostError{ReasonInvalidHost, "host too long"}
	}
	if !utf8.ValidString(raw) {
		// IDNA would map the bad bytes to U+FFFD and give a name that
		// is no one's.
		return Host{}, &hostError{ReasonInvalidHost, "host is not valid UTF-8"}
	}
	if a, ok := parseLiteral(raw); ok {
		if !a.IsValid() {
			return Host{}, &hostError{ReasonInvalidHost, "IPv6 zone in host"}
		}
		return Host{Addr: a}, nil
	}
	s := strings.TrimSuffix(raw, ".")
	ascii, err := idnaProfile.ToASCII(s)
	if err != nil {
		return Host{}, &hostError{ReasonInvalidHost, fmt.Sprintf("not a valid host name: %v", err)}
	}
	ascii = strings.ToLower(ascii)
	// Mapping can turn full-width digits and dots into an IP literal.
	if a, ok := parseLiteral(ascii); ok {
		if !a.IsValid() {
			return Host{}, &hostError{ReasonInvalidHost, "IPv6 zone in host"}
		}
		return Host{Addr: a}, nil
	}
	if endsInNumber(ascii) {
		return Host{}, &hostError{ReasonNumericHost, "numeric host form other than a dotted-quad IPv4 literal"}
	}
	if err := validName(ascii); err != nil {
		return Host{}, &hostError{ReasonInvalidHost, err.Error()}
	}
	return Host{Name: ascii}, nil
}

// parseLiteral parses a strict IP literal. ok with an invalid Addr means
// the text is an address with a zone, which is never a destination.
func parseLiteral(s string) (a netip.Addr, ok bool) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}, false
	}
	if a.Zone() != "" {
		return netip.Addr{}, true
	}
	return a, true
}

// endsInNumber is the WHATWG URL test for "this host is an IPv4 address":
// the last label is all decimal digits, or 0x followed by hex digits. A
// strict dotted-quad has already been taken as a literal, so whatever still
// ends in a number here is a form we refuse.
func endsInNumber(name string) bool {
	last := name
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		last = name[i+1:]
	}
	if last == "" {
		return false
	}
	if strings.HasPrefix(last, "0x") {
		return strings.Trim(last[2:], "0123456789abcdef") == ""
	}
	return strings.Trim(last, "0123456789") == ""
}

// validName checks DNS lengths and the character set: letters, digits,
// hyphen and underscore only, so nothing a resolver or a log line could
// read differently (spaces, '%', '/', '@', control bytes) gets through.
func validName(name string) error {
	if len(name) > maxNameLen {
		return fmt.Errorf("host name longer than %d bytes", maxNameLen)
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" {
			return fmt.Errorf("empty label in host name")
		}
		if len(label) > maxLabelLen {
			return fmt.Errorf("label longer than %d bytes in host name", maxLabelLen)
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("character %q not allowed in host name", c)
			}
		}
	}
	return nil
}

// parsePort parses a decimal port 1-65535 without sign or leading zeros.
func parsePort(s string) (uint16, bool) {
	if s == "" || len(s) > 5 || s[0] == '0' {
		return 0, false
	}
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 {
		return 0, false
	}
	return uint16(n), true
}

// SplitHostPort splits a request authority "host:port" ("[v6]:port" for
// IPv6) into its canonical host and port. Both are required.
func SplitHostPort(authority string) (Host, uint16, error) {
	h, p, err := net.SplitHostPort(authority)
	if err != nil {
		return Host{}, 0, &hostError{ReasonInvalidHost, "not host:port"}
	}
	port, ok := parsePort(p)
	if !ok {
		return Host{}, 0, &hostError{ReasonInvalidPort, "invalid port"}
	}
	// net.SplitHostPort accepts "[name]:port"; only IPv6 belongs in brackets.
	if strings.HasPrefix(authority, "[") && !strings.Contains(h, ":") {
		return Host{}, 0, &hostError{ReasonInvalidHost, "brackets around a non-IPv6 host"}
	}
	host, err := CanonicalHost(h)
	if err != nil {
		return Host{}, 0, err
	}
	return host, port, nil
}
