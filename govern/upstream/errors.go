package upstream

import "errors"

// ErrRequestRefused wraps the error of a call whose upstream asked the
// client for input inside its result (sampling, elicitation, roots under
// protocol 2026-07-28) and was refused: the upstream is up, the call got
// no answer the gateway passes on.
var ErrRequestRefused = errors.New("the upstream's request to the client was refused")
