package notify

import (
	"fmt"
	"strings"

	"github.com/mitrity/mitrity/govern"
)

// What a run without a kernel sandbox still had. The spec lists these so an
// operator can weigh the degradation rather than assume the worst.
const stillHeld = "Still held: pinned scripts, the constructed environment, output redaction, timeouts, output caps."

// degradedText words execution.sandbox_degraded. The rules, from the spec:
// when nothing ran the text leads with "Denied" (an agent that can run
// nothing is an outage); when the command ran unsandboxed it says what the
// run did not have and what still held; always the requested backend, the
// host's reason, whether the command ran, what the policy required and the
// audit event.
func degradedText(d Degradation, no *Notification) string {
	var b strings.Builder
	reason := d.HostReason
	if reason == "" {
		reason = "the host gave no reason"
	}
	requested := "Requested backend: " + d.Requested
	if d.Seccomp != "" && d.Mode == govern.SandboxBubblewrapNoSeccomp {
		requested += ", seccomp: " + d.Seccomp
	}
	requested += "; host reason: " + reason + "."
	switch d.Mode {
	case govern.SandboxUnavailableDenied:
		fmt.Fprintf(&b, "Denied: agent %s cannot execute anything in the governed shell on %s. ", d.Agent, no.Host)
		fmt.Fprintf(&b, "No sandbox backend is available. %s ", requested)
		b.WriteString("The policy requires a sandbox (sandbox_required: true), so the command did not run (sandbox_mode: unavailable_denied). ")
		fmt.Fprintf(&b, "Until the host's sandbox prerequisites are fixed, every governed-shell command from this agent is refused; `mitrity-gateway doctor` on %s names the remedy.", no.Host)

	case govern.SandboxNone:
		if d.Status.Started() {
			fmt.Fprintf(&b, "Sandbox degraded: a command from agent %s ran on %s with no kernel sandbox (sandbox_mode: none). ", d.Agent, no.Host)
		} else {
			fmt.Fprintf(&b, "Sandbox degraded: a command from agent %s on %s was to run with no kernel sandbox (sandbox_mode: none); it did not run (status %s). ", d.Agent, no.Host, d.Status)
		}
		fmt.Fprintf(&b, "%s ", requested)
		b.WriteString("The policy does not require a sandbox (sandbox_required: false), so the command was not refused. ")
		if d.Status.Started() {
			b.WriteString("The run did not have filesystem containment or egress control: ")
		} else {
			b.WriteString("Runs from this agent on this host have no filesystem containment or egress control: ")
		}
		b.WriteString("the proxy variables are set and the proxy still enforces the allowlist, but nothing stops a process from ignoring them. ")
		b.WriteString(stillHeld)

	case govern.SandboxBubblewrapNoSeccomp:
		if d.Status.Started() {
			fmt.Fprintf(&b, "Sandbox degraded: a command from agent %s ran on %s in bubblewrap without the seccomp stage (sandbox_mode: bubblewrap_no_seccomp). ", d.Agent, no.Host)
		} else {
			fmt.Fprintf(&b, "Sandbox degraded: a command from agent %s on %s was to run in bubblewrap without the seccomp stage (sandbox_mode: bubblewrap_no_seccomp); it did not run (status %s). ", d.Agent, no.Host, d.Status)
		}
		fmt.Fprintf(&b, "%s ", requested)
		seccomp := d.Seccomp
		if seccomp == "" {
			seccomp = "preferred" // the only setting under which this mode is reachable
		}
		if d.SandboxRequired {
			fmt.Fprintf(&b, "The policy requires a sandbox (sandbox_required: true), which bubblewrap satisfies; exec.sandbox.seccomp: %s lets it run without seccomp. ", seccomp)
		} else {
			fmt.Fprintf(&b, "The policy does not require a sandbox (sandbox_required: false); exec.sandbox.seccomp: %s lets bubblewrap run without seccomp. ", seccomp)
		}
		if d.Status.Started() {
			b.WriteString("The run did not have the seccomp filter: host Unix sockets were reachable from inside the sandbox. ")
		} else {
			b.WriteString("Runs without the seccomp filter can reach host Unix sockets from inside the sandbox. ")
		}
		b.WriteString("Still held: the namespaces, the read-only host root with only the workspace roots writable, the egress proxy, pinned scripts, the constructed environment, output redaction, timeouts, output caps.")
	}
	tail(&b, no)
	return b.String()
}

// redactedText words execution.output_redacted: which credential, whose
// command, that the agent never saw the value, and why it matters.
func redactedText(r Redaction, no *Notification) string {
	var b strings.Builder
	times := "once"
	if r.Count > 1 {
		times = fmt.Sprintf("%d times", r.Count)
	}
	fmt.Fprintf(&b, "Credential %s was redacted from command output: a command from agent %s on %s printed its value (%s), and the agent saw [REDACTED:credential:%s] instead. ",
		r.CredentialID, r.Agent, no.Host, times, r.CredentialID)
	b.WriteString("An env dump, a cat of a key file or a script that echoes its token looks like this; check why the command printed it.")
	tail(&b, no)
	return b.String()
}

func tail(b *strings.Builder, no *Notification) {
	if no.Suppressed > 0 {
		fmt.Fprintf(b, " %d more like this in the past hour were not sent.", no.Suppressed)
	}
	fmt.Fprintf(b, " Audit event %s: %s", no.EventID, no.EventLink)
}
