package govern

// Reason is a machine-readable cause attached to every denial, hold and
// non-completed execution. The set is closed: only the constants below exist,
// and each String matches the words of the product spec.
type Reason string

// Hard denials of the governed shell that no policy knob relaxes.
const (
	ReasonSandboxUnavailable        Reason = "sandbox_unavailable"
	ReasonModifiedOutsideGovernance Reason = "modified_outside_governance"
	ReasonCredentialInArgv          Reason = "credential_in_argv"
	ReasonCwdOutsideWorkspace       Reason = "cwd_outside_workspace"
	ReasonCommandAnalysisOff        Reason = "command_analysis_off"
)

// Denials raised by the command analyzer before any policy is consulted.
const (
	// ReasonInvalidInput: the text is too long or holds a byte the parser and
	// the shell could disagree on (NUL, CR, other C0 controls).
	ReasonInvalidInput Reason = "invalid_input"
	// ReasonParseError: the text is not valid in the dialect that would run it.
	ReasonParseError Reason = "parse_error"
)

// Reasons for an execution status other than completed.
const (
	ReasonPinMismatch      Reason = "pin_mismatch"
	ReasonConcurrencyLimit Reason = "concurrency_limit"
	ReasonSpawnError       Reason = "spawn_error"
)

func (r Reason) String() string { return string(r) }

// CredentialDir is where, inside the sandbox, credential files are
// materialised for one execution; $MITRITY_CRED_DIR holds this path.
const CredentialDir = "/run/mitrity/credentials"
