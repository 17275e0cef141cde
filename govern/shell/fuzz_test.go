package shell

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mitrity/mitrity/govern"
)

// FuzzAnalyze feeds arbitrary text to the analyzer: it must never panic,
// must finish quickly, and must return either a tree or a denial.
func FuzzAnalyze(f *testing.F) {
	for _, cases := range loadCorpus(f) {
		for _, c := range cases {
			f.Add(c.Cmd, c.Dialect == "sh")
		}
	}
	dir := f.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x.sh"), []byte("#!/bin/sh\n. ./x.sh\nbash -c 'eval \"$1\"' _ id\n"), 0o755); err != nil {
		f.Fatal(err)
	}
	// A #! chain: a.sh's interpreter is b.sh, whose env runs x.sh.
	for name, body := range map[string]string{"a.sh": "#!" + filepath.Join(dir, "b.sh") + " -x\n", "b.sh": "#!/usr/bin/env ./x.sh\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			f.Fatal(err)
		}
	}
	f.Add("./a.sh; cd / && $OLDPWD/a.sh", false)
	f.Fuzz(func(t *testing.T, text string, sh bool) {
		d := DialectBash
		if sh {
			d = DialectSh
		}
		start := time.Now()
		a := Analyze(Input{Text: text, Dialect: d, Cwd: dir, Path: []string{"/usr/bin", "/bin"}, InspectionRoots: []string{dir}, WritableRoots: []string{dir}})
		if a == nil {
			t.Fatal("nil analysis")
		}
		if a.Denial == nil && a.SHA256 == "" {
			t.Fatal("no denial and no judged text hash")
		}
		if a.Denial != nil && a.Denial.Reason == "" {
			t.Fatal("denial without a reason")
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("analysis took %v", d)
		}
	})
}

// FuzzAnalyzeCredentials analyses arbitrary text in a run that carries
// credentials (an injected one, one in the call's env, a credential
// directory), once with the strict default and once with
// opaque_with_credentials: allow. Neither may panic; the relaxed analysis
// may deny only what the strict one denies, and differs from it only where
// the strict one refused code it could not see (credential_in_argv, with
// opaque_with_credentials flagged), which the relaxed one flags as allowed.
func FuzzAnalyzeCredentials(f *testing.F) {
	for _, cases := range loadCorpus(f) {
		for _, c := range cases {
			f.Add(c.Cmd)
		}
	}
	dir := f.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x.sh"), []byte("#!/bin/sh\nPS4='$(tail \"$T\")'\nexec 3< \"$MITRITY_CRED_DIR/t\"\n"), 0o755); err != nil {
		f.Fatal(err)
	}
	f.Add(`c=$(cat name); $c "$T"`)
	f.Add(`echo "${x@P}"`)
	f.Fuzz(func(t *testing.T, text string) {
		in := Input{Text: text, Dialect: DialectBash, Cwd: dir, Path: []string{"/usr/bin", "/bin"}, Home: "/home/agent",
			InspectionRoots: []string{dir}, WritableRoots: []string{dir}, CredentialVars: []string{"GITHUB_TOKEN"},
			CredentialDir: "/run/mitrity/credentials", CredentialsInjected: true, Env: map[string]string{"T": "${credential:tok}"}}
		start := time.Now()
		strict := Analyze(in)
		in.AllowOpaqueWithCredentials = true
		relaxed := Analyze(in)
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("analysis took %v", d)
		}
		if relaxed.Denial != nil && strict.Denial == nil {
			t.Fatalf("the relaxed analysis denies what the strict one allows: %v", relaxed.Denial)
		}
		if strict.Denial != nil && relaxed.Denial == nil {
			if strict.Denial.Reason != govern.ReasonCredentialInArgv || !hasFlag(strict, FlagOpaqueWithCredentials) || !hasFlag(relaxed, FlagOpaqueWithCredentials) {
				t.Fatalf("the relaxation allowed a denial that is not about unseen code: %v", strict.Denial)
			}
		}
		if strict.Denial == nil && hasFlag(strict, FlagOpaqueWithCredentials) {
			t.Fatal("opaque_with_credentials flagged on an allowed strict analysis")
		}
		// A command name, nesting or prompt the analyzer could not resolve
		// is never let through while a credential is in reach.
		for _, k := range []FlagKind{FlagDynamicCommand, FlagDepthExceeded, FlagPromptExpansion} {
			if strict.Denial == nil && hasFlag(strict, k) {
				t.Fatalf("%s in a run that carries a credential, and allowed", k)
			}
		}
	})
}

func hasFlag(a *Analysis, k FlagKind) bool {
	for _, f := range a.Flags {
		if f.Kind == k {
			return true
		}
	}
	return false
}
