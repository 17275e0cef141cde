package shell

import (
	"fmt"

	"github.com/mitrity/mitrity/govern"
)

// Dialect is the grammar the text is parsed in; it must be the shell that
// will run it.
type Dialect string

const (
	DialectBash Dialect = "bash"
	DialectSh   Dialect = "sh"
)

// MaxCommandBytes is the largest command text accepted (64 KiB).
const MaxCommandBytes = 64 << 10

// Input is one request to analyse a command text.
type Input struct {
	Text    string
	Dialect Dialect
	// Cwd is the absolute directory the command will run in; relative script
	// paths resolve against it.
	Cwd string
	// Path is the PATH the command will run with (lookup of bare names).
	Path []string
	// Home is $HOME at run time; empty leaves ~ and $HOME dynamic.
	Home string
	// InspectionRoots are the only directories scripts are read from.
	InspectionRoots []string
	// WritableRoots are the directories writable at run time; executables
	// inside them are flagged.
	WritableRoots []string
	// CredentialVars names the environment variables that carry a credential.
	// Every MITRITY_CRED_* variable is credential-bearing whether listed or not.
	CredentialVars []string
	// CredentialDir is the value $MITRITY_CRED_DIR will hold at run time
	// (govern.CredentialDir in the sandbox); empty leaves it dynamic.
	CredentialDir string
	// Stdin is the call's standard input; when a shell reads code from it
	// (bash -s, bash /dev/stdin, source /dev/fd/0), it is parsed like a
	// script. nil means the command gets none.
	Stdin []byte
	// Env holds the variables the call sets in the command's environment,
	// over the executor's own (PATH, HOME, LANG, TERM, PWD). Every other
	// variable the directory model reads (CDPATH, OLDPWD, POSIXLY_CORRECT)
	// is unset at the start. A value that is exactly one ${credential:<id>}
	// is a credential the executor injects.
	Env map[string]string
	// CredentialsInjected says the executor injects at least one credential
	// the text does not name: an operator mapping (exec.credentials.env or
	// .files) the agent holds the grant for. A ${credential:<id>} in Text or
	// Env counts without it. A run that carries a credential has what the
	// analyzer cannot see through (dynamic code, unread scripts, code read
	// from a pipe) denied as credential_in_argv, unless
	// AllowOpaqueWithCredentials.
	CredentialsInjected bool
	// AllowOpaqueWithCredentials relaxes that denial to a flag
	// (opaque_with_credentials): the profile's opaque_with_credentials:
	// allow. The zero value is the strict one.
	AllowOpaqueWithCredentials bool
	// MaxScriptDepth caps recursive script inspection (default 8).
	MaxScriptDepth int
	// MaxScriptBytes caps the size of one inspected script (default 1 MiB).
	MaxScriptBytes int64
}

// Pos is a position in the judged text or in an inspected script.
type Pos struct {
	File string `json:"file,omitempty"` // empty for the command text itself
	Line uint   `json:"line"`
	Col  uint   `json:"col"`
}

