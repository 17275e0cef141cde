//go:build race

package inject

// The race detector slows the scanner about tenfold; the bounded-time test
// scans less under it.
const raceEnabled = true
