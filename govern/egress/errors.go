package egress

import "errors"

// Sentinel errors. Wrapped with %w, matched with errors.Is.
var (
	// ErrInvalidConfig: the allowlist configuration does not validate; the
	// message names the field.
	ErrInvalidConfig = errors.New("invalid egress config")
	// ErrRefusedAddress: the guarded dialer was asked for an address the
	// classifier refuses. It is the last line: no path dials such an address.
	ErrRefusedAddress = errors.New("refused address")
	// ErrNotAnAddress: the guarded dialer takes IP:port only, so that no name
	// is ever resolved outside Check.
	ErrNotAnAddress = errors.New("not an IP:port address")
	// ErrUnsupported: this platform cannot do what was asked (Unix sockets
	// with a safe mode on a non-Unix system).
	ErrUnsupported = errors.New("not supported on this platform")
)
