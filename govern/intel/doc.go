// Package intel checks commands against a local threat-intelligence feed
// (hosts, SHA-256 of scripts, command patterns) that operators maintain as
// a YAML file, reloaded while the gateway runs so a new indicator applies
// to the next call without a restart.
package intel
