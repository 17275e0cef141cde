package sandbox

import (
	"os"
	"testing"
)

// TestMain lets the test binary serve as the sandbox helper: Spawn runs it
// as "run", Run execs it inside the sandbox as "init", the probe as
// "probe-seccomp"; a test runs a spec as another user with it as
// "run-spec".
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case HelperInit:
			Init()
			os.Exit(127)
		case HelperProbeSeccomp:
			if ProbeSeccompChild() != nil {
				os.Exit(1)
			}
			os.Exit(0)
		case helperRunSpec:
			runSpecChild()
		case helperSessionDial:
			sessionDialChild()
		case HelperRun:
			os.Exit(HelperMain(os.Args[2:], os.Stderr))
		}
	}
	code := m.Run()
	cleanupIdentities()
	os.Exit(code)
}

func selfExe(t *testing.T) string {
	t.Helper()
	p, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return p
}
