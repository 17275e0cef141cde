// Package inject is a heuristic prompt-injection scanner for what an agent
// sends to the shell (arguments, env values, stdin): it normalises away
// Unicode and encoding tricks, then looks for role markers, instruction
// overrides and exfiltration requests, tuned so that ordinary developer
// commands do not hit.
package inject
