package sandbox

import (
	"fmt"

	"github.com/mitrity/mitrity/govern"
)

// Mechanism names what held a limit. The empty mechanism goes with a limit
// that was not enforced.
type Mechanism string

const (
	MechanismNone   Mechanism = ""
	MechanismCgroup Mechanism = "cgroup" // a per-execution cgroup (v2 delegated, or v1 as root)
	MechanismRlimit Mechanism = "rlimit" // setrlimit on the command: per process
	MechanismPidns  Mechanism = "pidns"  // the pid namespace dies with the command
	MechanismTmpfs  Mechanism = "tmpfs"  // a sized tmpfs mount
)

// Limit says whether one bound held on this run and how.
type Limit struct {
	Enforced  bool      `json:"enforced"`
	Mechanism Mechanism `json:"mechanism"`
}

func enforced(m Mechanism) Limit { return Limit{Enforced: true, Mechanism: m} }

// LimitsEnforced is the audit card's "limits enforced": which resource
// bounds actually held. A false is a documented platform gap, never a
// silent one.
type LimitsEnforced struct {
	ProcessCount Limit `json:"process_count"`
	Memory       Limit `json:"memory"`
	TmpfsSize    Limit `json:"tmpfs_size"`
	FileSize     Limit `json:"file_size"`
	// DaemonKill: no process the command started outlives it.
	DaemonKill Limit `json:"daemon_kill"`
}

// Result is what one run did: what sandboxrun writes on the result pipe.
type Result struct {
	Status govern.Status `json:"status"`
	// Reason explains a status other than completed: pin_mismatch,
	// spawn_error, sandbox_unavailable, cwd_outside_workspace.
	Reason govern.Reason `json:"reason,omitempty"`
	// ExitCode is the command's exit code; nil unless completed. A command
	// killed by a signal it did not receive from the sandbox shows as the
	// shell reports it: 128 + the signal number.
	ExitCode *int `json:"exit_code"`
	// Signal names the signal the sandbox sent to end the run (SIGTERM or
	// SIGKILL on timeout or cancel, SIGKILL by the memory cgroup).
	Signal      string             `json:"signal,omitempty"`
	DurationMS  int64              `json:"duration_ms"`
	SandboxMode govern.SandboxMode `json:"sandbox_mode,omitempty"`
	// PinMethod is "bind" when judged scripts were bound over their paths.
	PinMethod      string         `json:"pin_method,omitempty"`
	LimitsEnforced LimitsEnforced `json:"limits_enforced"`
	// ProtectedCreated lists protected paths (git metadata, rc files,
	// agent and editor project settings) the run created where none was.
	// A name git or an editor would read kills the run the moment it
	// appears and is moved aside (Message says where); a new repository
	// (.git) where there was none is only reported.
	ProtectedCreated []string `json:"protected_created,omitempty"`
	// ProtectedModified lists protected paths whose content differs from
	// before the run: they are bound read-only, so a change means the
	// protection was bypassed.
	ProtectedModified []string `json:"protected_modified,omitempty"`
	// MaskReplaced says which masked paths the host replaced, renamed or
	// removed while the run went on (the run was killed at once, before it
	// could read what took their place): each as a message may name it, a
	// credential store with its path, one of the gateway's own files
	// without (an agent never sees their host paths).
	MaskReplaced []string `json:"mask_replaced,omitempty"`
	// ArgvRefused are the program starts the exec guard refused because
	// an argument carried an injected credential.
	ArgvRefused []ArgvRefusal `json:"argv_refused,omitempty"`
	// CredentialWritten are the files in the workspace the run changed
	// that hold a credential it was given (found after the run).
	CredentialWritten []WrittenCredential `json:"credential_written,omitempty"`
	Message           string              `json:"message,omitempty"`
}

// WrittenCredential is a file a run left holding a credential it was
// given, and which.
type WrittenCredential struct {
	Path       string `json:"path"`
	Credential string `json:"credential"`
}

// ArgvRefusal is one execve the exec guard refused: the program and the
// position of the argument that carried a credential, and which
// credential (never the value).
type ArgvRefusal struct {
	Program    string `json:"program"`
	Argument   int    `json:"argument"`
	Credential string `json:"credential"`
}

func notStarted(status govern.Status, reason govern.Reason, format string, args ...any) Result {
	return Result{Status: status, Reason: reason, Message: fmt.Sprintf(format, args...)}
}
