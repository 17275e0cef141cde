package framework

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParse: Parse never panics; it returns an error or a Call that keeps
// every promise of its type, and Answer over that Call exits only 0 or 2.
func FuzzParse(f *testing.F) {
	paths, err := filepath.Glob(filepath.Join("testdata", "payloads", "*", "*.json"))
	if err != nil || len(paths) == 0 {
		f.Fatalf("no seed payloads: %v", err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		for i, n := range Names {
			if filepath.Base(filepath.Dir(p)) == string(n) {
				f.Add(uint8(i), b)
			}
		}
	}
	f.Add(uint8(0), []byte(`{"session_id":"s","cwd":"/","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"\u0000"}}`))
	f.Add(uint8(2), []byte(`{"session_id":"s","cwd":"/","hook_event_name":"BeforeTool","tool_name":"run_shell_command","tool_input":{"command":"ls","dir_path":"../../.."}}`))
	f.Add(uint8(3), []byte(`{"version":1.0,"tool":"shell","sessionID":"s","callID":"c","directory":"/a","args":{"command":"x","workdir":""}}`))

	f.Fuzz(func(t *testing.T, which uint8, payload []byte) {
		name := Names[int(which)%len(Names)]
		c, err := Parse(name, payload)
		if err != nil {
			if c.Framework != "" || c.Input != nil {
				t.Fatalf("error %v with a non-zero Call %+v", err, c)
			}
			return
		}
		if c.Framework != name {
			t.Fatalf("Framework = %q, want %q", c.Framework, name)
		}
		if c.SessionID == "" || c.ToolName == "" || c.Input == nil {
			t.Fatalf("a required field is empty: %+v", c)
		}
		if !filepath.IsAbs(c.Cwd) || filepath.Clean(c.Cwd) != c.Cwd {
			t.Fatalf("Cwd %q is not a clean absolute path", c.Cwd)
		}
		if c.Shell {
			var cmd string
			if err := json.Unmarshal(c.Input["command"], &cmd); err != nil || cmd != c.Command {
				t.Fatalf("Command %q is not Input.command (%s)", c.Command, c.Input["command"])
			}
			if strings.TrimSpace(c.Command) == "" || len(c.Command) > MaxCommand || strings.IndexByte(c.Command, 0) >= 0 || !utf8.ValidString(c.Command) {
				t.Fatalf("unusable Command %q accepted", c.Command)
			}
		} else if c.Command != "" {
			t.Fatalf("Command %q set on a tool that is not the shell tool", c.Command)
		}
		for _, v := range []Verdict{{}, {Decision: Allow}, {Decision: Deny}, {Decision: Ask}, {Decision: Allow, Command: "/bin/mitrity-hook exec t"}, {Decision: Ask, Command: c.Command}} {
			stdout, exit, _ := Answer(c, v)
			if exit != 0 && exit != 2 {
				t.Fatalf("Answer exit %d", exit)
			}
			if exit == 0 && !json.Valid(stdout) {
				t.Fatalf("Answer stdout is not JSON: %q", stdout)
			}
		}
	})
}
