package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Reason is the machine-readable outcome of Check. Tests and the gateway
// assert these words; the agent sees them in the 403 body.
type Reason string

const (
	// ReasonAllowlisted: an entry matched and every address passed.
	ReasonAllowlisted Reason = "allowlisted"
	// ReasonNoEgress: the allowlist is empty, which means no egress.
	ReasonNoEgress Reason = "no_egress"
	// ReasonNotAllowlisted: no entry matches host:port.
	ReasonNotAllowlisted Reason = "not_allowlisted"
	// ReasonInvalidHost: the host is not a valid name or IP literal.
	ReasonInvalidHost Reason = "invalid_host"
	// ReasonNumericHost: a numeric host form other than a dotted-quad
	// ("2130706433", "0x7f.1", "0177.0.0.1", "127.1").
	ReasonNumericHost Reason = "numeric_host"
	// ReasonInvalidPort: the port is missing or not 1-65535.
	ReasonInvalidPort Reason = "invalid_port"
	// ReasonRefusedName: a name refused before resolving (localhost, the
	// metadata names), whatever the allowlist says.
	ReasonRefusedName Reason = "refused_name"
	// ReasonRefusedAddress: the literal, or any address the name resolved
	// to, is in a refused class (Decision.Category says which).
	ReasonRefusedAddress Reason = "refused_address"
	// ReasonResolveFailed: the name did not resolve to any address.
	ReasonResolveFailed Reason = "resolve_failed"
	// ReasonBadRequest: the request was refused unread, before any
	// destination was looked at: origin-form, a scheme other than http://
	// in absolute form, a method not forwarded (TRACE), an Upgrade, a
	// CONNECT without host:port. It still names where the script tried to
	// go, so it is a refusal like the others (Proxy.bad).
	ReasonBadRequest Reason = "bad_request"
)

func (r Reason) String() string { return string(r) }

// RefusalReasons are every Reason a refused destination can carry: the
// closed vocabulary of the report's denials and of the audit trail's
// unauthorized_destination events.
func RefusalReasons() []Reason {
	return []Reason{
		ReasonNoEgress, ReasonNotAllowlisted, ReasonInvalidHost, ReasonNumericHost,
		ReasonInvalidPort, ReasonRefusedName, ReasonRefusedAddress, ReasonResolveFailed,
		ReasonBadRequest,
	}
}

// Decision is the verdict on one destination.
type Decision struct {
	Allowed bool
	Reason  Reason
	// Target is the destination as host:port, canonical when the host could
	// be canonicalised and otherwise a quoted, truncated form of what was
	// asked. It is what the report lists.
	Target string
	Host   Host // zero when the host was invalid
	Port   uint16
	// Entry is the allowlist entry that matched, as the operator wrote it.
	Entry string
	// Addrs are the addresses that passed, in the order to dial them. Only
	// these are ever dialed for this decision.
	Addrs []netip.Addr
	// Category and Detail explain a refusal for logs and denial events
	// (which address, which class). They are never sent to the agent.
	Category Category
	Detail   string
}

// Message is the short plain sentence the agent gets with a 403: the
// destination and the reason, no addresses or internal detail.
func (d Decision) Message() string {
	var why string
	switch d.Reason {
	case ReasonAllowlisted:
		return "allowed " + d.Target
	case ReasonNoEgress:
		why = "this execution has no egress (empty allowlist)"
	case ReasonNotAllowlisted:
		why = "not on this execution's allowlist"
	case ReasonInvalidHost:
		why = "not a valid host"
	case ReasonNumericHost:
		why = "numeric host forms are refused; use a name or a dotted-quad IPv4 literal"
	case ReasonInvalidPort:
		why = "not a valid port"
	case ReasonRefusedName:
		why = "this name is never reachable through the proxy"
	case ReasonRefusedAddress:
		why = "resolves to an address the proxy never connects to"
	case ReasonResolveFailed:
		why = "could not be resolved"
	case ReasonBadRequest:
		why = "not a request this proxy forwards; send CONNECT host:port, or an absolute http:// URL"
	default:
		why = "refused"
	}
	return fmt.Sprintf("egress denied (%s): %s: %s", d.Reason, d.Target, why)
}

