package framework

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxReason bounds the reason text Answer and Block write; longer text is cut.
const MaxReason = 4 << 10

// maxShownCommand bounds the command quoted into an ask reason.
const maxShownCommand = 2000

// Answer renders v as c's framework expects it: what to write on stdout, the
// exit code (always 0 here; Block is the only source of 2) and stderr text.
//
//   - Allow with a Command rewrites the call: Claude Code and Codex CLI get
//     updatedInput, Gemini CLI hookSpecificOutput.tool_input and OpenCode
//     args, each the whole tool input as received with only "command"
//     replaced.
//   - Ask goes to the person where the framework can ask (Name.CanAsk);
//     elsewhere it becomes a denial that says the call needs approval, so a
//     framework that cannot ask never runs a held call. When an Ask carries a
//     rewrite, the original command is quoted into the reason, because the
//     person is shown the rewritten one.
//   - Defer is each framework's "no opinion".
//
// Anything Answer cannot render faithfully (an unknown framework or decision,
// a rewrite of a tool that is not the shell tool, a rewrite that is not a
// usable command) is rendered by Block instead: the call is refused.
func Answer(c Call, v Verdict) (stdout []byte, exit int, stderr string) {
	if !c.Framework.Valid() {
		return Block(c.Framework, fmt.Sprintf("Mitrity blocked this call: mitrity-hook cannot answer framework %q.", string(c.Framework)))
	}
	switch v.Decision {
	case Defer, Allow, Deny, Ask:
	default:
		return Block(c.Framework, fmt.Sprintf("Mitrity blocked this call: the hook got an unknown decision (%s).", v.Decision))
	}
	d, reason := v.Decision, cleanReason(v.Reason)
	var input map[string]json.RawMessage
	if v.Command != "" && (d == Allow || d == Ask) {
		if !c.Shell {
			return Block(c.Framework, fmt.Sprintf("Mitrity blocked this call: it cannot rewrite %s, which is not the shell tool.", c.ToolName))
		}
		var err error
		if input, err = withCommand(c.Input, v.Command); err != nil {
			return Block(c.Framework, "Mitrity blocked this call: the rewritten command is unusable: "+err.Error()+".")
		}
	}
	if d == Ask && !c.Framework.CanAsk() {
		// Codex runs a call whose hook answered "ask"; an OpenCode plugin
		// cannot prompt. Refuse rather than run what a person must approve.
		d, input = Deny, nil
		if reason == "" {
			reason = "Mitrity holds this call for approval."
		}
		reason += fmt.Sprintf(" %s cannot put a call to a person from its hook, so Mitrity refused it rather than run it unapproved.", c.Framework.Display())
	}
	switch {
	case d == Deny && reason == "":
		reason = "Mitrity denied this call."
	case d == Ask && reason == "":
		reason = "Mitrity holds this call for approval."
	}
	if d == Ask && input != nil {
		reason += " The command held for approval: " + showCommand(c.Command)
	}

	var out any
	switch c.Framework {
	case Claude, Codex:
		out = preToolUse(c.Framework, d, reason, input)
	case Gemini:
		out = beforeTool(d, reason, input)
	default:
		out = OpenCodeResponse{Decision: d.String(), Reason: reasonUnless(d, reason), Args: input}
	}
	b, err := encode(out)
	if err != nil {
		return Block(c.Framework, "Mitrity blocked this call: the answer could not be encoded: "+err.Error()+".")
	}
	return b, 0, ""
}

// Block renders a fail-closed refusal: for a payload that could not be read,
// a gateway that could not be reached, or any internal error. It exits 2 with
// the reason on stderr, which blocks the call in Claude Code, Codex CLI and
// Gemini CLI (Codex needs that stderr to be non-empty); for OpenCode, whose
// plugin reads stdout, it also writes a deny answer.
func Block(name Name, reason string) (stdout []byte, exit int, stderr string) {
	reason = cleanReason(reason)
	if reason == "" {
		reason = "Mitrity could not check this call, so it is blocked."
	}
	if name == OpenCode {
		stdout, _ = encode(OpenCodeResponse{Decision: Deny.String(), Reason: reason})
	}
	return stdout, 2, reason + "\n"
}

// preToolUseOutput is Claude Code's answer, which Codex CLI copies. Codex
// refuses unknown fields, so nothing else may be added here.
type preToolUseOutput struct {
	HookSpecificOutput *preToolUseSpecific `json:"hookSpecificOutput,omitempty"`
}

