package sandbox

import "os"

// Stdio is the command's standard streams, passed to it as they are (no
// copy in between). A nil field is /dev/null.
type Stdio struct {
	Stdin, Stdout, Stderr *os.File
}

// Option configures Run and Probe.
type Option func(*options)

type options struct {
	helper string
}

// WithHelper names the binary whose "init" subcommand runs inside the
// sandbox (and whose "probe-seccomp" the probe runs). The
// default is the running executable: mitrity-sandboxrun itself.
func WithHelper(path string) Option { return func(o *options) { o.helper = path } }

func collect(opts []Option) options {
	var o options
	for _, f := range opts {
		f(&o)
	}
	return o
}
