package audit

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/mitrity/mitrity/govern"
)

// SandboxModeExplained says in place what a stamped mode meant for the run,
// in the spec's words, so a reader of the card need not look it up. A nil
// mode is the absent field: not ours to vouch for.
func SandboxModeExplained(m *govern.SandboxMode) string {
	if m == nil {
		return "absent: this gateway started nothing, so it vouches for no isolation (absent is never \"none\")"
	}
	switch *m {
	case govern.SandboxBubblewrap:
		return "bubblewrap: full strength. User, pid, network, IPC and UTS namespaces, read-only host root, only the workspace roots writable, seccomp installed."
	case govern.SandboxBubblewrapNoSeccomp:
		return "bubblewrap_no_seccomp: degraded. Bubblewrap without the seccomp stage (exec.sandbox.seccomp: preferred): host Unix sockets were reachable from inside. Namespaces, read-only root and the egress proxy held."
	case govern.SandboxSeatbelt:
		return "seatbelt: full strength for macOS. sandbox-exec with a generated profile."
	case govern.SandboxNone:
		return "none: degraded. The command ran with no kernel isolation (sandbox_required: false and no backend): no filesystem containment and no egress control; the proxy variables were set and the proxy enforced the allowlist, but nothing stops a process from ignoring them. Pinned scripts, the constructed environment, output redaction, timeouts and output caps still held."
	case govern.SandboxUnavailableDenied:
		return "unavailable_denied: denied. No sandbox backend was available and the policy requires one (sandbox_required: true); nothing ran. Until the host's sandbox prerequisites are fixed, every governed-shell command from this agent is refused."
	}
	return m.String()
}

// StatusExplained gives the status word with its meaning.
func StatusExplained(s govern.Status) string {
	switch s {
	case govern.StatusCompleted:
		return "completed: the command exited on its own; its exit code is a result, not an error"
	case govern.StatusTimedOut:
		return "timed_out: the timeout expired; SIGTERM, then SIGKILL five seconds later; partial output returned"
	case govern.StatusKilled:
		return "killed: the command died of a signal"
	case govern.StatusFailedToStart:
		return "failed_to_start: the execution was attempted and could not start"
	case govern.StatusNeverRan:
		return "never_ran: nothing was started"
	}
	return s.String()
}

// ReasonExplained gives an execution reason word with its meaning.
func ReasonExplained(r govern.Reason) string {
	switch r {
	case "":
		return "-"
	case govern.ReasonPinMismatch:
		return "pin_mismatch: a script changed after it was judged (modified_outside_governance); the changed bytes were not run"
	case govern.ReasonConcurrencyLimit:
		return "concurrency_limit: the gateway was already running its maximum of concurrent executions"
	case govern.ReasonSpawnError:
		return "spawn_error: the sandbox or the shell could not be started"
	case govern.ReasonSandboxUnavailable:
		return "sandbox_unavailable: no sandbox backend and the policy requires one"
	}
	return string(r)
}

var pinMethodExplained = map[PinMethod]string{
	PinBind: "bind (bound read-only over the path)",
	PinCopy: "copy (private copy, command line rewritten to it)",
}

