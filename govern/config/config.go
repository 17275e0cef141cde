package config

import (
	"net/netip"
	"path/filepath"
	"strings"

	"github.com/mitrity/mitrity/govern/yamlfile"
)

// Config is the validated, runtime form of mitrity-gateway.yaml. Every field
// holds its default when the file is silent. A Config built in code should
// be checked with Validate before use.
type Config struct {
	// File is the file the config was loaded from, made absolute; empty
	// for the embedded default.
	File string
	// Embedded is true when the config is the embedded default.
	Embedded bool

	Exec Exec
	// Credentials says where each credential id's value comes from.
	Credentials map[string]CredentialSource
	// Policy is the absolute path of the policy file; empty means the
	// embedded default policy.
	Policy        string
	Audit         Audit
	Notifications Notifications
	ThreatIntel   ThreatIntel
	Admission     Admission
	Admin         Admin
	// Upstreams are the MCP servers the gateway proxies, by name.
	Upstreams map[string]Upstream
	// AgentLaunch is what `mitrity-gateway agent` gives the agent it
	// launches (docs/agent.md).
	AgentLaunch AgentLaunch

	doc *yamlfile.Doc // positions for Validate; nil when built in code
}

// Exec is the governed shell's block.
type Exec struct {
	// Enabled serves shell__execute. Off, the tool is absent from tools/list.
	Enabled bool
	// Shell is the absolute path of bash or sh: the parser and the shell must
	// agree on what the bytes mean.
	Shell string
	// DefaultCwd is the cwd when a call names none, and the single writable
	// root when the policy's workspace_roots is empty.
	DefaultCwd string
	// RunAs is the unprivileged user agent commands run as when the gateway
	// runs as root.
	RunAs       string
	Sandbox     Sandbox
	Credentials ExecCredentials
	Env         ExecEnv
	Egress      Egress
	Limits      Limits
}

// Dialect is the shell language the analyzer parses: "bash" or "sh", from the
// shell's basename. It is empty for any other shell, which Validate refuses.
func (e Exec) Dialect() string {
	switch filepath.Base(e.Shell) {
	case "bash":
		return "bash"
	case "sh":
		return "sh"
	}
	return ""
}

// Backend selects the kernel sandbox.
type Backend string

const (
	BackendAuto       Backend = "auto"       // probe at boot and per call
	BackendBubblewrap Backend = "bubblewrap" // Linux
	BackendSeatbelt   Backend = "seatbelt"   // macOS
	BackendNone       Backend = "none"       // no kernel isolation
)

// Seccomp says whether bubblewrap's seccomp stage must install.
type Seccomp string

const (
	SeccompRequired  Seccomp = "required"  // no seccomp, no sandbox
	SeccompPreferred Seccomp = "preferred" // fall back to bubblewrap_no_seccomp, notified
	SeccompOff       Seccomp = "off"
)

// Sandbox is exec.sandbox.
type Sandbox struct {
	Backend Backend
	Seccomp Seccomp
	// SettingsFile is a sandbox-runtime settings file that narrows, never
	// widens, what the sandbox allows. Empty means none.
	SettingsFile string
}

// ExecCredentials are the operator's mappings of credentials into every
// execution by an agent that holds the grant.
type ExecCredentials struct {
	Env   map[string]CredentialRef // variable name -> credential
	Files map[string]CredentialRef // file name under $MITRITY_CRED_DIR -> credential
}

// CredentialRef is the text "${credential:<id>}".
type CredentialRef string

// ID is the credential id the reference names, or "" when the text is not
// exactly one reference.
func (r CredentialRef) ID() string {
	const open, end = "${credential:", "}"
	s := string(r)
	if !strings.HasPrefix(s, open) || !strings.HasSuffix(s, end) {
		return ""
	}
	id := s[len(open) : len(s)-len(end)]
	if !ValidCredentialID(id) {
		return ""
	}
	return id
}

// ExecEnv is exec.env.
type ExecEnv struct {
	// AgentSettable names the variables a call may set. Empty: none.
	AgentSettable []string
}

