// Package notify tells an operator when a governed execution was less than
// it should have been: a sandbox degraded or unavailable, or a credential
// value redacted from a command's output. It rate-limits each kind as the
// spec says and delivers to a log sink and, optionally, a Slack-compatible
// webhook that can never hold a command up for longer than its timeout.
package notify
