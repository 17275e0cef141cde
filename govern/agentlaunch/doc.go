// Package agentlaunch runs an agent framework (Claude Code, Codex CLI,
// Gemini CLI, OpenCode) itself inside the layered sandbox: a clean
// environment, default-deny reads, the egress proxy as its only network,
// and its shell calls through the hook to the governed shell
// (docs/agent.md).
package agentlaunch
