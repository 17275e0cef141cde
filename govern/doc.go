// Package govern holds the vocabulary shared by every stage of the governed
// shell: decisions, reason codes, sandbox modes and execution statuses. It
// imports only the standard library so that every other package can depend on
// it without pulling anything else in.
package govern
