// Package rules evaluates operator-written CEL policy rules over a call and
// its command analysis: every rule is compiled and type-checked on load, every
// rule is evaluated on every call, the strictest outcome wins, and a rule that
// cannot be evaluated denies.
package rules
