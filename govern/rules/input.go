package rules

import (
	"encoding/json"
	"path"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/shell"
)

// Input is what rules see: the call and the analyzer's resolved commands,
// flattened into plain values. Field tags name the CEL variables; see
// docs/rules.md for each.
type Input struct {
	Agent   string
	Tool    string
	Action  string
	Surface string
	Cwd     string
	// Command is the judged text (after ${credential:<id>} rewriting).
	Command  string
	Commands []Command
	// Reads and Writes are the paths redirections read and write, in order,
	// duplicates removed; a <> redirection is in both.
	Reads  []string
	Writes []string
	// Flags are the analyzer's flag kinds, duplicates removed.
	Flags []string
	// Opaque is true when any part of the text could not be resolved.
	Opaque bool
	Pins   []Pin
	// Network is true when a redirection opens /dev/tcp or /dev/udp.
	Network bool
	// Credentials are the credential ids the command references.
	Credentials []string
	// Server, UpstreamTool and Arguments describe an upstream MCP tool
	// call: the server, the tool as the server names it, and the JSON
	// arguments object as data.
	Server       string
	UpstreamTool string
	Arguments    map[string]any
	// Home is the HOME the command runs with. It is not a CEL variable: it
	// is what under() expands ~, $HOME and ${HOME} to. Empty leaves those
	// prefixes unexpanded, so they still compare equal to each other.
	Home string
}

// Command is one resolved simple command as rules see it.
type Command struct {
	// Name is the basename of argv[0]: /usr/bin/git and git are both "git",
	// so a rule needs no list of install paths.
	Name string `cel:"name"`
	// Path is argv[0] as written.
	Path string `cel:"path"`
	// Argv are the words; a dynamic word appears as its source text.
	Argv     []string `cel:"argv"`
	Kind     string   `cel:"kind"`
	Wrappers []string `cel:"wrappers"`
	Context  string   `cel:"context"`
	Opaque   bool     `cel:"opaque"`
	// Dynamic is true when any word of argv could not be resolved.
	Dynamic bool `cel:"dynamic"`
}

// Pin is an inspected script whose bytes are what will run.
type Pin struct {
	Path   string `cel:"path"`
	SHA256 string `cel:"sha256"`
}

// InputFrom flattens a call and its analysis. a may be nil (no analysis):
// the command is then the call's text and every list is empty. Cwd is the
// call's as given; the caller sets the resolved one, and Home to the HOME
// the command will run with (both feed under()).
func InputFrom(call govern.Call, a *shell.Analysis) Input {
	in := Input{
		Agent:   call.Agent,
		Tool:    call.Tool,
		Action:  call.ActionType,
		Surface: call.Surface,
		Cwd:     call.Cwd,
		Command: call.Command,
		// Empty, not nil: the CEL view is the same either way, but tests and
		// JSON dumps read better.
		Commands:     []Command{},
		Reads:        []string{},
		Writes:       []string{},
		Flags:        []string{},
		Pins:         []Pin{},
		Credentials:  []string{},
		Server:       call.Server,
		UpstreamTool: call.UpstreamTool,
	}
	if len(call.Arguments) > 0 {
		// Not an object (or not JSON): the rules see no arguments; the
		// edge refuses such a call before it gets here. Numbers decode
		// as float64, which is each number's value exactly: the
		// pipeline's arguments stage refuses, before the rules, an
		// integer a float64 cannot hold and a number past its range.
		_ = json.Unmarshal(call.Arguments, &in.Arguments)
	}
	if a == nil {
		return in
	}
	if a.Text != "" {
		in.Command = a.Text
	}
	in.Opaque = a.Opaque()
	in.Credentials = append(in.Credentials, a.Credentials...)
	reads, writes, flags := set{}, set{}, set{}
	for _, c := range a.Commands {
		in.Commands = append(in.Commands, commandFrom(c))
		for _, r := range c.Redirects {
			if r.Network {
				in.Network = true
			}
			if r.Path == "" {
				continue
			}
			if !r.Write || r.Op == "<>" {
				reads.add(&in.Reads, r.Path)
			}
			if r.Write {
				writes.add(&in.Writes, r.Path)
			}
		}
	}
	for _, f := range a.Flags {
		flags.add(&in.Flags, string(f.Kind))
		if f.Kind == shell.FlagNetworkRedirect {
			in.Network = true
		}
	}
	for _, p := range a.Pins {
		in.Pins = append(in.Pins, Pin{Path: p.Path, SHA256: p.SHA256})
	}
	return in
}

func commandFrom(c shell.Command) Command {
	out := Command{
		Argv:     make([]string, len(c.Argv)),
		Kind:     c.Kind,
		Wrappers: append([]string{}, c.Wrappers...),
		Context:  c.Context,
		Opaque:   c.Opaque != "",
	}
	for i, w := range c.Argv {
		out.Argv[i] = w.Value
		if w.Dynamic {
			out.Dynamic = true
		}
	}
	if len(c.Argv) > 0 {
		out.Path = c.Argv[0].Value
		out.Name = path.Base(out.Path)
		if out.Path == "" {
			out.Name = ""
		}
	}
	return out
}

// set keeps the first occurrence of each string, in order.
type set map[string]bool

func (s set) add(list *[]string, v string) {
	if !s[v] {
		s[v] = true
		*list = append(*list, v)
	}
}
