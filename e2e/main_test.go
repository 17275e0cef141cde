package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// binaries are the commands `make build` installs into bin/, each built from
// the workspace module of the same name without the "mitrity-" prefix.
var binaries = []string{
	"mitrity-gateway",
	"mitrity-sidecar",
	"mitrity-hook",
	"mitrity-sandboxrun",
	"mitrity-egressproxy",
	"mitrity-sandboxinit",
}

// binDir is the directory holding the binaries under test, set by TestMain.
var binDir string

// atExit are removals of what tests made to share across the test binary
// (copies outside /tmp the sandbox can see); TestMain runs them last.
var (
	atExitMu sync.Mutex
	atExit   []func()
)

// onExit registers f to run when the test binary ends.
func onExit(f func()) {
	atExitMu.Lock()
	atExit = append(atExit, f)
	atExitMu.Unlock()
}

func runAtExit() {
	atExitMu.Lock()
	defer atExitMu.Unlock()
	for _, f := range atExit {
		f()
	}
}

// TestMain finds the binaries under test: $MITRITY_BIN when set (make test
// sets it to the freshly built bin/), otherwise a temporary directory into
// which it builds all of them from this workspace.
func TestMain(m *testing.M) {
	code := run(m)
	runAtExit()
	os.Exit(code)
}

func run(m *testing.M) int {
	if dir := os.Getenv("MITRITY_BIN"); dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			fmt.Fprintf(os.Stderr, "e2e: MITRITY_BIN=%q: %v\n", dir, err)
			return 1
		}
		binDir = abs
		return m.Run()
	}

	dir, err := os.MkdirTemp("", "mitrity-e2e-bin-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	// Tests run binaries as an unprivileged user too.
	if err := os.Chmod(dir, 0o755); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	if err := buildAll(dir); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	binDir = dir
	return m.Run()
}

// buildAll builds every binary into dir, from the workspace root so that
// go.work resolves the modules.
func buildAll(dir string) error {
	root, err := workspaceRoot()
	if err != nil {
		return err
	}
	for _, name := range binaries {
		pkg := "github.com/mitrity/mitrity/" + name[len("mitrity-"):]
		if name == "mitrity-sandboxinit" {
			pkg = "github.com/mitrity/mitrity/sandboxrun/sandboxinit"
		}
		cmd := exec.Command("go", "build", "-trimpath", "-tags", "urfave_cli_no_docs", "-o", filepath.Join(dir, name), pkg)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
		}
	}
	return nil
}

// workspaceRoot walks up from the working directory to the one holding go.work.
// repoRoot is the checkout holding packaging/.
func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := workspaceRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func workspaceRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.work above the working directory; set MITRITY_BIN to a directory of built binaries")
		}
		dir = parent
	}
}