// RenderCard writes ev for a person: the envelope, the decision, what the
// command resolved to and, when something was attempted, the execution
// card. It backs `mitrity-gateway audit show`.
func RenderCard(w io.Writer, ev *Event) error {
	p := &printer{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
	d := &ev.Data
	p.row("Event", ev.ID)
	p.row("Type", ev.Type)
	p.row("Time", ev.Time.UTC().Format(time.RFC3339Nano))
	p.row("Source", ev.Source)
	p.row("Agent", d.Agent)
	p.row("Surface", string(d.Surface))
	p.row("Tool", d.Tool+" ("+d.ActionType+")")
	if d.Session != "" {
		p.row("Session", d.Session)
	}
	if d.LinkedEventID != "" {
		p.row("Linked event", d.LinkedEventID)
	}
	p.blank()
	p.line("Decision")
	p.row("  Outcome", string(d.Decision.Outcome))
	p.row("  Reason", dash(string(d.Decision.Reason)))
	p.row("  Stage", dash(d.Decision.Stage))
	p.row("  Rule", dash(d.Decision.Rule))
	if d.Decision.Message != "" {
		p.row("  Message", d.Decision.Message)
	}
	if d.BlockedBy != "" {
		p.row("  Blocked by", d.BlockedBy)
	}
	if d.Decision.WouldDeny {
		p.row("  Would deny", "yes (monitor mode: enforcement would have denied this)")
	}
	if d.Decision.Error != "" {
		p.row("  Error", d.Decision.Error)
	}
	if c := d.Command; c != nil {
		p.blank()
		p.line("Command")
		p.row("  SHA-256", c.SHA256+" (the judged text, exactly as executed)")
		p.row("  Dialect", c.Dialect)
		if c.Cwd != "" {
			p.row("  Cwd", c.Cwd)
		}
		if c.StdinSHA256 != "" {
			p.row("  Stdin", fmt.Sprintf("%d bytes, sha256 %s", c.StdinBytes, c.StdinSHA256))
		}
		p.row("  Opaque", yesNo(c.Opaque))
		p.row("  Credentials referenced", dash(strings.Join(c.CredentialsReferenced, ", ")))
		p.line("  Resolved commands ({{...}} marks a word known only at run time)")
		for i, r := range c.Resolved {
			s := fmt.Sprintf("    %d. %s", i+1, argvString(r))
			if r.Context != "" {
				s += "   [" + r.Context + "]"
			}
			if r.Opaque != "" {
				s += "   opaque: " + r.Opaque
			}
			p.line(s)
		}
		if len(c.Flags) > 0 {
			p.line("  Flags")
			for _, f := range c.Flags {
				p.row("    "+f.Kind, f.Detail)
			}
		}
	}
	p.blank()
	if dst := d.Destination; dst != nil {
		p.line("Refused destination (the execution's egress proxy)")
		p.row("  Target", dst.Target)
		why := dst.Reason
		if dst.Category != "" {
			why += " (" + dst.Category + ")"
		}
		p.row("  Reason", why)
		if dst.Detail != "" {
			p.row("  Detail", dst.Detail)
		}
		p.row("  Method", dst.Method)
		p.row("  Times refused", strconv.Itoa(dst.Count))
		return p.flush()
	}
	if u := d.Upstream; u != nil {
		renderUpstream(p, u)
		return p.flush()
	}
	if as := d.AgentSession; as != nil {
		renderAgentSession(p, as)
		return p.flush()
	}
	if td := d.ToolDefinition; td != nil {
		p.line("Upstream tool definition")
		p.row("  Server", td.Server)
		p.row("  Tool", td.Tool+" (served as "+dash(td.Served)+")")
		p.row("  State", td.State)
		p.row("  Reason", dash(string(td.Reason)))
		p.row("  SHA-256", td.SHA256)
		if td.Previous != "" {
			p.row("  Previous SHA-256", td.Previous)
		}
		return p.flush()
	}
	x := d.Execution
	if x == nil {
		p.line("Execution card: none. Nothing was attempted for this event.")
		return p.flush()
	}
	p.line("Execution card")
	p.row("  Status", StatusExplained(x.Status))
	p.row("  Reason", ReasonExplained(x.Reason))
	p.row("  Sandbox mode", SandboxModeExplained(x.SandboxMode))
	if x.ExitCode != nil {
		p.row("  Exit code", strconv.Itoa(*x.ExitCode))
	} else {
		p.row("  Exit code", "null (not completed)")
	}
	p.row("  Duration", fmt.Sprintf("%d ms", x.DurationMS))
	p.row("  Timeout", fmt.Sprintf("%d s (effective)", x.TimeoutSeconds))
	p.row("  Stdout", streamString(x.Stdout))
	p.row("  Stderr", streamString(x.Stderr))
	p.row("  Redactions", fmt.Sprintf("%d across both streams", x.RedactionCount))
	if x.OutputSHA256 != "" {
		p.row("  Output", fmt.Sprintf("%d bytes returned after redaction, sha256 %s", x.OutputBytes, x.OutputSHA256))
	} else {
		p.row("  Output", "none returned")
	}
	if d.Command != nil {
		p.row("  Command hash", d.Command.SHA256)
	}
	p.row("  Credentials injected", dash(strings.Join(x.CredentialsInjected, ", "))+" (ids only; values are never recorded)")
	p.row("  Egress", fmt.Sprintf("%d allowed, %d denied", x.Egress.Allowed, x.Egress.Denied))
	if len(x.Egress.DeniedHosts) > 0 {
		more := ""
		if x.Egress.Denied > len(x.Egress.DeniedHosts) && len(x.Egress.DeniedHosts) == MaxDeniedHosts {
			more = " (first 16 distinct)"
		}
		p.row("  Denied destinations", strings.Join(x.Egress.DeniedHosts, ", ")+more)
	}
	if len(x.PinnedScripts) == 0 {
		p.row("  Pinned scripts", "none")
	} else {
		p.line("  Pinned scripts")
		p.line("    PATH\tSHA-256\tSIZE\tPINNED")
		for _, s := range x.PinnedScripts {
			p.line(fmt.Sprintf("    %s\t%s\t%d\t%s", oneLine(s.Path), oneLine(s.SHA256), s.Size, pinMethodString(s.PinMethod)))
		}
	}
	if len(x.ProtectedCreated) > 0 {
		p.line("  Protected paths created (absent before the run; review before anything on the host uses them)")
		for _, c := range x.ProtectedCreated {
			p.line("    " + oneLine(c))
		}
	}
	if len(x.ProtectedModified) > 0 {
		p.line("  Protected paths changed (held read-only: the protection was bypassed)")
		for _, c := range x.ProtectedModified {
			p.line("    " + oneLine(c))
		}
	}
	if len(x.MaskReplaced) > 0 {
		p.line("  Masked paths replaced on the host while it ran (the run was killed; its output was withheld)")
		for _, m := range x.MaskReplaced {
			p.line("    " + oneLine(m))
		}
	}
	if len(x.CredentialWritten) > 0 {
		p.line("  Credentials left in the workspace (files the run changed that hold one)")
		for _, w := range x.CredentialWritten {
			p.line(fmt.Sprintf("    %s\t%s", oneLine(w.Path), oneLine(w.Credential)))
		}
	}
	if len(x.ArgvRefused) > 0 {
		p.line("  Program starts refused (credential_in_argv: an argument carried an injected credential)")
		p.line("    PROGRAM\tARGUMENT\tCREDENTIAL")
		for _, a := range x.ArgvRefused {
			p.line(fmt.Sprintf("    %s\t%d\t%s", oneLine(a.Program), a.Argument, oneLine(a.Credential)))
		}
	}
	if x.Status.Started() {
		p.line("  Limits enforced (false is a platform gap on this host, not a silent one)")
	} else {
		p.line("  Limits enforced (nothing ran, so none applied)")
	}
	for _, l := range Limits() {
		le := x.LimitsEnforced[l]
		p.line(fmt.Sprintf("    %s\t%t\t%s", l, le.Enforced, dash(string(le.Mechanism))))
	}
	return p.flush()
}

// RenderList writes one line per event, newest last, under a header. It
// backs `mitrity-gateway audit list`.
func RenderList(w io.Writer, events []*Event) error {
	p := &printer{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
	p.line("TIME\tEVENT\tAGENT\tTOOL\tOUTCOME\tREASON\tSTATUS\tSANDBOX\tEXIT\tCOMMAND")
	for _, ev := range events {
		d := &ev.Data
		status, mode, exit := "-", "-", "-"
		if x := d.Execution; x != nil {
			status = x.Status.String()
			if x.Reason != "" {
				status += "(" + string(x.Reason) + ")"
			}
			if x.SandboxMode != nil {
				mode = x.SandboxMode.String()
			}
			if x.ExitCode != nil {
				exit = strconv.Itoa(*x.ExitCode)
			}
		}
		if u := d.Upstream; u != nil {
			status = u.Status.String()
			if u.Reason != "" {
				status += "(" + string(u.Reason) + ")"
			}
		}
		if td := d.ToolDefinition; td != nil {
			status = td.State
		}
		if as := d.AgentSession; as != nil {
			status = "session_" + as.Phase
			if as.Phase == AgentSessionEnd {
				status += ":" + as.Status.String()
			}
			if m := as.Isolation.SandboxMode; m != nil {
				mode = m.String()
			}
			if as.ExitCode != nil {
				exit = strconv.Itoa(*as.ExitCode)
			}
		}
		cmd := "-"
		if d.Command != nil && len(d.Command.SHA256) >= 12 {
			cmd = d.Command.SHA256[:12]
		}
		cols := []string{
			ev.Time.UTC().Format(time.RFC3339), ev.ID, d.Agent, d.Tool, string(d.Decision.Outcome),
			dash(string(d.Decision.Reason)), status, mode, exit, cmd,
		}
		for i := range cols {
			cols[i] = oneLine(cols[i]) // a line read back may say anything
		}
		p.line(strings.Join(cols, "\t"))
	}
	return p.flush()
}

// printer collects write errors so rendering code stays linear.
type printer struct {
	tw  *tabwriter.Writer
	err error
}

func (p *printer) line(s string) {
	if p.err == nil {
		_, p.err = io.WriteString(p.tw, s+"\n")
	}
}

func (p *printer) row(k, v string) { p.line(k + "\t" + oneLine(v)) }
func (p *printer) blank()          { p.line("") }

func (p *printer) flush() error {
	if p.err != nil {
		return p.err
	}
	return p.tw.Flush()
}

func argvString(r Resolved) string {
	dyn := map[int]bool{}
	for _, i := range r.Dynamic {
		dyn[i] = true
	}
	parts := make([]string, 0, len(r.Wrappers)+len(r.Argv))
	for _, wr := range r.Wrappers {
		parts = append(parts, "("+wr+")")
	}
	for i, a := range r.Argv {
		if dyn[i] {
			parts = append(parts, "{{"+a+"}}")
		} else {
			parts = append(parts, quoteWord(a))
		}
	}
	for _, rd := range r.Redirects {
		parts = append(parts, rd.Op+quoteWord(rd.Path))
	}
	return oneLine(strings.Join(parts, " "))
}

// quoteWord quotes a word only when it would otherwise read as several.
func quoteWord(s string) string {
	if s != "" && !strings.ContainsAny(s, " \t\n'\"\\$`;&|<>(){}*?[]#~") {
		return s
	}
	return strconv.Quote(s)
}

// oneLine keeps recorded text (a message, an argv word, a tool or agent
// name an agent or an upstream chose) from breaking the layout or driving
// the operator's terminal: a value with anything unprintable in it (a
// newline, a tab, a carriage return, an escape sequence, a bidi override,
// U+2028, a byte that is not UTF-8) is shown Go-escaped, so no row can be
// rewritten, hidden or forged on screen.
func oneLine(s string) string {
	if !strings.ContainsFunc(s, unprintable) {
		return s
	}
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

func unprintable(r rune) bool { return r == utf8.RuneError || r != ' ' && !unicode.IsPrint(r) }

func streamString(s Stream) string {
	t := "not truncated"
	if s.Truncated {
		t = "truncated"
	}
	return fmt.Sprintf("%d bytes produced (%d discarded past the cap), %s", s.Bytes, s.DiscardedBytes, t)
}

func pinMethodString(m PinMethod) string {
	if s, ok := pinMethodExplained[m]; ok {
		return s
	}
	return string(m)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// renderUpstream is the card of a request forwarded to an upstream MCP
// server: what went and came back, by hash and size (the gateway did not
// execute it, so there is no sandbox mode).
func renderUpstream(p *printer, u *UpstreamCall) {
	p.line("Upstream request (forwarded; not executed by the gateway, so no sandbox mode)")
	p.row("  Server", u.Server)
	p.row("  Method", u.Method)
	if u.Name != "" {
		p.row("  Name", u.Name)
	}
	if u.ServerSandbox != "" {
		p.row("  Server sandbox", u.ServerSandbox)
	}
	p.row("  Status", upstreamStatus(u.Status))
	p.row("  Reason", ReasonExplained(u.Reason))
	p.row("  Upstream isError", yesNo(u.IsError))
	p.row("  Duration", fmt.Sprintf("%d ms", u.DurationMS))
	args := fmt.Sprintf("%d bytes", u.ArgumentsBytes)
	if u.ArgumentsSHA256 != "" {
		args += ", sha256 " + u.ArgumentsSHA256
	}
	if u.ArgumentsRedacted > 0 {
		args += fmt.Sprintf(", %d secrets redacted before forwarding", u.ArgumentsRedacted)
	}
	p.row("  Arguments", args)
	res := fmt.Sprintf("%d bytes as the server sent it", u.ResultBytes)
	if u.ResultSHA256 != "" {
		res += ", sha256 " + u.ResultSHA256
	}
	if u.Truncated {
		res += ", truncated"
	}
	p.row("  Result", res)
	p.row("  Redactions", strconv.Itoa(u.RedactionCount))
	if len(u.Injection) > 0 {
		p.row("  Injection", strings.Join(u.Injection, ", ")+" ("+u.InjectionAction+")")
	}
	p.row("  Credentials injected", dash(strings.Join(u.CredentialsInjected, ", "))+" (ids only; values are never recorded)")
}

// upstreamStatus explains a status in an upstream request's terms.
func upstreamStatus(st govern.Status) string {
	why := map[govern.Status]string{
		govern.StatusCompleted:     "the server answered (the gateway may still have withheld the answer: see the reason)",
		govern.StatusTimedOut:      "no answer within the call timeout; the request was cancelled upstream",
		govern.StatusKilled:        "cancelled by the agent, or the server went away mid-request",
		govern.StatusFailedToStart: "the request never reached the server",
		govern.StatusNeverRan:      "refused before anything was sent",
	}[st]
	if why == "" {
		return st.String()
	}
	return st.String() + ": " + why
}
