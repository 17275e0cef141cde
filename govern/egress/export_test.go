package egress

import (
	"net/netip"
	"time"
)

// WithTestAllowedPrefixes lets addresses through the classifier before any
// rule, so a loopback listener can play the internet. It exists only in this
// package's tests: no build of the proxy can set it.
func WithTestAllowedPrefixes(ps ...netip.Prefix) Option {
	return func(c *Checker) error {
		c.cls.testAllowed = ps
		return nil
	}
}

// WithClock replaces time.Now for the interface-refresh test.
func WithClock(now func() time.Time) Option {
	return func(c *Checker) error {
		c.cls.now = now
		return nil
	}
}
