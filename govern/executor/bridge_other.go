//go:build !linux

package executor

import "errors"

// errNoHostBridge: the sandbox's bridge, which mode none reuses, is built
// on Linux only. A plan with an allowlist fails to start rather than run
// without its proxy.
var errNoHostBridge = errors.New("the egress bridge of mode none is only built on Linux")

func serveHostBridge(string) (int, func(), error) { return 0, nil, errNoHostBridge }

func proxyEnv(env []string, _ int) []string { return env }
