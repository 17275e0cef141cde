// Package secretscan is the forms a credential value takes in output and on
// a command line, and the matcher that finds them: what redaction removes
// from a run's output and what the sandbox refuses on a child's command
// line. It reads text in a normalised view (letters and digits, case
// folded, everything else a separator) where raw, reversed, rot13, hex (in
// every dump layout), base64, base32, decimal, octal, binary and escaped
// forms are matched whole or in long enough pieces; reads the text around
// percent and HTML escapes once more, decoded, so any choice of escaped
// bytes reads as the value; matches the decoded bytes of a value that is
// itself base64 or hex; and decodes base64 runs that hold compressed or
// UTF-16 text. It streams (Feed), has no regular
// expressions and builds nothing at init beyond a few 256-entry tables, so
// the sandbox's supervisor links it at no start-up cost. See docs/dlp.md,
// "Credential forms".
package secretscan
