// Package dlp redacts what a command printed before anything reaches the
// agent: every injected credential value in each of the forms it can be
// printed in (credentials.go), and secrets of known formats found by
// detectors, hand-written ones and gitleaks' default rule set, generated
// into gitleaks_rules.go (detectors.go, gitleaks.go, engine.go); both
// stream, holding back only what a later byte could still change.
package dlp
