// Package secretscan is the forms a credential value takes in output and on
// a command line (raw, base64, URL and hex encodings, JSON and shell
// escapes) and the matcher that finds them: what redaction removes from a
// run's output and what the sandbox refuses on a child's command line. It
// is small and has no regular expressions, so the sandbox's supervisor
// can link it at no start-up cost.
package secretscan
