package framework

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// Parse reads the payload the named framework wrote to its hook's stdin.
// It is strict: a payload that is not one JSON object, is larger than
// MaxPayload, is not UTF-8, repeats a key, names another hook event, lacks a
// field the framework always sends or gives it the wrong type, or reports the
// shell tool without a usable command (not a string, empty, over MaxCommand,
// holding a NUL) is an error naming the problem. Fields Parse does not use
// are ignored but kept in Input.
func Parse(name Name, payload []byte) (Call, error) {
	if !name.Valid() {
		return Call{}, &PayloadError{Framework: name, Problem: fmt.Sprintf("unknown framework %q: want claude, codex, gemini or opencode", string(name))}
	}
	p := parser{name: name}
	if len(payload) > MaxPayload {
		return Call{}, p.fail("", fmt.Sprintf("%d bytes, over the %d-byte limit", len(payload), MaxPayload))
	}
	if !utf8.Valid(payload) {
		return Call{}, p.fail("", "not valid UTF-8")
	}
	top, err := decodeObject(payload)
	if err != nil {
		return Call{}, p.fail("", err.Error())
	}
	p.top = top
	switch name {
	case Claude, Codex:
		return p.preToolUse()
	case Gemini:
		return p.beforeTool()
	default:
		return p.openCode()
	}
}

type parser struct {
	name Name
	top  map[string]json.RawMessage
}

func (p *parser) fail(field, problem string) error {
	return &PayloadError{Framework: p.name, Field: field, Problem: problem}
}

// preToolUse reads Claude Code's PreToolUse payload, which Codex CLI copies.
func (p *parser) preToolUse() (Call, error) {
	if err := p.event("PreToolUse"); err != nil {
		return Call{}, err
	}
	c := Call{Framework: p.name}
	var err error
	if c.SessionID, err = p.str("session_id", true); err != nil {
		return Call{}, err
	}
	if c.Cwd, err = p.dir("cwd"); err != nil {
		return Call{}, err
	}
	if c.ToolName, err = p.str("tool_name", true); err != nil {
		return Call{}, err
	}
	if c.ToolUseID, err = p.str("tool_use_id", false); err != nil {
		return Call{}, err
	}
	if c.PermissionMode, err = p.str("permission_mode", false); err != nil {
		return Call{}, err
	}
	// Codex sends null when the session has no transcript.
	if c.TranscriptPath, err = p.nullableStr("transcript_path"); err != nil {
		return Call{}, err
	}
	if c.Input, err = p.object("tool_input"); err != nil {
		return Call{}, err
	}
	if isShellTool(p.name, c.ToolName) {
		if err := p.shell(&c, "tool_input"); err != nil {
			return Call{}, err
		}
	}
	return c, nil
}

// codexShellTools are the names of Codex's shell-like tools. Codex reports
// them all as "Bash" to hooks (openai/codex#20527); should a build report one
// by its own name, it is still the shell, never a tool to wave through.
var codexShellTools = map[string]bool{
	"Bash": true, "shell": true, "local_shell": true, "shell_command": true,
	"exec_command": true, "container.exec": true, "unified_exec": true,
}

func isShellTool(n Name, tool string) bool {
	switch n {
	case Codex:
		return codexShellTools[tool]
	case OpenCode:
		return tool == "bash" || tool == "shell"
	}
	return tool == n.ShellTool()
}

// beforeTool reads Gemini CLI's BeforeTool payload.
func (p *parser) beforeTool() (Call, error) {
	if err := p.event("BeforeTool"); err != nil {
		return Call{}, err
	}
	c := Call{Framework: Gemini}
	var err error
	if c.SessionID, err = p.str("session_id", true); err != nil {
		return Call{}, err
	}
	if c.Cwd, err = p.dir("cwd"); err != nil {
		return Call{}, err
	}
	if c.ToolName, err = p.str("tool_name", true); err != nil {
		return Call{}, err
	}
	if c.TranscriptPath, err = p.str("transcript_path", false); err != nil {
		return Call{}, err
	}
	if _, err = p.str("timestamp", false); err != nil {
		return Call{}, err
	}
	if c.Input, err = p.object("tool_input"); err != nil {
		return Call{}, err
	}
	if isShellTool(Gemini, c.ToolName) {
		if err := p.shell(&c, "tool_input"); err != nil {
			return Call{}, err
		}
		// run_shell_command runs in dir_path (directory before Gemini
		// renamed it), relative to the workspace when not absolute.
		for _, key := range []string{"dir_path", "directory"} {
			if _, ok := c.Input[key]; !ok {
				continue
			}
			if c.Cwd, err = workdir(p, c.Cwd, c.Input, "tool_input", key); err != nil {
				return Call{}, err
			}
			break
		}
	}
	return c, nil
}

