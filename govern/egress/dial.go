package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// minAttemptTimeout is the least time one address of a decision gets when
// the dial timeout is shared between several.
const minAttemptTimeout = 2 * time.Second

// control is the net.Dialer Control hook: the kernel is about to connect to
// address, and this is the last chance to say no. It re-classifies the exact
// address, so even a dial that never went through Check (a bug, a future
// caller, a name the dialer resolved itself) cannot reach a refused one.
func (c *Checker) control(_ context.Context, network, address string, _ syscall.RawConn) error {
	switch network {
	case "tcp4", "tcp6":
	default:
		return fmt.Errorf("%w: network %q", ErrRefusedAddress, network)
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %q", ErrNotAnAddress, address)
	}
	if cat, ok := c.cls.classify(ap.Addr()); !ok {
		return fmt.Errorf("%w: %s is %s", ErrRefusedAddress, ap.Addr(), cat)
	}
	return nil
}

// Dialer returns a net.Dialer whose Control hook refuses every address the
// classifier refuses. It is exported so tests (and any future caller) can
// prove the hook holds on its own.
func (c *Checker) Dialer() *net.Dialer {
	return &net.Dialer{
		Timeout:        c.timeout(),
		KeepAlive:      30 * time.Second,
		ControlContext: c.control,
	}
}

func (c *Checker) timeout() time.Duration {
	if c.dialTimeout > 0 {
		return c.dialTimeout
	}
	return DefaultDialTimeout
}

// DialContext dials a TCP IP:port through the guarded dialer. It refuses a
// name outright: resolution belongs to Check alone.
func (c *Checker) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, fmt.Errorf("%w: network %q", ErrRefusedAddress, network)
	}
	if _, err := netip.ParseAddrPort(address); err != nil {
		return nil, fmt.Errorf("%w: %q", ErrNotAnAddress, address)
	}
	return c.Dialer().DialContext(ctx, network, address)
}

// Dial connects to an allowed decision: its addresses in order, the first
// that answers wins, each attempt through the guarded dialer. Nothing else
// is dialed; a name is not looked up again.
func (c *Checker) Dial(ctx context.Context, d Decision) (net.Conn, error) {
	if !d.Allowed || len(d.Addrs) == 0 {
		return nil, fmt.Errorf("%w: %s was not allowed", ErrRefusedAddress, d.Target)
	}
	per := c.timeout() / time.Duration(len(d.Addrs))
	per = max(per, minAttemptTimeout)
	dialer := c.Dialer()
	dialer.Timeout = per
	var errs []error
	for _, a := range d.Addrs {
		conn, err := dialer.DialContext(ctx, "tcp", netip.AddrPortFrom(a, d.Port).String())
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}
