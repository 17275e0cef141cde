package servecmd

import (
	"os"
	"runtime/debug"
)

// serveGCPercent is the garbage collector's target for a serving process
// whose operator has not set GOGC. The gateway's live heap is small
// (detectors, policy, automata: about 10 MiB), and every forwarded message
// allocates the SDK's decoding buffers (32 KiB each), so at Go's default
// (100) the collector ran every few hundred calls and took a quarter of
// the process's CPU. At 400 the CPU per forwarded call fell from 0.80 to
// 0.57 ms for 11 MiB more resident memory (32 to 43 MiB;
// docs/upstreams.md).
const serveGCPercent = 400

// tuneGC sets serveGCPercent unless GOGC says otherwise.
func tuneGC() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(serveGCPercent)
	}
}