// Resolver looks names up. *net.Resolver satisfies it. It is given rooted
// names ("example.com."), so no search domain is ever appended.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Defaults for the Checker's timeouts.
const (
	DefaultResolveTimeout = 5 * time.Second
	DefaultDialTimeout    = 10 * time.Second
	// maxAddrs bounds how many resolved addresses are classified and
	// kept; a longer answer is refused rather than truncated, since the
	// dropped part could hold the refused address.
	maxAddrs = 64
)

// Checker decides on destinations and dials the ones it allowed. Resolution
// happens only here, on the host, and every dial goes through a Control hook
// that re-classifies the exact address, so nothing reaches a refused address
// by any path. The zero Checker allows nothing.
type Checker struct {
	list           allowlist
	cls            classifier
	resolver       Resolver
	resolveTimeout time.Duration
	dialTimeout    time.Duration
}

// Option configures a Checker.
type Option func(*Checker) error

// WithResolver replaces the host's pure-Go resolver (tests, or a caller
// with its own cache).
func WithResolver(r Resolver) Option {
	return func(c *Checker) error {
		if r == nil {
			return errors.New("nil resolver")
		}
		c.resolver = r
		return nil
	}
}

// WithInterfaceAddrs replaces net.InterfaceAddrs as the source of the host's
// own addresses.
func WithInterfaceAddrs(f func() ([]netip.Addr, error)) Option {
	return func(c *Checker) error {
		if f == nil {
			return errors.New("nil interface address source")
		}
		c.cls.interfaceAddrs = f
		return nil
	}
}

// WithResolveTimeout bounds one name resolution.
func WithResolveTimeout(d time.Duration) Option {
	return func(c *Checker) error {
		if d <= 0 {
			return errors.New("resolve timeout must be positive")
		}
		c.resolveTimeout = d
		return nil
	}
}

// WithDialTimeout bounds connecting to an allowed destination.
func WithDialTimeout(d time.Duration) Option {
	return func(c *Checker) error {
		if d <= 0 {
			return errors.New("dial timeout must be positive")
		}
		c.dialTimeout = d
		return nil
	}
}

// NewChecker validates cfg (every error names its field) and returns a
// Checker using the pure-Go resolver and the host's interface addresses,
// read now and refreshed as they age. It fails when the host's addresses
// cannot be listed: without them the host itself would be reachable.
func NewChecker(cfg Config, opts ...Option) (*Checker, error) {
	list, err := cfg.compile()
	if err != nil {
		return nil, err
	}
	c := &Checker{
		list:           list,
		resolver:       &net.Resolver{PreferGo: true},
		resolveTimeout: DefaultResolveTimeout,
		dialTimeout:    DefaultDialTimeout,
	}
	c.cls.denied = slices.Clone(cfg.DeniedCIDRs)
	c.cls.allowedPrivate = slices.Clone(cfg.AllowedPrivateCIDRs)
	for _, o := range opts {
		if err := o(c); err != nil {
			return nil, err
		}
	}
	if err := c.cls.refresh(); err != nil {
		return nil, fmt.Errorf("listing the host's interface addresses: %w", err)
	}
	return c, nil
}

// Classify reports the category of a refused address, or ok when the
// address may be dialed. It is the test both Check and the dialer apply.
func (c *Checker) Classify(a netip.Addr) (Category, bool) { return c.cls.classify(a) }

// refusedName reports names refused before any lookup: loopback names
// (RFC 6761) and the instance-metadata names, which only resolve inside
// the cloud they would leak.
func refusedName(name string) bool {
	switch name {
	case "localhost", "metadata", "metadata.google.internal", "metadata.goog":
		return true
	}
	return strings.HasSuffix(name, ".localhost")
}

// quoteRaw is a printable, bounded form of a host or authority that failed
// canonicalisation, for the report and logs: the agent chose those bytes.
func quoteRaw(raw string) string {
	const max = 255
	if len(raw) > max {
		raw = raw[:max]
	}
	return strconv.QuoteToASCII(raw)
}

