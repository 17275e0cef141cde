package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/mitrity/mitrity/admission"
	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/hook/framework"
)

// AgentVar names the agent id the hook reports; unset, each framework's
// own (framework.Name.Agent).
const AgentVar = "MITRITY_AGENT"

// admitTimeout bounds one admission: a held call may wait in the
// gateway's approval queue for a person, up to the profile's hold
// timeout, so the hook waits long; the framework's own hook timeout
// (rendered by render-settings) is the outer bound.
const admitTimeout = 24 * time.Hour

var socketFlag = &cli.StringFlag{Name: "socket", Usage: "the gateway's admission socket (default: $" + govern.AdmissionSocketVar + ", else the per-user default)"}

func frameworkCommand(name framework.Name) *cli.Command {
	return &cli.Command{
		Name:  string(name),
		Usage: fmt.Sprintf("the %s hook: read its payload on stdin, ask the gateway, answer on stdout (exit 0, or 2 to block)", name.Display()),
		Description: "Every shell call goes to the gateway's admission socket. An allowed call passes unchanged, or, under\n" +
			"builtin_exec_routing: governed_shell, is rewritten to `mitrity-hook exec <ticket>` so the gateway runs it.\n" +
			"Anything that goes wrong (an unreachable gateway, a malformed payload) blocks the call: exit 2.",
		Flags: []cli.Flag{
			socketFlag,
			&cli.StringFlag{Name: "agent", Usage: "the agent id (default: $" + AgentVar + ", else " + name.Agent() + ")"},
		},
		Action: func(c *cli.Context) error { return runFramework(c, name) },
	}
}

// runFramework never returns an error other than an exit code of 2: a
// framework reads any other failure of its hook as "go ahead".
func runFramework(c *cli.Context, name framework.Name) (err error) {
	out, errOut := c.App.Writer, c.App.ErrWriter
	answer := func(stdout []byte, exit int, stderr string) error {
		out.Write(stdout)
		if stderr != "" {
			fmt.Fprintln(errOut, stderr)
		}
		if exit != 0 {
			return cli.Exit("", 2)
		}
		return nil
	}
	defer func() {
		if r := recover(); r != nil {
			err = answer(framework.Block(name, fmt.Sprintf("Mitrity blocked this call: the hook failed (%v).", r)))
		}
	}()
	if c.NArg() > 0 {
		return answer(framework.Block(name, fmt.Sprintf("Mitrity blocked this call: unexpected arguments %q.", c.Args().Slice())))
	}
	payload, err := io.ReadAll(io.LimitReader(os.Stdin, framework.MaxPayload+1))
	if err != nil {
		return answer(framework.Block(name, "Mitrity blocked this call: the hook could not read its payload: "+err.Error()+"."))
	}
	call, err := framework.Parse(name, payload)
	if err != nil {
		return answer(framework.Block(name, "Mitrity blocked this call: "+err.Error()+"."))
	}
	if !call.Shell {
		// Only the shell tool is governed here; the framework's own
		// permission rules decide the rest.
		return answer(framework.Answer(call, framework.Verdict{Decision: framework.Defer}))
	}
	self, err := hookPath()
	if err != nil {
		return answer(framework.Block(name, "Mitrity blocked this call: "+err.Error()+"."))
	}
	agent := agentID(c, name)
	client := admission.Client{Socket: socketPath(c), Timeout: admitTimeout}
	resp, err := client.Admit(context.Background(), admission.AdmitRequest{
		Framework: string(name), Agent: agent, SessionID: call.SessionID, ToolName: call.ToolName,
		ToolUseID: call.ToolUseID, Cwd: call.Cwd, Command: call.Command, PermissionMode: call.PermissionMode,
		TimeoutSeconds: timeoutSeconds(call),
	})
	if err != nil {
		why := err.Error()
		if errors.Is(err, admission.ErrUnreachable) {
			why = "the Mitrity gateway is not reachable (" + err.Error() + "); start it with `mitrity-gateway serve`"
		}
		return answer(framework.Block(name, "Mitrity blocked this call: "+why+"."))
	}
	v := framework.Verdict{Reason: resp.Message}
	switch resp.Decision {
	case admission.Allow:
		v.Decision = framework.Allow
	case admission.Ask:
		v.Decision = framework.Ask
	default:
		v.Decision = framework.Deny
	}
	if v.Decision != framework.Deny && framework.ReferencesHook(call.Command, self) {
		// The relay is the gateway's to issue: a model that runs the
		// hook itself is after a way around it.
		v = framework.Verdict{Decision: framework.Deny, Reason: "denied (invalid_argument): a shell call may not run mitrity-hook itself"}
	}
	if v.Decision != framework.Deny && resp.Routing == admission.RoutingGovernedShell {
		if resp.Ticket == "" {
			return answer(framework.Block(name, "Mitrity blocked this call: the gateway routes it to the governed shell but issued no ticket."))
		}
		relay, err := framework.RelayCommand(self, resp.Ticket)
		if err != nil {
			return answer(framework.Block(name, "Mitrity blocked this call: "+err.Error()+"."))
		}
		if c.IsSet("socket") {
			// The relay must find the socket this hook used; the flag goes
			// before the ticket (flags end at the first argument) and the
			// path must need no quoting.
			sock := c.String("socket")
			if err := framework.CheckHookPath(sock); err != nil {
				return answer(framework.Block(name, "Mitrity blocked this call: --socket "+sock+" cannot be passed to the relay unquoted; set "+govern.AdmissionSocketVar+" instead."))
			}
			relay = strings.Replace(relay, " exec ", " exec --socket "+sock+" ", 1)
		}
		v.Command = relay
	}
	return answer(framework.Answer(call, v))
}

// hookPath is this binary's absolute path: the relay the framework runs
// must be this one, not whatever `mitrity-hook` its PATH finds.
func hookPath() (string, error) {
	p, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("the hook's own path: %w", err)
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	return p, framework.CheckHookPath(p)
}

func agentID(c *cli.Context, name framework.Name) string {
	if a := c.String("agent"); a != "" {
		return a
	}
	if a := os.Getenv(AgentVar); a != "" {
		return a
	}
	return name.Agent()
}

func socketPath(c *cli.Context) string {
	if s := c.String("socket"); s != "" {
		return s
	}
	return govern.AdmissionSocket(os.Geteuid(), os.Getenv)
}

// timeoutSeconds is the timeout the model gave the shell tool (Claude Code,
// Codex and OpenCode: "timeout" in milliseconds), rounded up; 0 when none
// or not a positive number.
func timeoutSeconds(call framework.Call) int {
	raw, ok := call.Input["timeout"]
	if !ok {
		return 0
	}
	var ms float64
	if json.Unmarshal(raw, &ms) != nil || ms <= 0 || ms > 24*3600*1000 {
		return 0
	}
	return int(math.Ceil(ms / 1000))
}
