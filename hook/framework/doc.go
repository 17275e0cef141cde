// Package framework reads the pre-execution hook payloads of the agent
// frameworks Mitrity governs (Claude Code, Codex CLI, Gemini CLI and OpenCode)
// into one Call, and renders a Verdict back in each framework's own answer
// format, exiting only 0 or 2.
//
// It imports only the standard library: it judges nothing and reaches no
// gateway. The wire facts it relies on, with their sources:
//
// Claude Code (https://code.claude.com/docs/en/hooks, PreToolUse):
//   - stdin: session_id, transcript_path, cwd, permission_mode,
//     hook_event_name "PreToolUse", tool_name, tool_input, tool_use_id, and
//     others this package ignores (prompt_id, effort, agent_id, agent_type…).
//     Bash's tool_input is {command, description, timeout (ms),
//     run_in_background} (plus dangerouslyDisableSandbox).
//   - stdout on exit 0: {"hookSpecificOutput": {"hookEventName":
//     "PreToolUse", "permissionDecision": "allow"|"deny"|"ask",
//     "permissionDecisionReason", "updatedInput"}}. updatedInput replaces the
//     whole input object, so it must carry every field; it combines with
//     allow and ask. An ask reason is shown to the person, a deny reason to
//     the model.
//   - exit 2 blocks and feeds stderr to the model; any other non-zero exit,
//     a timeout or a hook that cannot start is a non-blocking error and the
//     call proceeds (anthropics/claude-code#84656, measured on 2.1.223 and
//     2.1.246), which is why Answer and Block exit only 0 or 2.
//   - Permission rules are matched against the rewritten input, not the
//     model's (anthropics/claude-code#65393, #89448): the person approving a
//     held, rewritten call sees the relay command, so Answer puts the
//     original command into an ask reason.
//
// Codex CLI (openai/codex codex-rs/hooks: schema/generated/
// pre-tool-use.command.{input,output}.schema.json, src/engine/output_parser.rs,
// src/events/pre_tool_use.rs):
//   - stdin takes the Claude shape: session_id, turn_id, transcript_path
//     (string or null), cwd, hook_event_name "PreToolUse", model,
//     permission_mode, tool_name, tool_input, tool_use_id. Every shell-like
//     tool (shell, local_shell, shell_command, exec_command, container.exec)
//     is reported as tool_name "Bash" with tool_input {"command": …}
//     (openai/codex#20527); apply_patch and MCP tools use their own names.
//     Parse takes those shell tools' own names for the shell too, so a build
//     that reported one would be checked, not waved through.
//   - stdout: the output schema has additionalProperties false, so an
//     unknown field makes the hook "failed" and the tool runs.
//     permissionDecision "deny" needs a non-empty reason; "allow" is accepted
//     only together with updatedInput; "ask" is unsupported. All three
//     failure shapes fail open, so Codex never gets an ask and a plain allow
//     is "{}".
//   - exit 2 blocks only with a non-empty stderr; other codes fail open.
//
// Gemini CLI (google-gemini/gemini-cli docs/hooks/reference.md;
// packages/core/src/hooks/types.ts; packages/core/src/scheduler/hook-utils.ts
// evaluateBeforeToolHook):
//   - BeforeTool stdin: session_id, transcript_path, cwd, hook_event_name
//     "BeforeTool", timestamp, tool_name, tool_input, mcp_context. The shell
//     tool is run_shell_command with {command, description, dir_path (older:
//     directory), is_background, …}.
//   - stdout: {"decision": "deny"|"block"} blocks with "reason" sent to the
//     model; "ask" forces the person's confirmation and shows systemMessage;
//     "allow" is the same as no decision (Gemini's own policy applies).
//     hookSpecificOutput.tool_input is passed to tool.build as the new
//     arguments, replacing them, so it carries the complete arguments.
//   - exit 2 blocks with stderr as the reason; other codes are warnings and
//     the tool runs.
//
// OpenCode (anomalyco/opencode packages/plugin/src/index.ts, docs
// https://opencode.ai/docs/plugins): a plugin's "tool.execute.before"(input
// {tool, sessionID, callID}, output {args}) runs before every tool; throwing
// aborts the call; mutating output.args changes it. OpenCode has no command
// hooks, so OpenCodePlugin renders a plugin that runs `mitrity-hook opencode`
// with the JSON protocol of OpenCodeRequest and OpenCodeResponse.
package framework
