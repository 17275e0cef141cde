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
	helper  string
	init    string
	liveDir string
}

// WithLiveDir names the live register's directory (default: LiveDir of
// the caller's euid). Tests give each its own.
func WithLiveDir(dir string) Option { return func(o *options) { o.liveDir = dir } }

// WithHelper names mitrity-sandboxrun: the binary whose "probe-seccomp" the
// probe runs, and whose "init" subcommand runs inside the sandbox when
// there is no mitrity-sandboxinit (see WithInit). The default is the
// running executable: mitrity-sandboxrun itself.
func WithHelper(path string) Option { return func(o *options) { o.helper = path } }

// InitName is the sandbox's init binary, looked for beside the helper.
const InitName = "mitrity-sandboxinit"

// WithInit names the binary that runs as the sandbox's first process
// (mitrity-sandboxinit): a small program of its own, because a large Go
// binary takes milliseconds longer to start, on every run. Without it, Run
// uses InitName beside the helper when there is one, else the helper's
// "init" subcommand: the same code, started more slowly.
func WithInit(path string) Option { return func(o *options) { o.init = path } }

func collect(opts []Option) options {
	var o options
	for _, f := range opts {
		f(&o)
	}
	return o
}
