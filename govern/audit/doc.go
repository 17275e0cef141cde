// Package audit is the governed shell's record of every call: a CloudEvents
// JSON envelope per call, appended durably to a JSON Lines file, plus the
// canonical govern.decision log line and the execution card rendered for a
// person. Its types hold hashes, sizes, names and paths only, so output
// bytes, script bodies and credential values have nowhere to go.
package audit
