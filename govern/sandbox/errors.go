package sandbox

import "errors"

// ErrUnsupported is returned on platforms without a sandbox backend in this
// package (everything but Linux).
var ErrUnsupported = errors.New("sandbox: no kernel sandbox backend on this platform")

// ErrInvalidSpec wraps every validation failure of a Spec.
var ErrInvalidSpec = errors.New("sandbox: invalid spec")

// ErrSandboxPeer refuses a socket peer inside a sandbox of this user.
var ErrSandboxPeer = errors.New("forbidden: the connection comes from inside a sandbox")

// ErrNotHost refuses a socket peer outside this process's pid and user
// namespaces.
var ErrNotHost = errors.New("forbidden: the connection comes from another pid or user namespace than the gateway's")
