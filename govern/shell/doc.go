// Package shell is the command analyzer: it parses shell text in the dialect
// that will execute it, resolves every simple command it can statically, reads
// and pins the scripts the text names, and reports what it could not resolve.
// It never executes anything.
package shell
