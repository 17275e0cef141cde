//go:build race

package shell

// raceEnabled: the race detector changes what the runtime allocates.
const raceEnabled = true