// Egress is exec.egress: what the egress proxy's allowlist is checked with.
type Egress struct {
	// AllowedPorts are the ports an allowlist entry without :port matches.
	AllowedPorts []int
	// DeniedCIDRs are refused even when an allowed name resolves into them.
	DeniedCIDRs []netip.Prefix
	// AllowedPrivateCIDRs are the private ranges an allowed name may
	// resolve into; every other private address is refused.
	AllowedPrivateCIDRs []netip.Prefix
}

// Limits are exec.limits: host-wide bounds on one execution and on all.
type Limits struct {
	MaxTimeoutSeconds int   // caps the policy's exec_timeout_seconds
	StdinMaxBytes     int64 // a call's stdin
	OutputMaxBytes    int64 // per stream; the rest is discarded and counted
	MaxConcurrent     int   // executions at once; over it: concurrency_limit
	MemoryBytes       int64
	Pids              int
	TmpfsBytes        int64 // the private /tmp
	FileSizeBytes     int64 // RLIMIT_FSIZE
}

// Audit is where audit events are written.
type Audit struct {
	// Path is the JSON-lines file, absolute.
	Path string
}

// ThreatIntel is the local threat-intel feed: hosts, script hashes and
// command patterns a call is denied for. An empty Feed means none.
type ThreatIntel struct {
	Feed string // absolute path of the feed file
	// ReloadSeconds is how often the file is checked for changes.
	ReloadSeconds int
}

// Admission is the admission socket: where agent-framework hooks send a
// shell call for a decision and the relay redeems its ticket.
type Admission struct {
	// Enabled serves the socket from `serve`.
	Enabled bool
	// Socket is the socket's absolute path. The default (and
	// $MITRITY_ADMISSION_SOCKET) is govern.AdmissionSocket's.
	Socket string
	// Owners are the users (names or numeric uids) whose processes may
	// connect, checked by the peer's uid; root always may. Empty: the
	// gateway's own user.
	Owners []string
	// TicketTTLSeconds is how long an execution ticket may wait to be
	// redeemed.
	TicketTTLSeconds int
}

// Admin is the opt-in administrative listener (Prometheus metrics).
type Admin struct {
	// Listen is HOST:PORT; empty serves nothing.
	Listen string
}

// Notifications are the sinks for execution.sandbox_degraded and
// execution.output_redacted.
type Notifications struct {
	Log     bool // write them to the gateway's log
	Webhook Webhook
}

// Webhook posts Slack-compatible JSON. An empty URL means no webhook.
type Webhook struct {
	URL            string
	TimeoutSeconds int
}

// Defaults of the file's keys, named for docs and tests.
const (
	KiB = 1 << 10
	MiB = 1 << 20
	GiB = 1 << 30

	DefaultShell              = "/bin/bash"
	DefaultMaxTimeoutSeconds  = 3600
	DefaultStdinMaxBytes      = 1 * MiB
	DefaultOutputMaxBytes     = 1 * MiB
	DefaultMaxConcurrent      = 4
	DefaultMemoryBytes        = 2 * GiB
	DefaultPids               = 512
	DefaultTmpfsBytes         = 256 * MiB
	DefaultFileSizeBytes      = 1 * GiB
	DefaultWebhookTimeout     = 5
	DefaultIntelReloadSeconds = 5
	DefaultTicketTTLSeconds   = 300
	MaxTicketTTLSeconds       = 3600
	MaxWebhookTimeout         = 30 // seconds; the notifier's own bound
)

// DefaultAllowedPorts match an allowlist entry written without a port.
func DefaultAllowedPorts() []int { return []int{443, 80} }

// Loc is where the value at path (as Validate's messages name it, e.g.
// "policy" or `credentials.gh.file`) sits in the file, for checks made
// after loading that still point the operator at the line.
func (c *Config) Loc(path string) yamlfile.Loc {
	if c.doc == nil {
		return yamlfile.Loc{File: c.File, Path: path}
	}
	return c.doc.Loc(path)
}
