// Package egress is the governed shell's only way out: a host:port allowlist
// that canonicalises names, resolves them on the host, refuses every address
// class an attacker could use to reach the host or its network, dials exactly
// the address that passed, and serves all of it as an HTTP forward proxy
// (CONNECT and absolute-form plain HTTP) with a report of what it allowed and
// refused. It never inspects bodies and never terminates TLS.
package egress