func (p Pos) String() string {
	if p.File == "" {
		return fmt.Sprintf("%d:%d", p.Line, p.Col)
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Word is one resolved argument. A dynamic word's value could not be known
// without running something; Value then holds its source text.
type Word struct {
	Value   string `json:"value"`
	Dynamic bool   `json:"dynamic,omitempty"`
}

// Redirect is a file a command reads or writes through a redirection.
type Redirect struct {
	Op      string `json:"op"`
	Path    string `json:"path"`
	Dynamic bool   `json:"dynamic,omitempty"`
	Write   bool   `json:"write,omitempty"`
	Network bool   `json:"network,omitempty"` // /dev/tcp or /dev/udp
	Pos     Pos    `json:"pos"`
}

// Command is one simple command the text would run, after unwrapping
// wrappers such as sudo, env and timeout.
type Command struct {
	Pos  Pos    `json:"pos"`
	Argv []Word `json:"argv"`
	// Wrappers lists the wrapper commands peeled off, outermost first.
	Wrappers []string `json:"wrappers,omitempty"`
	// Context says where the command sits: "" at top level, or a chain such
	// as "cmdsubst", "bash -c", "eval", "trap", "script:/w/x.sh", "function:f",
	// "alias c" (what alias c expands to) or "trap, when it fires" (trap code
	// walked again where it can fire).
	Context string `json:"context,omitempty"`
	// Kind is builtin, function, external or unknown (dynamic name).
	Kind      string     `json:"kind"`
	Assigns   []string   `json:"assigns,omitempty"` // names assigned in the prefix
	Redirects []Redirect `json:"redirects,omitempty"`
	// Opaque holds why the command could not be resolved; empty when it was.
	Opaque string `json:"opaque,omitempty"`
}

// Name is argv[0]'s value ("" when argv is empty).
func (c Command) Name() string {
	if len(c.Argv) == 0 {
		return ""
	}
	return c.Argv[0].Value
}

// Link is a write-then-run pair: a file written by one command and then run
// or sourced by a later one in the same text.
type Link struct {
	Path  string `json:"path"`
	Write Pos    `json:"write"`
	Run   Pos    `json:"run"`
}

// FlagKind is the closed set of things the analyzer reports for policy to
// weigh.
type FlagKind string

const (
	FlagOpaque             FlagKind = "opaque"               // something could not be resolved statically
	FlagDynamicCommand     FlagKind = "dynamic_command"      // the command name itself is dynamic
	FlagInlineCode         FlagKind = "inline_code"          // python -c, perl -e, awk system(), ...
	FlagDangerousEnv       FlagKind = "dangerous_env"        // LD_PRELOAD=, PATH=, BASH_ENV=, ...
	FlagEnableBuiltin      FlagKind = "enable_builtin"       // enable -f loads code
	FlagNameref            FlagKind = "nameref"              // declare -n
	FlagPromptExpansion    FlagKind = "prompt_expansion"     // ${x@P}
	FlagAlias              FlagKind = "alias"                // alias, hash -p
	FlagGlobCommand        FlagKind = "glob_command_name"    // a command name with glob characters
	FlagWritableExecutable FlagKind = "writable_executable"  // executable inside a writable root
	FlagNetworkRedirect    FlagKind = "network_redirect"     // /dev/tcp, /dev/udp
	FlagScriptNotInspected FlagKind = "script_not_inspected" // a named script outside the roots or unreadable
	FlagScriptNotAnalysed  FlagKind = "script_not_analysed"  // pinned, but not a shell script
	FlagDepthExceeded      FlagKind = "depth_exceeded"       // nesting deeper than the cap
	FlagExecOption         FlagKind = "exec_option"          // an option that makes a tool run a command (tar --to-command, ssh ProxyCommand, ...)
	FlagFunctionShadow     FlagKind = "function_shadow"      // a function named like a command
	FlagIndirection        FlagKind = "indirection"          // ${!x}, ${!PREFIX*}
	FlagWriteThenRun       FlagKind = "write_then_run"       // see Links
	FlagPrivilege          FlagKind = "privilege"            // sudo, doas, su, chroot, unshare
	FlagRemoteCommand      FlagKind = "remote_command"       // ssh HOST CMD
	// FlagOpaqueWithCredentials: the run carries a credential and some of
	// what it runs could not be seen (see Input.CredentialsInjected); the
	// detail says whether that was denied or allowed by the profile.
	FlagOpaqueWithCredentials FlagKind = "opaque_with_credentials"
)

// Flag is one finding with where it was found.
type Flag struct {
	Kind   FlagKind `json:"kind"`
	Pos    Pos      `json:"pos"`
	Detail string   `json:"detail"`
}

// Denial is a verdict the analyzer reaches on its own: the text cannot be
// judged, or it breaks a hard rule.
type Denial struct {
	Reason  govern.Reason `json:"reason"`
	Pos     Pos           `json:"pos"`
	Message string        `json:"message"`
}

func (d *Denial) Error() string { return fmt.Sprintf("%s: %s", d.Reason, d.Message) }

// Analysis is the analyzer's result: the judged text and everything it
// would run. It is a plain value; print it with encoding/json.
type Analysis struct {
	Dialect Dialect `json:"dialect"`
	// Text is the judged text: the input after ${credential:<id>} rewriting.
	Text   string `json:"-"`
	SHA256 string `json:"sha256"`
	// Credentials lists the credential ids referenced by ${credential:<id>}.
	Credentials []string     `json:"credentials,omitempty"`
	Commands    []Command    `json:"commands"`
	Pins        []govern.Pin `json:"pins,omitempty"`
	Links       []Link       `json:"links,omitempty"`
	Flags       []Flag       `json:"flags,omitempty"`
	Denial      *Denial      `json:"denial,omitempty"`
	// env is Input.Env: what the analysis assumed the call's environment
	// holds (see Started).
	env map[string]string
}

// WorkdirVars are the environment variables the shell reads to choose its
// starting directory or the directory cd, pushd and popd go to.
var WorkdirVars = []string{"CDPATH", "HOME", "OLDPWD", "POSIXLY_CORRECT", "PWD"}

// Started reports whether the command may start with name=value in its
// environment: always, except for a WorkdirVars variable this analysis was
// not given with that value (Input.Env), which would make the shell look
// for scripts in directories other than the ones judged.
func (a *Analysis) Started(name, value string) bool {
	for _, v := range WorkdirVars {
		if v == name {
			got, ok := a.envValue(name)
			return ok && got == value
		}
	}
	return true
}

func (a *Analysis) envValue(name string) (string, bool) {
	if a == nil {
		return "", false
	}
	v, ok := a.env[name]
	return v, ok
}

// Opaque reports whether any part of the text could not be resolved.
func (a *Analysis) Opaque() bool {
	for _, f := range a.Flags {
		switch f.Kind {
		case FlagOpaque, FlagDynamicCommand, FlagDepthExceeded, FlagPromptExpansion:
			return true
		}
	}
	return false
}
