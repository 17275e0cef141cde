// Package inject is a heuristic prompt-injection scanner for what an agent
// sends to the shell (arguments and stdin): text that tries to address the
// model that will read the output, rather than the program that will run.
// It normalises away Unicode and encoding tricks first, then looks for role
// markers, instruction overrides and exfiltration requests, tuned so that
// ordinary developer commands do not hit.
package inject
