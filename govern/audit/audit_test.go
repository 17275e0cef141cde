package audit

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/shell"
	"github.com/rs/zerolog"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
	"gotest.tools/v3/golden"
)

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "audit", "events.jsonl")
	w, err := OpenWriter(path)
	assert.NilError(t, err)
	b := testBuilder()
	var want []*Event
	for _, r := range []Record{completedRecord(), deniedRecord(), unsandboxedRecord(), policyDeniedRecord()} {
		ev := mustBuild(t, b, r)
		assert.NilError(t, w.Write(ev))
		want = append(want, ev)
	}
	assert.NilError(t, w.Close())
	assert.Equal(t, w.Errors(), uint64(0))

	got, err := ReadAll(path, Filter{})
	assert.NilError(t, err)
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("read back differs (-wrote +read):\n%s", d)
	}

	fi, err := os.Stat(path)
	assert.NilError(t, err)
	assert.Equal(t, fi.Mode().Perm(), os.FileMode(0o600))
	di, err := os.Stat(filepath.Dir(path))
	assert.NilError(t, err)
	assert.Equal(t, di.Mode().Perm(), os.FileMode(0o700))

	raw, err := os.ReadFile(path)
	assert.NilError(t, err)
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	assert.Equal(t, len(lines), 4)
	// The envelope, as a CloudEvents consumer sees it.
	var env map[string]any
	assert.NilError(t, json.Unmarshal([]byte(lines[0]), &env))
	assert.Equal(t, env["specversion"], "1.0")
	assert.Equal(t, env["type"], TypeExecution)
	assert.Equal(t, env["source"], "mitrity-gateway://build-host")
	assert.Equal(t, env["subject"], "claude-build-7")
	assert.Equal(t, env["datacontenttype"], "application/json")
	assert.Equal(t, env["time"], "2026-03-14T09:26:53.589793Z")
	assert.Assert(t, regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(env["id"].(string)), env["id"])
	// exit_code is present as null on a non-completed card, and
	// sandbox_mode is absent when the gateway vouches for nothing.
	assert.Assert(t, strings.Contains(lines[2], `"exit_code":null`), lines[2])
	assert.Assert(t, strings.Contains(lines[3], `"type":"dev.mitrity.decision"`), lines[3])
	assert.Assert(t, !strings.Contains(lines[3], `"execution"`), lines[3])
}

func TestWriteAppendsToExistingFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "events.jsonl")
	b := testBuilder()
	for range 2 {
		w, err := OpenWriter(path)
		assert.NilError(t, err)
		assert.NilError(t, w.Write(mustBuild(t, b, completedRecord())))
		assert.NilError(t, w.Close())
	}
	got, err := ReadAll(path, Filter{})
	assert.NilError(t, err)
	assert.Equal(t, len(got), 2)
}

