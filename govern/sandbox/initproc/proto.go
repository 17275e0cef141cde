package initproc

import "errors"

// Descriptors init inherits from the sandbox's supervisor (through
// bubblewrap, which passes on what it does not consume).
const (
	FDConfig        = 3 // Config as JSON; read to EOF, then closed
	FDStatus        = 4 // Status lines to the supervisor; close-on-exec
	FDCommandStderr = 5 // the command's stderr; bubblewrap's own goes to the supervisor
	FDBridge        = 6 // with a proxy: a socketpair end to hand the listener out
)

// Config is what the supervisor tells init.
type Config struct {
	Argv    []string `json:"argv"`
	Env     []string `json:"env"`
	Rlimits []Rlimit `json:"rlimits"`
	// Bridge: listen on the sandbox's loopback and hand the listener out
	// on FDBridge; the supervisor forwards its connections to the egress
	// proxy.
	Bridge bool `json:"bridge"`
	// Join are the cgroups (v1) init enters before it becomes the command.
	Join []Join `json:"join,omitempty"`
	// Roots are the workspace roots: the working directory bubblewrap
	// changed into must be inside one, checked on the directory itself
	// (the supervisor checked a path, which a symlink swapped since could
	// lead elsewhere).
	Roots []string `json:"roots,omitempty"`
	// GuardFD, when not 0, is a socketpair end: init installs the exec
	// guard (seccomp user notification of execve and execveat) and hands
	// its listener out there, for the supervisor to check every command
	// line of the run against the credentials injected into it.
	GuardFD int `json:"guard_fd,omitempty"`
	// Lifeline is the read end of a pipe whose only writer left is
	// bubblewrap's outer process (its --json-status-fd), and
	// LifelineWriter init's own inherited copy of the write end, which it
	// closes at once. Right before the exec, a lifeline with no writer
	// means that process is gone: nothing would kill the sandbox any more,
	// and the command is not started. Required.
	Lifeline       int `json:"lifeline,omitempty"`
	LifelineWriter int `json:"lifeline_writer,omitempty"`
}

// Join is one cgroup v1 controller's per-execution cgroup.
type Join struct {
	// FD is the cgroup's "tasks" file, opened for writing by the
	// supervisor: the kernel checks the opener's credentials, not init's.
	FD         int    `json:"fd"`
	Controller string `json:"controller"`
	// Fallback is the rlimit init sets instead when it cannot join.
	Fallback *Rlimit `json:"fallback,omitempty"`
}

// Rlimit is one resource bound init sets on itself before it becomes the
// command (soft and hard alike).
type Rlimit struct {
	Resource int    `json:"resource"`
	Value    uint64 `json:"value"`
}

// Status is one line init writes to the supervisor. Exec is the last line
// before execve; an Error line after it means execve failed.
type Status struct {
	// Seccomp is the Seccomp field of init's /proc/self/status: "2" when
	// bubblewrap installed the filter (on every process of the sandbox).
	Seccomp string `json:"seccomp,omitempty"`
	Exec    bool   `json:"exec,omitempty"`
	Error   string `json:"error,omitempty"`
	// NotJoined names each controller of Config.Join init could not
	// enter, with the error (the exec line carries it).
	NotJoined map[string]string `json:"not_joined,omitempty"`
	// CwdOutside is set, with Error, when the working directory is outside
	// every root: nothing ran.
	CwdOutside bool `json:"cwd_outside,omitempty"`
}

// ErrUnsupported is Main's answer where there is no sandbox (not Linux).
var ErrUnsupported = errors.New("initproc: no sandbox on this platform")
