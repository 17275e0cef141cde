// Package admission is the wire contract between an agent-framework hook
// and the gateway: JSON over HTTP on a Unix socket, versioned by path
// (/v1/...). It holds the message types, the client the hook uses, and the
// HTTP handler the gateway mounts over its own implementation (Backend).
//
// Two calls make a routed shell call: admit (the framework's call in, a
// decision and possibly a ticket out) and redeem (a ticket in, the
// execution's output streamed back as newline-delimited JSON frames, the
// result last). docs/admission.md documents every message.
package admission