func TestConcurrentWriters(t *testing.T) {
	t.Parallel()
	const writers, goroutines, perGoroutine = 2, 8, 40
	path := filepath.Join(t.TempDir(), "events.jsonl")
	// Two Writers on one file stand in for two processes (the serving
	// gateway and a one-off exec) appending to the same trail.
	var ws []*Writer
	for range writers {
		w, err := OpenWriter(path)
		assert.NilError(t, err)
		ws = append(ws, w)
	}
	b := Builder{Source: "mitrity-gateway://race"} // real ids, real clock
	var wg sync.WaitGroup
	for i := range writers * goroutines {
		w := ws[i%writers]
		wg.Go(func() {
			for range perGoroutine {
				ev, err := b.Build(completedRecord())
				if err != nil {
					t.Error(err)
					return
				}
				if err := w.Write(ev); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	for _, w := range ws {
		assert.Equal(t, w.Errors(), uint64(0))
		assert.NilError(t, w.Close())
	}

	f, err := os.Open(path)
	assert.NilError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	ids := map[string]bool{}
	n := 0
	for sc.Scan() {
		n++
		var ev Event
		assert.NilError(t, json.Unmarshal(sc.Bytes(), &ev), "line %d", n)
		assert.NilError(t, ev.Validate(), "line %d", n)
		assert.Assert(t, !ids[ev.ID], "duplicate id %s", ev.ID)
		ids[ev.ID] = true
	}
	assert.NilError(t, sc.Err())
	assert.Equal(t, n, writers*goroutines*perGoroutine)
}

func TestWriterRefusesInvalidAndClosed(t *testing.T) {
	t.Parallel()
	w, err := OpenWriter(filepath.Join(t.TempDir(), "events.jsonl"))
	assert.NilError(t, err)
	ev := mustBuild(t, testBuilder(), completedRecord())
	bad := *ev
	bad.Data.Surface = "carrier_pigeon"
	assert.ErrorIs(t, w.Write(&bad), ErrInvalidEvent)
	assert.ErrorIs(t, w.Write(nil), ErrInvalidEvent)
	assert.Equal(t, w.Errors(), uint64(2))
	assert.NilError(t, w.Close())
	assert.ErrorIs(t, w.Write(ev), ErrClosed)
	assert.Equal(t, w.Errors(), uint64(3))
	assert.NilError(t, w.Close()) // idempotent
}

func TestOpenWriterRefusesNonRegularFile(t *testing.T) {
	t.Parallel()
	_, err := OpenWriter(t.TempDir()) // a directory
	assert.Assert(t, err != nil)
}

// secret is a GitHub token shape: ghp_ and 36 characters.
const secret = "ghp_Zq8rT2vX9kLm4Nw7Pb1Hc6Jd3Fs5Gy0Ua2Ei"

// TestSecretNeverRecorded builds an event from a run in which the secret is
// in every input the caller has — the command text, stdin, agent env,
// a pinned script's body, both output streams (raw and encoded), the
// decision message, a pipeline error, a refused destination and the
// credential map — and checks that neither the marshalled event nor the
// audit file contains it in any form.
func TestSecretNeverRecorded(t *testing.T) {
	t.Parallel()
	assert.Equal(t, len(secret), 40)
	ws := t.TempDir()
	script := "#!/bin/bash\n# fallback token " + secret + "\necho \"token=" + secret + "\"\ncurl -sS https://api.github.com/user\n"
	assert.NilError(t, os.WriteFile(filepath.Join(ws, "deploy.sh"), []byte(script), 0o700))
	text := "GITHUB_TOKEN=${credential:github_token} bash ./deploy.sh && echo " + secret
	a := shell.Analyze(shell.Input{
		Text: text, Dialect: shell.DialectBash, Cwd: ws, Path: []string{"/usr/bin", "/bin"},
		InspectionRoots: []string{ws}, WritableRoots: []string{ws}, CredentialVars: []string{"GITHUB_TOKEN"},
		Stdin: []byte("password: " + secret + "\n"),
	})
	assert.Assert(t, a.Denial == nil, "%+v", a.Denial)
	assert.Assert(t, len(a.Pins) == 1 && bytes.Contains(a.Pins[0].Bytes, []byte(secret)), "the fixture must pin the script with the secret in its body")

	raw := "GITHUB_TOKEN=" + secret + "\n" + base64.StdEncoding.EncodeToString([]byte(secret)) + "\n"
	r := Record{
		Call: govern.Call{
			Agent: "claude-build-7", Tool: govern.ToolShellExecute, ActionType: govern.ActionShellExecute, Surface: "mcp",
			Command: text, Cwd: ws, Stdin: []byte("password: " + secret + "\n"), Env: map[string]string{"DEPLOY_KEY": secret},
		},
		Decision: govern.Decision{Outcome: govern.Allow, Stage: "dlp", Message: "argument matched github_token pattern near " + secret},
		Err:      errors.New("threat intel feed stale; last entry mentioned " + secret),
		Analysis: a,
		Run: &Run{
			Status: govern.StatusCompleted, SandboxMode: mode(govern.SandboxBubblewrap), TimeoutSeconds: 120,
			Stdout:         Output{Redacted: []byte(raw), Produced: int64(len(raw))},
			Stderr:         Output{Redacted: []byte(secret), Produced: int64(len(secret))},
			RedactionCount: 2, Pins: a.Pins, PinMethod: PinBind,
			CredentialsInjected: []string{"github_token"},
			EgressDenied:        1, DeniedHosts: []string{secret + ".evil.example:443"},
		},
		Scrub: scrubOf(t, map[string]string{"github_token": secret}),
	}
	ev := mustBuild(t, testBuilder(), r)
	b, err := json.Marshal(ev)
	assert.NilError(t, err)
	assertNoSecret(t, "marshalled event", b)
	// The credential was referenced and injected, and it is named by id.
	assert.Assert(t, bytes.Contains(b, []byte(`"credentials_injected":["github_token"]`)), string(b))
	assert.Assert(t, bytes.Contains(b, []byte(`[REDACTED:credential:github_token]`)), string(b))

	path := filepath.Join(t.TempDir(), "events.jsonl")
	w, err := OpenWriter(path)
	assert.NilError(t, err)
	assert.NilError(t, w.Write(ev))
	assert.NilError(t, w.Close())
	file, err := os.ReadFile(path)
	assert.NilError(t, err)
	assertNoSecret(t, "audit file", file)

	var buf bytes.Buffer
	assert.NilError(t, RenderCard(&buf, ev))
	assertNoSecret(t, "rendered card", buf.Bytes())
	buf.Reset()
	LogDecision(zerolog.New(&buf), ev)
	assertNoSecret(t, "canonical log line", buf.Bytes())
}

func assertNoSecret(t *testing.T, what string, b []byte) {
	t.Helper()
	for _, form := range []string{
		secret,
		secret[4:], // the token body without its prefix
		base64.StdEncoding.EncodeToString([]byte(secret)),
		base64.RawURLEncoding.EncodeToString([]byte(secret)),
		hex.EncodeToString([]byte(secret)),
		url.QueryEscape(secret),
	} {
		if i := bytes.Index(b, []byte(form)); i >= 0 {
			t.Errorf("%s holds the secret (form %q) at byte %d: ...%s...", what, form, i, b[max(0, i-60):min(len(b), i+60)])
		}
	}
}

// TestEventHasNowhereForBytes walks the Event type: no []byte, no
// interface, no json.RawMessage — nothing that could carry output bytes, a
// script body or a credential value by accident.
func TestEventHasNowhereForBytes(t *testing.T) {
	t.Parallel()
	var walk func(path string, typ reflect.Type)
	seen := map[reflect.Type]bool{}
	walk = func(path string, typ reflect.Type) {
		if seen[typ] {
			return
		}
		seen[typ] = true
		switch typ.Kind() {
		case reflect.Interface:
			t.Errorf("%s is an interface", path)
		case reflect.Slice, reflect.Array:
			if typ.Elem().Kind() == reflect.Uint8 {
				t.Errorf("%s is a byte slice", path)
			}
			walk(path+"[]", typ.Elem())
		case reflect.Pointer:
			walk(path, typ.Elem())
		case reflect.Map:
			walk(path+"{}", typ.Elem())
		case reflect.Struct:
			if typ == reflect.TypeFor[time.Time]() {
				return
			}
			for i := range typ.NumField() {
				f := typ.Field(i)
				walk(path+"."+f.Name, f.Type)
			}
		}
	}
	walk("Event", reflect.TypeFor[Event]())
}

func TestClosedVocabulariesRefuseUnknownWords(t *testing.T) {
	t.Parallel()
	ev := mustBuild(t, testBuilder(), completedRecord())
	good, err := json.Marshal(ev)
	assert.NilError(t, err)
	for _, tc := range []struct{ name, from, to string }{
		{"sandbox_mode", `"sandbox_mode":"bubblewrap"`, `"sandbox_mode":"bwrap"`},
		{"sandbox_mode none spelled differently", `"sandbox_mode":"bubblewrap"`, `"sandbox_mode":"no_sandbox"`},
		{"status", `"status":"completed"`, `"status":"done"`},
		{"status in prose", `"status":"completed"`, `"status":"never ran"`},
		{"outcome", `"outcome":"allow"`, `"outcome":"permit"`},
		{"surface", `"surface":"mcp"`, `"surface":"http"`},
		{"pin_method", `"pin_method":"bind"`, `"pin_method":"mount"`},
		{"limit name", `"process_count":`, `"cpu_time":`},
		{"mechanism", `"mechanism":"rlimit"`, `"mechanism":"ulimit"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Assert(t, bytes.Contains(good, []byte(tc.from)), "fixture lacks %s", tc.from)
			bad := bytes.Replace(good, []byte(tc.from), []byte(tc.to), 1)
			var got Event
			err := json.Unmarshal(bad, &got)
			if err == nil {
				err = got.Validate()
			}
			assert.Assert(t, err != nil, "accepted %s", tc.to)
		})
	}

	// Writing refuses too: an unset enum cannot be marshalled.
	_, err = json.Marshal(Execution{})
	assert.ErrorContains(t, err, "invalid status")
	var m govern.SandboxMode
	_, err = json.Marshal(&m)
	assert.ErrorContains(t, err, "invalid sandbox_mode")
}

func TestValidateCardConsistency(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		mutate func(*Execution)
		want   string
	}{
		{"exit code on a timeout", func(x *Execution) { x.Status, x.ExitCode = govern.StatusTimedOut, new(int) }, "exit_code"},
		{"no exit code when completed", func(x *Execution) { x.ExitCode = nil }, "exit_code"},
		{"reason on completed", func(x *Execution) { x.Reason = govern.ReasonSpawnError }, "reason"},
		{"reason outside the set", func(x *Execution) {
			x.Status, x.ExitCode, x.Reason = govern.StatusFailedToStart, nil, govern.ReasonCredentialInArgv
		}, "reason"},
		{"unavailable_denied that ran", func(x *Execution) { x.SandboxMode = mode(govern.SandboxUnavailableDenied) }, "unavailable_denied"},
		{"invalid mode", func(x *Execution) { x.SandboxMode = mode(0) }, "sandbox_mode"},
		{"a limit missing", func(x *Execution) { delete(x.LimitsEnforced, LimitMemory) }, "limits_enforced.memory is missing"},
		{"enforced without mechanism", func(x *Execution) { x.LimitsEnforced[LimitMemory] = LimitEnforcement{Enforced: true} }, "limits_enforced.memory"},
		{"mechanism without enforcement", func(x *Execution) { x.LimitsEnforced[LimitMemory] = LimitEnforcement{Mechanism: MechanismCgroup} }, "limits_enforced.memory"},
		{"unknown pin method", func(x *Execution) { x.PinnedScripts[0].PinMethod = "hardlink" }, "pin_method"},
		{"too many denied hosts", func(x *Execution) {
			x.Egress.DeniedHosts = make([]string, 17)
			x.Egress.Denied = 17
		}, "denied_hosts"},
		{"discarded above produced", func(x *Execution) { x.Stdout.DiscardedBytes = x.Stdout.Bytes + 1 }, "stream sizes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ev := mustBuild(t, testBuilder(), completedRecord())
			tc.mutate(ev.Data.Execution)
			err := ev.Validate()
			assert.ErrorIs(t, err, ErrInvalidEvent)
			assert.ErrorContains(t, err, tc.want)
		})
	}

	ev := mustBuild(t, testBuilder(), policyDeniedRecord())
	ev.Type = TypeExecution
	assert.ErrorContains(t, ev.Validate(), "without an execution card")
	ev = mustBuild(t, testBuilder(), completedRecord())
	ev.Data.BlockedBy = "rules"
	assert.ErrorContains(t, ev.Validate(), "blocked_by")
}

func TestBuild(t *testing.T) {
	t.Parallel()
	b := testBuilder()

	ev := mustBuild(t, b, completedRecord())
	x := ev.Data.Execution
	assert.Equal(t, ev.Type, TypeExecution)
	assert.Equal(t, *x.ExitCode, 3) // a non-zero exit is a result on an allowed event
	assert.Equal(t, ev.Data.Decision.Outcome, OutcomeAllow)
	assert.Equal(t, ev.Data.BlockedBy, "")
	assert.DeepEqual(t, x.Egress, Egress{Allowed: 2, Denied: 3, DeniedHosts: []string{"evil.example:443", "169.254.169.254:80"}})
	assert.Equal(t, x.OutputBytes, int64(len("deployed [REDACTED:credential:github_token]\n")+len("warning: slow\n")))
	assert.Equal(t, len(x.OutputSHA256), 64)
	assert.DeepEqual(t, ev.Data.Command.Resolved[1].Dynamic, []int{3})
	assert.DeepEqual(t, x.PinnedScripts, []PinnedScript{{Path: "/workspace/deploy.sh", SHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", Size: 412, PinMethod: PinBind}})

	ev = mustBuild(t, b, deniedRecord())
	assert.Equal(t, ev.Data.BlockedBy, BlockedByCommand)
	assert.Assert(t, ev.Data.Execution.ExitCode == nil)
	assert.Equal(t, ev.Data.Execution.OutputSHA256, "")
	for _, l := range Limits() {
		assert.Equal(t, ev.Data.Execution.LimitsEnforced[l], LimitEnforcement{}, "every limit is reported, not enforced, when nothing ran")
	}

	ev = mustBuild(t, b, policyDeniedRecord())
	assert.Equal(t, ev.Type, TypeDecision)
	assert.Equal(t, ev.Data.BlockedBy, "rules")
	assert.Assert(t, ev.Data.Execution == nil)

	// Many denied destinations: the first 16 distinct are kept, the count
	// stays the proxy's.
	r := completedRecord()
	r.Run.DeniedHosts = nil
	for i := range 40 {
		r.Run.DeniedHosts = append(r.Run.DeniedHosts, "h"+string(rune('a'+i%20))+".example:443")
	}
	r.Run.EgressDenied = 40
	ev = mustBuild(t, b, r)
	assert.Equal(t, len(ev.Data.Execution.Egress.DeniedHosts), 16)
	assert.Equal(t, ev.Data.Execution.Egress.Denied, 40)

	// Build refuses what Validate refuses.
	r = completedRecord()
	r.Call.Surface = "smoke_signal"
	_, err := b.Build(r)
	assert.ErrorIs(t, err, ErrInvalidEvent)
}

func TestBlockedBy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d    govern.Decision
		want string
	}{
		{govern.Decision{Outcome: govern.Allow}, ""},
		{govern.Decision{Outcome: govern.Hold, Stage: "hold"}, ""},
		{govern.Decision{Outcome: govern.Deny, Reason: govern.ReasonCredentialInArgv, Stage: "command_analysis"}, "command"},
		{govern.Decision{Outcome: govern.Deny, Reason: govern.ReasonCwdOutsideWorkspace, Stage: "executor"}, "command"},
		{govern.Decision{Outcome: govern.Deny, Reason: govern.ReasonSandboxUnavailable, Stage: "executor"}, "command"},
		{govern.Decision{Outcome: govern.Deny, Reason: govern.ReasonModifiedOutsideGovernance}, "command"},
		{govern.Decision{Outcome: govern.Deny, Reason: govern.ReasonCommandAnalysisOff, Stage: "command_analysis"}, "command"},
		{govern.Decision{Outcome: govern.Deny, Reason: govern.ReasonParseError}, "command"},
		{govern.Decision{Outcome: govern.Deny, Reason: "tool_denied", Stage: "tool_permission"}, "tool_permission"},
	} {
		assert.Equal(t, BlockedBy(tc.d), tc.want, "%+v", tc.d)
	}
}

func TestNewID(t *testing.T) {
	t.Parallel()
	re := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for range 1000 {
		id, err := Builder{}.Build(completedRecord())
		assert.NilError(t, err)
		assert.Assert(t, re.MatchString(id.ID), id.ID)
		assert.Assert(t, !seen[id.ID])
		seen[id.ID] = true
	}
	_, err := NewID(strings.NewReader("short"))
	assert.ErrorContains(t, err, "event id")
}

func TestReadFilter(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "events.jsonl")
	w, err := OpenWriter(path)
	assert.NilError(t, err)
	clock := fixedTime
	b := testBuilder()
	b.Now = func() time.Time { clock = clock.Add(time.Minute); return clock }
	for _, r := range []Record{completedRecord(), deniedRecord(), unsandboxedRecord(), policyDeniedRecord()} {
		assert.NilError(t, w.Write(mustBuild(t, b, r)))
	}
	assert.NilError(t, w.Close())

	count := func(f Filter) int {
		t.Helper()
		evs, err := ReadAll(path, f)
		assert.NilError(t, err)
		return len(evs)
	}
	assert.Equal(t, count(Filter{}), 4)
	assert.Equal(t, count(Filter{SandboxMode: "bubblewrap"}), 1)
	assert.Equal(t, count(Filter{SandboxMode: "unavailable_denied"}), 1)
	assert.Equal(t, count(Filter{SandboxMode: "none"}), 1)
	assert.Equal(t, count(Filter{SandboxMode: "seatbelt"}), 0)
	assert.Equal(t, count(Filter{Status: "never_ran"}), 1)
	assert.Equal(t, count(Filter{Status: "timed_out", Agent: "ops-bot"}), 1)
	assert.Equal(t, count(Filter{Agent: "claude-build-7"}), 3)
	assert.Equal(t, count(Filter{Since: fixedTime.Add(3 * time.Minute)}), 2)

	_, err = ReadAll(path, Filter{SandboxMode: "bubblewrp"})
	assert.ErrorContains(t, err, "unknown sandbox_mode")
	_, err = ReadAll(path, Filter{Status: "never ran"})
	assert.ErrorContains(t, err, "unknown status")

	ev, err := Find(path, mustBuild(t, testBuilder(), completedRecord()).ID)
	assert.NilError(t, err)
	assert.Equal(t, ev.Data.Agent, "claude-build-7")
	_, err = Find(path, "nope")
	assert.ErrorContains(t, err, "not found")
}

func TestReadSurvivesDamagedLines(t *testing.T) {
	t.Parallel()
	ev := mustBuild(t, testBuilder(), completedRecord())
	good, err := json.Marshal(ev)
	assert.NilError(t, err)
	in := string(good) + "\n" + `{"specversion":"1.0","id":"torn` + "\n\n" + string(good) + "\n" +
		strings.Replace(string(good), `"status":"completed"`, `"status":"finished"`, 1) + "\n" + string(good) // no final newline
	evs, err := Read(strings.NewReader(in), Filter{})
	assert.Equal(t, len(evs), 3)
	var le *LineError
	assert.Assert(t, errors.As(err, &le), "%v", err)
	assert.Equal(t, le.Line, 2)
	assert.ErrorContains(t, err, "line 5:")
}

func TestLogDecision(t *testing.T) {
	t.Parallel()
	b := testBuilder()
	withErr := policyDeniedRecord()
	withErr.Decision = govern.Decision{Outcome: govern.Allow}
	withErr.Err = errors.New("policy reload failed")
	monitor := completedRecord()
	monitor.WouldDeny = true
	for _, tc := range []struct {
		name   string
		r      Record
		level  string
		fields map[string]any
	}{
		{"allow", completedRecord(), "info", map[string]any{
			FieldAllow: true, FieldReason: "", FieldRule: "allow-deploy", FieldWouldDeny: false, FieldErr: "",
			FieldOutcome: "allow", FieldStatus: "completed", FieldSandboxMode: "bubblewrap", FieldExitCode: 3.0,
			FieldAgent: "claude-build-7", FieldCommandSHA256: deployAnalysis().SHA256, FieldEgressDenied: 3.0,
		}},
		{"monitor", monitor, "info", map[string]any{FieldAllow: true, FieldWouldDeny: true}},
		{"hard denial", deniedRecord(), "warn", map[string]any{
			FieldAllow: false, FieldReason: "sandbox_unavailable", FieldBlockedBy: "command",
			FieldStatus: "never_ran", FieldExecReason: "sandbox_unavailable", FieldSandboxMode: "unavailable_denied",
		}},
		{"rule denial", policyDeniedRecord(), "warn", map[string]any{FieldAllow: false, FieldRule: "no-force-push", FieldBlockedBy: "rules"}},
		{"pipeline error", withErr, "error", map[string]any{FieldErr: "policy reload failed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			ev := mustBuild(t, b, tc.r)
			LogDecision(zerolog.New(&buf), ev)
			lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
			assert.Equal(t, len(lines), 1, "one canonical line per decision")
			var got map[string]any
			assert.NilError(t, json.Unmarshal([]byte(lines[0]), &got))
			assert.Equal(t, got["message"], CanonicalDecision)
			assert.Equal(t, got["level"], tc.level)
			assert.Equal(t, got[FieldEventID], ev.ID)
			for k, v := range tc.fields {
				assert.Check(t, is.DeepEqual(got[k], v), "field %s", k)
			}
		})
	}
}

func TestRenderCardGolden(t *testing.T) {
	t.Parallel()
	for name, r := range map[string]Record{
		"card-completed.golden":   completedRecord(),
		"card-denied.golden":      deniedRecord(),
		"card-unsandboxed.golden": unsandboxedRecord(),
		"card-decision.golden":    policyDeniedRecord(),
	} {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			assert.NilError(t, RenderCard(&buf, mustBuild(t, testBuilder(), r)))
			golden.Assert(t, buf.String(), name)
		})
	}
}

func TestRenderListGolden(t *testing.T) {
	t.Parallel()
	b := testBuilder()
	var evs []*Event
	for _, r := range []Record{completedRecord(), deniedRecord(), unsandboxedRecord(), policyDeniedRecord()} {
		evs = append(evs, mustBuild(t, b, r))
	}
	var buf bytes.Buffer
	assert.NilError(t, RenderList(&buf, evs))
	assert.Equal(t, strings.Count(buf.String(), "\n"), 1+len(evs), "a header and one line per event")
	golden.Assert(t, buf.String(), "list.golden")
}

// TestDocsNameEveryField keeps docs/audit.md honest: every key path of a
// fully populated event must appear in it.
func TestDocsNameEveryField(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/audit.md")
	assert.NilError(t, err)
	r := completedRecord()
	r.LinkedEventID = "x"
	r.WouldDeny = true
	r.Err = errors.New("x")
	r.Decision.Reason, r.Decision.Message = "x", "x"
	r.Call.Stdin = []byte("x")
	r.Analysis.Commands[0].Wrappers = []string{"sudo"}
	r.Analysis.Commands[0].Opaque = "x"
	r.Analysis.Commands[0].Redirects = []shell.Redirect{{Op: ">", Path: "/dev/tcp/x/1", Write: true, Dynamic: true, Network: true}}
	ev := mustBuild(t, testBuilder(), r)
	ev.Data.Execution.Reason = "x" // only the key matters here
	b, err := json.Marshal(ev)
	assert.NilError(t, err)
	var m map[string]any
	assert.NilError(t, json.Unmarshal(b, &m))
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, sub := range v {
				p := k
				if prefix != "" {
					p = prefix + "." + k
				}
				if prefix == "data.execution.limits_enforced" {
					p = prefix + ".<limit>"
				}
				if !bytes.Contains(doc, []byte("`"+p+"`")) {
					t.Errorf("docs/audit.md does not name `%s`", p)
				}
				walk(p, sub)
			}
		case []any:
			for _, sub := range v {
				walk(prefix+"[]", sub)
			}
		}
	}
	walk("", m)
}

// TestRenderUpstreamCards: `audit show` of an upstream call and of a
// judged definition shows their own cards (not "nothing was attempted").
func TestRenderUpstreamCards(t *testing.T) {
	t.Parallel()
	call := govern.Call{Agent: "ci", Surface: govern.SurfaceMCP, Tool: "fs__read_file", ActionType: "mcp:fs__read_file", Server: "fs", UpstreamTool: "read_file"}
	for name, tc := range map[string]struct {
		u *UpstreamCall
		d *ToolDefinition
	}{
		"card-upstream-call.golden": {u: &UpstreamCall{Server: "fs", Method: "tools/call", Name: "read_file", Status: govern.StatusCompleted,
			ArgumentsBytes: 30, ArgumentsSHA256: HashOf([]byte("args")), ResultBytes: 88, ResultSHA256: HashOf([]byte("result")),
			RedactionCount: 2, DurationMS: 4, Injection: []string{"role_marker"}, InjectionAction: "flag"}},
		"card-tool-definition.golden": {d: &ToolDefinition{Server: "fs", Tool: "read_file", Served: "fs__read_file",
			SHA256: HashOf([]byte("new")), Previous: HashOf([]byte("old")), State: DefinitionWithheld, Reason: govern.ReasonToolDefinitionChanged}},
	} {
		t.Run(name, func(t *testing.T) {
			d := govern.Decision{Outcome: govern.Allow}
			if tc.d != nil {
				d = govern.Decision{Outcome: govern.Deny, Reason: tc.d.Reason, Stage: "tool_definition", Message: "withheld"}
			}
			ev, err := testBuilder().BuildUpstream(Record{Call: call, Decision: d}, tc.u, tc.d)
			assert.NilError(t, err)
			var buf bytes.Buffer
			assert.NilError(t, RenderCard(&buf, ev))
			assert.Check(t, !strings.Contains(buf.String(), "Nothing was attempted"), buf.String())
			golden.Assert(t, buf.String(), name)
		})
	}
}