// openCode reads the OpenCodeRequest our plugin sends.
func (p *parser) openCode() (Call, error) {
	raw, ok := p.top["version"]
	if !ok {
		return Call{}, p.fail("version", "missing")
	}
	var version int
	if err := json.Unmarshal(raw, &version); err != nil || version != OpenCodeProtocol {
		return Call{}, p.fail("version", fmt.Sprintf("%s: want %d (the plugin and mitrity-hook are from different releases; render the plugin again)", raw, OpenCodeProtocol))
	}
	c := Call{Framework: OpenCode}
	var err error
	if c.ToolName, err = p.str("tool", true); err != nil {
		return Call{}, err
	}
	if c.SessionID, err = p.str("sessionID", true); err != nil {
		return Call{}, err
	}
	if c.ToolUseID, err = p.str("callID", true); err != nil {
		return Call{}, err
	}
	if c.Cwd, err = p.dir("directory"); err != nil {
		return Call{}, err
	}
	if c.Input, err = p.object("args"); err != nil {
		return Call{}, err
	}
	if isShellTool(OpenCode, c.ToolName) {
		if err := p.shell(&c, "args"); err != nil {
			return Call{}, err
		}
		if _, ok := c.Input["workdir"]; ok {
			if c.Cwd, err = workdir(p, c.Cwd, c.Input, "args", "workdir"); err != nil {
				return Call{}, err
			}
		}
	}
	return c, nil
}

// event checks hook_event_name: a hook registered for the wrong event must
// not be mistaken for a pre-execution check.
func (p *parser) event(want string) error {
	got, err := p.str("hook_event_name", true)
	if err != nil {
		return err
	}
	if got != want {
		return p.fail("hook_event_name", fmt.Sprintf("%q: mitrity-hook %s answers only %s (check the hook registration)", got, p.name, want))
	}
	return nil
}

// str reads a string field. A required field must be present and non-empty.
func (p *parser) str(field string, required bool) (string, error) {
	raw, ok := p.top[field]
	if !ok {
		if required {
			return "", p.fail(field, "missing")
		}
		return "", nil
	}
	s, err := decodeString(raw)
	if err != nil {
		return "", p.fail(field, err.Error())
	}
	if required && s == "" {
		return "", p.fail(field, "empty")
	}
	return s, nil
}

// nullableStr reads an optional field that may be a string or null.
func (p *parser) nullableStr(field string) (string, error) {
	if raw, ok := p.top[field]; ok && string(raw) == "null" {
		return "", nil
	}
	return p.str(field, false)
}

// dir reads a required absolute directory.
func (p *parser) dir(field string) (string, error) {
	s, err := p.str(field, true)
	if err != nil {
		return "", err
	}
	if !filepath.IsAbs(s) {
		return "", p.fail(field, fmt.Sprintf("%q is not an absolute path", s))
	}
	return filepath.Clean(s), nil
}

// object reads a required JSON object field.
func (p *parser) object(field string) (map[string]json.RawMessage, error) {
	raw, ok := p.top[field]
	if !ok {
		return nil, p.fail(field, "missing")
	}
	m, err := decodeObject(raw)
	if err != nil {
		return nil, p.fail(field, err.Error())
	}
	return m, nil
}

// shell fills Shell and Command from the input's "command".
func (p *parser) shell(c *Call, input string) error {
	field := input + ".command"
	raw, ok := c.Input["command"]
	if !ok {
		return p.fail(field, "missing: the shell tool was called without a command")
	}
	cmd, err := decodeString(raw)
	if err != nil {
		return p.fail(field, err.Error())
	}
	switch {
	case strings.TrimSpace(cmd) == "":
		return p.fail(field, "empty")
	case len(cmd) > MaxCommand:
		return p.fail(field, fmt.Sprintf("%d bytes, over the %d-byte limit", len(cmd), MaxCommand))
	}
	c.Shell, c.Command = true, cmd
	return nil
}

// workdir resolves a tool's own working-directory argument against base. An
// empty value means base.
func workdir(p *parser, base string, input map[string]json.RawMessage, prefix, key string) (string, error) {
	s, err := decodeString(input[key])
	if err != nil {
		return "", p.fail(prefix+"."+key, err.Error())
	}
	if s == "" {
		return base, nil
	}
	if filepath.IsAbs(s) {
		return filepath.Clean(s), nil
	}
	return filepath.Join(base, s), nil
}

// decodeString decodes a JSON string that holds no NUL byte.
func decodeString(raw json.RawMessage) (string, error) {
	var s string
	if raw = bytes.TrimSpace(raw); len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return "", fmt.Errorf("want a string, got %s", kind(raw))
	}
	if strings.IndexByte(s, 0) >= 0 {
		return "", errors.New("contains a NUL byte")
	}
	return s, nil
}

// decodeObject decodes one JSON object into its members, refusing a repeated
// key (two readers of the same bytes could pick different values) and
// anything after the object.
func decodeObject(data []byte) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("want a JSON object, got %s", kind(data))
	}
	m := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("not valid JSON: %v", err)
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("not valid JSON: %v", err)
		}
		if _, dup := m[key]; dup {
			return nil, fmt.Errorf("key %q appears twice", key)
		}
		m[key] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("not valid JSON: data after the object")
	}
	return m, nil
}

// kind names the JSON type of raw for an error message.
func kind(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}
