package egress

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"strings"
)

// Config is what the proxy for one execution is given: the agent's
// destination allowlist and the host's exec.egress settings.
type Config struct {
	// Allow is the destination allowlist. Empty means no egress at all: a
	// shell with unrestricted egress is what this exists to prevent, so a
	// tenant that wants everything writes "*".
	Allow []string
	// AllowedPorts are the ports an entry without :port matches. nil means
	// DefaultAllowedPorts; an empty non-nil slice means none.
	AllowedPorts []uint16
	// DeniedCIDRs are refused even when an allowed name resolves into them.
	DeniedCIDRs []netip.Prefix
	// AllowedPrivateCIDRs open parts of the private and unique-local ranges
	// (internal hosts are a real need); nothing else can be opened.
	AllowedPrivateCIDRs []netip.Prefix
}

// DefaultAllowedPorts are the ports an entry without :port matches unless
// the operator says otherwise: HTTPS and HTTP.
func DefaultAllowedPorts() []uint16 { return []uint16{443, 80} }

// wireConfig is the JSON the proxy reads on stdin. Pointers tell an absent
// field (default) from an empty one.
type wireConfig struct {
	Allow               *[]string `json:"allow"`
	AllowedPorts        *[]int    `json:"allowed_ports,omitempty"`
	DeniedCIDRs         *[]string `json:"denied_cidrs,omitempty"`
	AllowedPrivateCIDRs *[]string `json:"allowed_private_cidrs,omitempty"`
}

// maxConfigBytes bounds the configuration read from the gateway.
const maxConfigBytes = 4 << 20

// DecodeConfig reads one JSON configuration object
// ({"allow": [...], "allowed_ports": [...], "denied_cidrs": [...],
// "allowed_private_cidrs": [...]}) from r. Unknown fields are errors, and
// every error names its field. It reads exactly one value; what follows in
// r is left for the caller (the proxy keeps reading stdin to learn when to
// stop). The result is then checked by NewChecker.
func DecodeConfig(r io.Reader) (Config, *json.Decoder, error) {
	dec := json.NewDecoder(io.LimitReader(r, maxConfigBytes))
	dec.DisallowUnknownFields()
	var w wireConfig
	if err := dec.Decode(&w); err != nil {
		return Config{}, dec, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	var cfg Config
	var errs []string
	if w.Allow != nil {
		cfg.Allow = append([]string{}, *w.Allow...)
	}
	if w.AllowedPorts != nil {
		cfg.AllowedPorts = []uint16{}
		for i, p := range *w.AllowedPorts {
			if p < 1 || p > 65535 {
				errs = append(errs, fmt.Sprintf("allowed_ports[%d]: %d is not a port (1-65535)", i, p))
				continue
			}
			cfg.AllowedPorts = append(cfg.AllowedPorts, uint16(p))
		}
	}
	cfg.DeniedCIDRs = parsePrefixes("denied_cidrs", w.DeniedCIDRs, &errs)
	cfg.AllowedPrivateCIDRs = parsePrefixes("allowed_private_cidrs", w.AllowedPrivateCIDRs, &errs)
	if len(errs) > 0 {
		return Config{}, dec, fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(errs, "; "))
	}
	return cfg, dec, nil
}

// ParseConfig decodes a whole JSON document holding one configuration.
func ParseConfig(b []byte) (Config, error) {
	cfg, dec, err := DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return Config{}, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Config{}, fmt.Errorf("%w: trailing data after the configuration object", ErrInvalidConfig)
	}
	return cfg, nil
}

// parsePrefixes parses CIDRs ("10.0.0.0/8"); a bare address is its /32 or
// /128. IPv4-mapped prefixes are refused: write the IPv4 form.
func parsePrefixes(field string, in *[]string, errs *[]string) []netip.Prefix {
	if in == nil {
		return nil
	}
	out := []netip.Prefix{}
	for i, s := range *in {
		p, err := parsePrefix(s)
		if err != nil {
			*errs = append(*errs, fmt.Sprintf("%s[%d]: %v", field, i, err))
			continue
		}
		out = append(out, p)
	}
	return out
}

func parsePrefix(s string) (netip.Prefix, error) {
	var p netip.Prefix
	if strings.Contains(s, "/") {
		var err error
		if p, err = netip.ParsePrefix(s); err != nil {
			return p, fmt.Errorf("%q is not a CIDR", s)
		}
	} else {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			return p, fmt.Errorf("%q is not a CIDR", s)
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	if p.Addr().Is4In6() {
		return p, fmt.Errorf("%q: write IPv4 ranges in IPv4 form", s)
	}
	return p.Masked(), nil
}

// Validate checks cfg as NewChecker and the proxy would, without touching
// the host: every error names its field.
func (cfg Config) Validate() error {
	_, err := cfg.compile()
	return err
}

// MarshalJSON writes cfg in the form DecodeConfig reads, so the gateway can
// hand it to mitrity-egressproxy on a pipe. nil AllowedPorts is left out
// (the default); an empty one is written as [] (no port).
func (cfg Config) MarshalJSON() ([]byte, error) {
	allow := append([]string{}, cfg.Allow...)
	w := wireConfig{Allow: &allow}
	if cfg.AllowedPorts != nil {
		ports := make([]int, len(cfg.AllowedPorts))
		for i, p := range cfg.AllowedPorts {
			ports[i] = int(p)
		}
		w.AllowedPorts = &ports
	}
	w.DeniedCIDRs = prefixStrings(cfg.DeniedCIDRs)
	w.AllowedPrivateCIDRs = prefixStrings(cfg.AllowedPrivateCIDRs)
	return json.Marshal(w)
}

func prefixStrings(ps []netip.Prefix) *[]string {
	if ps == nil {
		return nil
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return &out
}

// compile checks cfg before anything is built and parses the allowlist.
// Every problem is reported, each naming its field.
func (cfg Config) compile() (allowlist, error) {
	var errs []string
	l := allowlist{ports: cfg.AllowedPorts}
	if l.ports == nil {
		l.ports = DefaultAllowedPorts()
	}
	for i, p := range l.ports {
		if p == 0 {
			errs = append(errs, fmt.Sprintf("allowed_ports[%d]: 0 is not a port", i))
		}
	}
	for i, raw := range cfg.Allow {
		e, err := parseEntry(raw)
		if err != nil {
			errs = append(errs, fmt.Sprintf("allow[%d]: %v", i, err))
			continue
		}
		l.entries = append(l.entries, e)
	}
	for i, p := range cfg.DeniedCIDRs {
		if !p.IsValid() || p.Addr().Is4In6() {
			errs = append(errs, fmt.Sprintf("denied_cidrs[%d]: %v is not a CIDR in IPv4 or IPv6 form", i, p))
		}
	}
	private := privatePrefixes()
	for i, p := range cfg.AllowedPrivateCIDRs {
		if !p.IsValid() || !within(p, private) {
			errs = append(errs, fmt.Sprintf("allowed_private_cidrs[%d]: %v is not inside 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16 or fc00::/7", i, p))
		}
	}
	if len(errs) > 0 {
		return allowlist{}, fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(errs, "; "))
	}
	return l, nil
}

// within reports whether p lies entirely inside one of outer.
func within(p netip.Prefix, outer []netip.Prefix) bool {
	for _, o := range outer {
		if o.Bits() <= p.Bits() && o.Contains(p.Addr()) {
			return true
		}
	}
	return false
}
