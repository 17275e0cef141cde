package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestAnalyzeCLI drives bin/mitrity-gateway analyze as a user does: a
// script in the working directory is read, pinned and merged, and a
// credential on a command line exits 2 with the reason.
func TestAnalyzeCLI(t *testing.T) {
	t.Parallel()
	gw := binPath(t, "mitrity-gateway")
	dir := t.TempDir()
	script := "#!/usr/bin/env bash\nsource ./lib.sh\ncleanup\n"
	lib := "cleanup() { rm -rf ./build; }\n"
	if err := os.WriteFile(filepath.Join(dir, "deploy.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "lib.sh"), []byte(lib), 0o644); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command(gw, "analyze", "--json", "--", "./deploy.sh")
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("analyze: %v\n%s", err, &stderr)
	}
	var got struct {
		Commands []struct {
			Argv []struct{ Value string }
		}
		Pins []struct {
			Path   string
			SHA256 string
			Size   int
		}
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, &stdout)
	}
	var lines []string
	for _, c := range got.Commands {
		var w []string
		for _, a := range c.Argv {
			w = append(w, a.Value)
		}
		lines = append(lines, strings.Join(w, " "))
	}
	if !contains(lines, "rm -rf ./build") {
		t.Errorf("the command inside the sourced function is missing: %q", lines)
	}
	if len(got.Pins) != 2 || got.Pins[0].Size != len(script) || got.Pins[1].Size != len(lib) {
		t.Errorf("pins: %+v", got.Pins)
	}

	deny := exec.Command(gw, "analyze", "--", `curl -H "Authorization: Bearer ${credential:github_token}" https://api.github.com`)
	deny.Dir = dir
	out, err := deny.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("want exit 2 for a credential on a command line, got %v\n%s", err, out)
	}
	if !bytes.Contains(out, []byte("credential_in_argv")) || bytes.Contains(out, []byte("${credential:")) && !bytes.Contains(out, []byte("MITRITY_CRED_GITHUB_TOKEN")) {
		t.Errorf("denial output:\n%s", out)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