type preToolUseSpecific struct {
	HookEventName            string                     `json:"hookEventName"`
	PermissionDecision       string                     `json:"permissionDecision"`
	PermissionDecisionReason string                     `json:"permissionDecisionReason,omitempty"`
	UpdatedInput             map[string]json.RawMessage `json:"updatedInput,omitempty"`
}

func preToolUse(name Name, d Decision, reason string, input map[string]json.RawMessage) preToolUseOutput {
	switch {
	case d == Defer:
		return preToolUseOutput{}
	case name == Codex && d == Allow && input == nil:
		// Codex rejects a bare allow (and then runs the call anyway); no
		// opinion says the same thing in a form it accepts.
		return preToolUseOutput{}
	case name == Codex && d == Allow:
		reason = "" // an allow reason only reaches Claude Code's transcript
	}
	return preToolUseOutput{HookSpecificOutput: &preToolUseSpecific{
		HookEventName:            "PreToolUse",
		PermissionDecision:       d.String(),
		PermissionDecisionReason: reason,
		UpdatedInput:             input,
	}}
}

// beforeToolOutput is Gemini CLI's BeforeTool answer.
type beforeToolOutput struct {
	Decision           string              `json:"decision,omitempty"`
	Reason             string              `json:"reason,omitempty"`
	SystemMessage      string              `json:"systemMessage,omitempty"`
	HookSpecificOutput *beforeToolSpecific `json:"hookSpecificOutput,omitempty"`
}

type beforeToolSpecific struct {
	HookEventName string                     `json:"hookEventName"`
	ToolInput     map[string]json.RawMessage `json:"tool_input"`
}

func beforeTool(d Decision, reason string, input map[string]json.RawMessage) beforeToolOutput {
	var out beforeToolOutput
	switch d {
	case Defer:
		return out
	case Allow:
		out.Decision = "allow"
	case Deny:
		out.Decision, out.Reason = "deny", reason
	case Ask:
		// Gemini shows systemMessage, not reason, on its confirmation.
		out.Decision, out.Reason, out.SystemMessage = "ask", reason, reason
	}
	if input != nil {
		out.HookSpecificOutput = &beforeToolSpecific{HookEventName: "BeforeTool", ToolInput: input}
	}
	return out
}

// reasonUnless drops the reason of an answer that runs the call.
func reasonUnless(d Decision, reason string) string {
	if d == Deny {
		return reason
	}
	return ""
}

// withCommand returns a copy of input with "command" set to cmd.
func withCommand(input map[string]json.RawMessage, cmd string) (map[string]json.RawMessage, error) {
	switch {
	case len(cmd) > MaxCommand:
		return nil, fmt.Errorf("%d bytes, over the %d-byte limit", len(cmd), MaxCommand)
	case strings.IndexByte(cmd, 0) >= 0:
		return nil, fmt.Errorf("it holds a NUL byte")
	case !utf8.ValidString(cmd):
		return nil, fmt.Errorf("it is not valid UTF-8")
	}
	raw, err := encode(cmd)
	if err != nil {
		return nil, err
	}
	out := make(map[string]json.RawMessage, len(input)+1)
	for k, v := range input {
		out[k] = v
	}
	out["command"] = bytes.TrimSuffix(raw, []byte("\n"))
	return out, nil
}

// encode marshals v as one line of JSON without HTML escaping, so that a
// command such as `a && b` reads as written.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// cleanReason makes reason safe to print: valid UTF-8, no control characters
// other than newline and tab, trimmed, at most MaxReason bytes.
func cleanReason(reason string) string {
	reason = strings.ToValidUTF8(reason, "\uFFFD")
	reason = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || !unicode.IsControl(r) {
			return r
		}
		return ' '
	}, reason)
	reason = strings.TrimSpace(reason)
	if len(reason) > MaxReason {
		reason = truncate(reason, MaxReason-len("…")) + "…"
	}
	return reason
}

// showCommand quotes a command for a person, cut to maxShownCommand bytes.
func showCommand(cmd string) string {
	if len(cmd) <= maxShownCommand {
		return fmt.Sprintf("%q", cmd)
	}
	return fmt.Sprintf("%q… (%d bytes in all)", truncate(cmd, maxShownCommand), len(cmd))
}

// truncate cuts s to at most n bytes on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
