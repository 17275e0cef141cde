package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// auditDLPPolicy binds one detector only: the audit is redacted by every
// detector whatever a profile binds.
const auditDLPPolicy = `default_agent:
  profile: dev
agents:
  ci:
    profile: dev
    credentials: [github_token]
profiles:
  dev:
    sandbox_required: true
    exec_timeout_seconds: 30
    script_inspection_roots: ["${workspace}"]
    opaque_with_credentials: allow
    dlp: {bindings: [github_token], arguments: deny}
`

const (
	literalGitHub = "ghp_Lm4nOp5QrSt6UvWx7YzAb8CdEf9GhIj0KlMn"
	literalAWS    = "AKIAQ7LMNPRS2TUVWX3Y"
)

// assertAuditClean fails when the audit file holds any of needles.
func assertAuditClean(t *testing.T, w *world, needles ...string) {
	t.Helper()
	b, err := os.ReadFile(w.audit)
	must(t, err)
	for _, n := range needles {
		if strings.Contains(string(b), n) {
			t.Errorf("the audit file holds %q", n)
		}
	}
	if tokenLeak(string(b)) == foldAlnum(secretToken) {
		t.Error("the injected token can be read back from the audit file")
	}
}

// TestAuditDLPRedacted: a secret the DLP detectors find is never
// recorded, neither in the argv of a call DLP refused nor in the resolved
// commands of an inspected script (which DLP on arguments does not scan),
// and whether or not the profile binds its detector.
func TestAuditDLPRedacted(t *testing.T) {
	forGatewayIdentities(t, func(t *testing.T, asUser bool) {
		w := newWorldBackend(t, asUser, auditDLPPolicy, "auto")
		must(t, os.WriteFile(w.cfg, []byte(redactionConfig(w, asUser)), 0o644))

		r := w.exec(t, "--agent", "ci", "--", `curl -s -H "Authorization: token `+literalGitHub+`" https://api.github.com/`)
		ev := lastEvent(t, w)
		if field(ev, "data", "decision", "reason") != "dlp_argument" {
			t.Fatalf("not refused dlp_argument: %+v %v", r, field(ev, "data", "decision"))
		}
		argv, _ := field(ev, "data", "command", "resolved").([]any)
		if len(argv) == 0 || !strings.Contains(jsonText(t, argv), "[REDACTED:dlp:github_token]") {
			t.Errorf("the refused call's argv is not redacted: %v", argv)
		}

		script := "#!/bin/bash\nprintf '%s\\n' \"Authorization: token " + literalGitHub + "\" > /dev/null\n" +
			"AWS_ACCESS_KEY_ID=" + literalAWS + " true\nprintf '%s\\n' " + literalAWS + " > /dev/null\necho deployed\n"
		must(t, os.WriteFile(filepath.Join(w.ws, "deploy2.sh"), []byte(script), 0o755))
		r = w.exec(t, "--agent", "ci", "--", "bash ./deploy2.sh")
		if r.code != 0 || !strings.Contains(r.stdout, "deployed") {
			t.Fatalf("the script did not run: %+v", r)
		}
		evs := w.events(t)
		var decision, execution map[string]any
		for _, e := range evs[len(evs)-2:] {
			if e["type"] == "dev.mitrity.execution" {
				execution = e
			} else {
				decision = e
			}
		}
		for _, e := range []map[string]any{decision, execution} {
			s := jsonText(t, field(e, "data", "command", "resolved"))
			if !strings.Contains(s, "script:") || !strings.Contains(s, "[REDACTED:dlp:github_token]") || !strings.Contains(s, "[REDACTED:dlp:aws_access_key_id]") {
				t.Errorf("the script's resolved commands are not redacted: %s", s)
			}
		}
		assertAuditClean(t, w, literalGitHub, literalAWS, literalGitHub[4:], literalAWS[4:], secretToken)
	})
}

// TestAuditCredentialPieces: an injected value cut into pieces of fewer
// than 16 symbols, recorded as separate argv words or file names, is
// redacted piece by piece, in the events and in the note the agent reads.
func TestAuditCredentialPieces(t *testing.T) {
	pieces := []string{secretToken[:11], secretToken[11:22], secretToken[22:]}
	forGatewayIdentities(t, func(t *testing.T, asUser bool) {
		w := newWorldBackend(t, asUser, redactionPolicy, "auto")
		must(t, os.WriteFile(w.cfg, []byte(redactionConfig(w, asUser)), 0o644))

		r := w.exec(t, "--agent", "ci", "--", `T=$GITHUB_TOKEN; printf "#!/bin/bash\necho %s %s %s\n" "${T:0:11}" "${T:11:11}" "${T:22}" > ./x.sh`)
		if r.code != 0 {
			t.Fatalf("writing the script: %+v", r)
		}
		r = w.exec(t, "--agent", "ci", "--", "bash ./x.sh")
		if r.code != 0 || !strings.Contains(r.stdout, "[REDACTED:credential:github_token]") {
			t.Fatalf("the script did not run, or its output was not redacted: %+v", r)
		}
		evs := w.events(t)
		argv := jsonText(t, field(evs[len(evs)-1], "data", "command", "resolved"))
		if !strings.Contains(argv, `"echo","[REDACTED:credential:github_token]","[REDACTED:credential:github_token]","[REDACTED:credential:github_token]"`) {
			t.Errorf("the script's echo is not redacted piece by piece: %s", argv)
		}

		// A redirection the text names with a credential is refused before
		// it runs (credential_in_argv); files a program names from what it
		// reads are what the run's search finds, and records redacted.
		r = w.exec(t, "--agent", "ci", "--", `T=$GITHUB_TOKEN; for p in "${T:0:11}" "${T:11:11}" "${T:22}"; do echo "$T" > "./$p"; done`)
		if r.code != 126 || !strings.Contains(r.stderr, "credential_in_argv") {
			t.Fatalf("a redirection named with pieces of the credential was not refused: %+v", r)
		}
		r = w.exec(t, "--agent", "ci", "--", `awk '{ print > ("./" substr($0, 1, 11)); print > ("./" substr($0, 12, 11)); print > ("./" substr($0, 23)) }' <<< "$GITHUB_TOKEN"`)
		if !strings.Contains(r.stderr, "left an injected credential in the workspace") {
			t.Fatalf("no note of the credential written: %+v", r)
		}
		for _, p := range pieces {
			if strings.Contains(r.stderr, p) || strings.Contains(r.stdout, p) {
				t.Errorf("the agent's note holds the piece %q: %q", p, r.stderr)
			}
		}
		written := jsonText(t, field(lastEvent(t, w), "data", "execution", "credential_written"))
		if strings.Count(written, "[REDACTED:credential:github_token]") != 3 {
			t.Errorf("credential_written is not redacted piece by piece: %s", written)
		}
		assertAuditClean(t, w, append(pieces, secretToken)...)
	})
}

func jsonText(t *testing.T, v any) string { t.Helper(); return string(mustJSON(t, v)) }
