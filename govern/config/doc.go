// Package config loads and validates mitrity-gateway.yaml, the host's
// configuration: whether the governed shell runs, with which shell, sandbox,
// credentials, egress ports and limits, and where the policy and audit log are.
package config
