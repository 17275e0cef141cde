// Package settings renders the Claude Code managed settings Mitrity needs
// (/etc/claude-code/managed-settings.json) and audits an existing settings
// file against them, reporting each drift as a Finding.
//
// The settings keys and their behaviour, with sources:
//   - hooks.PreToolUse matcher "Bash" with a command hook; timeout in
//     seconds (default 600); onFailure "block" (Claude Code 2.1.295 and
//     later) makes a hook that cannot start, times out or exits with an
//     unexpected code block the call, where older versions let it through
//     (code.claude.com/docs/en/hooks; anthropics/claude-code#84656).
//   - allowManagedHooksOnly and disableAllHooks, read from managed settings
//     only: with the first, user, project and plugin hooks do not run; the
//     second in managed settings stops every hook, while in other settings
//     it cannot stop managed hooks (Claude Code utils/hooks/
//     hooksConfigSnapshot.ts getHooksFromAllowedSources).
//   - sandbox.enabled, sandbox.failIfUnavailable (since 2.1.83,
//     anthropics/claude-code#38557), sandbox.allowUnsandboxedCommands,
//     sandbox.excludedCommands, sandbox.network.allowUnixSockets ("macOS
//     only: Unix socket paths to allow. Ignored on Linux (seccomp cannot
//     filter by path)") and sandbox.network.allowAllUnixSockets ("disables
//     blocking on both platforms") (Claude Code entrypoints/sandboxTypes.ts).
//   - permissions deny, ask, allow, evaluated deny then ask then allow; an
//     ask rule prompts even when an allow rule also matches, so a catch-all
//     ask defeats the read-only allows (code.claude.com/docs/en/permissions).
//     Bash rules are checked per subcommand of a compound command, against
//     the command after a hook's rewrite (anthropics/claude-code#65393).
//     permissions.disableBypassPermissionsMode "disable" keeps the mode that
//     skips ask rules unavailable.
package settings