func quoteTarget(raw string, port uint16) string {
	return quoteRaw(raw) + ":" + strconv.FormatUint(uint64(port), 10)
}

// CheckAuthority decides on a request authority "host:port" (as in CONNECT).
func (c *Checker) CheckAuthority(ctx context.Context, authority string) Decision {
	host, ps, err := net.SplitHostPort(authority)
	if err != nil {
		return Decision{Reason: ReasonInvalidHost, Target: quoteRaw(authority), Detail: "not host:port"}
	}
	port, ok := parsePort(ps)
	if !ok {
		return Decision{Reason: ReasonInvalidPort, Target: quoteRaw(authority), Detail: "invalid port"}
	}
	// net.SplitHostPort accepts "[name]:port"; only IPv6 belongs in brackets.
	if strings.HasPrefix(authority, "[") && !strings.Contains(host, ":") {
		return Decision{Reason: ReasonInvalidHost, Target: quoteTarget(host, port), Port: port, Detail: "brackets around a non-IPv6 host"}
	}
	return c.Check(ctx, host, port)
}

// Check decides on host (a name or an IP literal, IPv6 without brackets)
// and port: canonicalise, refuse by name, match the allowlist, resolve, and
// refuse if ANY address is in a refused class. A mixed answer is a refusal,
// not a choice: picking the good address would still let an attacker's
// resolver decide when to rebind.
func (c *Checker) Check(ctx context.Context, host string, port uint16) Decision {
	if port == 0 {
		return Decision{Reason: ReasonInvalidPort, Target: quoteTarget(host, 0), Detail: "port 0"}
	}
	h, err := CanonicalHost(host)
	if err != nil {
		d := Decision{Reason: ReasonInvalidHost, Target: quoteTarget(host, port), Port: port, Detail: err.Error()}
		var he *hostError
		if errors.As(err, &he) {
			d.Reason = he.reason
		}
		return d
	}
	return c.check(ctx, h, port)
}

func (c *Checker) check(ctx context.Context, h Host, port uint16) Decision {
	d := Decision{Target: hostPort(h.String(), port), Host: h, Port: port}
	if !h.IsAddr() && refusedName(h.Name) {
		d.Reason = ReasonRefusedName
		return d
	}
	if len(c.list.entries) == 0 {
		d.Reason = ReasonNoEgress
		return d
	}
	e, ok := c.list.match(h, port)
	if !ok {
		d.Reason = ReasonNotAllowlisted
		return d
	}
	d.Entry = e.raw
	addrs := []netip.Addr{h.Addr}
	if !h.IsAddr() {
		var err error
		if addrs, err = c.resolve(ctx, h.Name); err != nil {
			d.Reason, d.Detail = ReasonResolveFailed, err.Error()
			return d
		}
	}
	for _, a := range addrs {
		if cat, ok := c.cls.classify(a); !ok {
			d.Reason, d.Category = ReasonRefusedAddress, cat
			d.Detail = fmt.Sprintf("%s is %s", a, cat)
			return d
		}
	}
	d.Allowed, d.Reason, d.Addrs = true, ReasonAllowlisted, addrs
	return d
}

// resolve looks name up as a rooted name and returns its distinct
// addresses, unmapped.
func (c *Checker) resolve(ctx context.Context, name string) ([]netip.Addr, error) {
	if c.resolver == nil {
		return nil, errors.New("no resolver")
	}
	timeout := c.resolveTimeout
	if timeout <= 0 {
		timeout = DefaultResolveTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	got, err := c.resolver.LookupNetIP(ctx, "ip", name+".")
	if err != nil {
		return nil, err
	}
	if len(got) == 0 {
		return nil, errors.New("no addresses")
	}
	if len(got) > maxAddrs {
		return nil, fmt.Errorf("%d addresses, more than %d", len(got), maxAddrs)
	}
	out := make([]netip.Addr, 0, len(got))
	for _, a := range got {
		// A zone is kept so classify refuses it rather than dialing a
		// scoped address without it.
		if a.Zone() == "" {
			a = a.Unmap()
		}
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out, nil
}
