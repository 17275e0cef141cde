package audit

import (
	"sync"
	"testing"
	"time"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/dlp"
	"github.com/mitrity/mitrity/govern/shell"
	"gotest.tools/v3/assert"
)

// fixedTime is the clock of every fixture.
var fixedTime = time.Date(2026, 3, 14, 9, 26, 53, 589793000, time.UTC)

// countingReader yields 0x00, 0x01, ... so event ids are deterministic.
type countingReader struct {
	mu sync.Mutex
	n  byte
}

func (r *countingReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range p {
		p[i] = r.n
		r.n++
	}
	return len(p), nil
}

func testBuilder() Builder {
	return Builder{
		Source: SourcePrefix + "build-host",
		Now:    func() time.Time { return fixedTime },
		Rand:   &countingReader{},
	}
}

func mode(m govern.SandboxMode) *govern.SandboxMode { return &m }

// deployAnalysis is a hand-made analysis of `bash ./deploy.sh` so goldens
// do not depend on temporary paths.
func deployAnalysis() *shell.Analysis {
	return &shell.Analysis{
		Dialect:     shell.DialectBash,
		SHA256:      "4b1d5a4c2f0e9b8a7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a39281706",
		Credentials: []string{"github_token"},
		Commands: []shell.Command{
			{Argv: []shell.Word{{Value: "bash"}, {Value: "./deploy.sh"}}, Kind: "external"},
			{Argv: []shell.Word{{Value: "git"}, {Value: "push"}, {Value: "origin"}, {Value: "$BRANCH", Dynamic: true}},
				Kind: "external", Context: "script:/workspace/deploy.sh"},
			{Argv: []shell.Word{{Value: "curl"}, {Value: "-sS"}, {Value: "https://api.github.com/repos/acme/app/deployments"}},
				Kind: "external", Context: "script:/workspace/deploy.sh",
				Redirects: []shell.Redirect{{Op: ">", Path: "/workspace/out.json", Write: true}}},
		},
		Pins: []govern.Pin{{Path: "/workspace/deploy.sh", RealPath: "/workspace/deploy.sh",
			SHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", Size: 412, Dialect: "bash",
			Bytes: []byte("#!/bin/bash\ngit push origin \"$BRANCH\"\n")}},
		Flags: []shell.Flag{{Kind: shell.FlagWritableExecutable, Detail: "/workspace/deploy.sh is inside a writable root"}},
	}
}

func deployCall() govern.Call {
	return govern.Call{
		Agent: "claude-build-7", Tool: govern.ToolShellExecute, ActionType: govern.ActionShellExecute,
		Surface: "mcp", Session: "sess-42", Command: "bash ./deploy.sh", Cwd: "/workspace",
	}
}

// completedRecord is a full-strength run with every card section filled.
func completedRecord() Record {
	return Record{
		Call:     deployCall(),
		Decision: govern.Decision{Outcome: govern.Allow, Stage: "rules", Rule: "allow-deploy"},
		Analysis: deployAnalysis(),
		Run: &Run{
			Status: govern.StatusCompleted, SandboxMode: mode(govern.SandboxBubblewrap), ExitCode: 3,
			Duration: 1843 * time.Millisecond, TimeoutSeconds: 120,
			Stdout:         Output{Redacted: []byte("deployed [REDACTED:credential:github_token]\n"), Produced: 70_000, Discarded: 4_464, Truncated: true},
			Stderr:         Output{Redacted: []byte("warning: slow\n"), Produced: 14},
			RedactionCount: 1,
			Pins:           deployAnalysis().Pins, PinMethod: PinBind,
			CredentialsInjected: []string{"github_token"},
			EgressAllowed:       2, EgressDenied: 3,
			DeniedHosts: []string{"evil.example:443", "169.254.169.254:80", "evil.example:443"},
			Limits: map[Limit]LimitEnforcement{
				LimitProcessCount: {true, MechanismCgroup},
				LimitMemory:       {true, MechanismCgroup},
				LimitTmpfsSize:    {true, MechanismTmpfs},
				LimitFileSize:     {true, MechanismRlimit},
				LimitDaemonKill:   {true, MechanismPidNS},
			},
		},
	}
}

// deniedRecord: no backend and sandbox_required: true, so nothing ran.
func deniedRecord() Record {
	return Record{
		Call:     deployCall(),
		Decision: govern.Decision{Outcome: govern.Deny, Reason: govern.ReasonSandboxUnavailable, Stage: "executor", Message: "no sandbox backend is available on this host and the policy requires one"},
		Analysis: deployAnalysis(),
		Run: &Run{
			Status: govern.StatusNeverRan, Reason: govern.ReasonSandboxUnavailable,
			SandboxMode: mode(govern.SandboxUnavailableDenied), TimeoutSeconds: 120,
		},
	}
}

// unsandboxedRecord: sandbox_required: false, no backend; ran, timed out.
func unsandboxedRecord() Record {
	return Record{
		Call:     govern.Call{Agent: "ops-bot", Tool: "Bash", ActionType: govern.ActionShellExecute, Surface: "agent_hook"},
		Decision: govern.Decision{Outcome: govern.Allow},
		Analysis: &shell.Analysis{Dialect: shell.DialectSh, SHA256: "0d2f6f0f3c5ab1b1b7c6f9b4c2a8e1d2f3a4b5c6d7e8f9011223344556677889",
			Commands: []shell.Command{{Argv: []shell.Word{{Value: "sleep"}, {Value: "600"}}, Kind: "external"}}},
		LinkedEventID: "0f0e0d0c-0b0a-4908-8706-050403020100",
		Run: &Run{
			Status: govern.StatusTimedOut, SandboxMode: mode(govern.SandboxNone),
			Duration: 30*time.Second + 5*time.Millisecond, TimeoutSeconds: 30,
			Stdout: Output{Truncated: true}, Stderr: Output{},
			Limits: map[Limit]LimitEnforcement{LimitFileSize: {true, MechanismRlimit}},
		},
	}
}

// policyDeniedRecord: a rule denied; nothing attempted, so no card.
func policyDeniedRecord() Record {
	return Record{
		Call:     deployCall(),
		Decision: govern.Decision{Outcome: govern.Deny, Reason: "rule_denied", Stage: "rules", Rule: "no-force-push", Message: "git push --force is not allowed"},
		Analysis: deployAnalysis(),
	}
}

func mustBuild(t *testing.T, b Builder, r Record) *Event {
	t.Helper()
	ev, err := b.Build(r)
	assert.NilError(t, err)
	return ev
}

// scrubOf is the scrubber the gateway passes: a credential redactor over
// secrets (id -> value).
func scrubOf(t *testing.T, secrets map[string]string) Scrubber {
	t.Helper()
	var list []dlp.Secret
	for id, v := range secrets {
		list = append(list, dlp.Secret{ID: id, Value: v})
	}
	r, err := dlp.NewRedactor(list)
	if err != nil {
		t.Fatal(err)
	}
	return redactorScrubber{r}
}

type redactorScrubber struct{ r *dlp.Redactor }

func (s redactorScrubber) Matches(b []byte) []dlp.Match { return s.r.Matches(b) }

func (s redactorScrubber) Pieces(texts []string) [][]dlp.Match { return s.r.Pieces(texts) }

func (s redactorScrubber) Scrub(v string) string {
	out, _ := s.r.Redact([]byte(v))
	return string(out)
}
