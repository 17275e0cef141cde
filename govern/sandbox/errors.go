package sandbox

import "errors"

// ErrUnsupported is returned on platforms without a sandbox backend in this
// package (everything but Linux).
var ErrUnsupported = errors.New("sandbox: no kernel sandbox backend on this platform")

// ErrInvalidSpec wraps every validation failure of a Spec.
var ErrInvalidSpec = errors.New("sandbox: invalid spec")
