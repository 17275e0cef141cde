// Package metrics counts what the audit trail records — decisions,
// executions, redactions, refused egress, failed audit writes — as
// Prometheus metrics on a private registry, with label values drawn only
// from closed vocabularies so the number of series stays bounded.
package metrics
