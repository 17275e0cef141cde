package sandbox

import "github.com/mitrity/mitrity/govern/sandbox/initproc"

// Init is the sandbox's first process when the helper binary itself serves
// as init (its "init" subcommand): see initproc.Main. The separate
// mitrity-sandboxinit binary does the same and starts faster.
func Init() error { return initproc.Main() }
