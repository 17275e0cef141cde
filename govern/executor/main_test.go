package executor

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/egress"
	"github.com/mitrity/mitrity/govern/plan"
	"github.com/mitrity/mitrity/govern/sandbox"
	"github.com/mitrity/mitrity/govern/shell"
)

// TestMain lets the test binary play the parts the sandboxed tests need:
// mitrity-sandboxrun (the executor spawns it per run) and the sandbox's
// init (the helper execs itself inside the sandbox), a gateway
// to SIGKILL mid-run, and an HTTP server inside a network namespace.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case sandbox.HelperInit:
			sandbox.Init()
			os.Exit(127)
		case sandbox.HelperRun:
			os.Exit(sandbox.HelperMain(os.Args[2:], os.Stderr))
		}
	}
	switch os.Getenv("EXECUTOR_TEST_HELPER") {
	case "gateway":
		helperGateway()
		return
	case "http":
		helperHTTP()
		return
	}
	code := m.Run()
	if proxyBuildDir != "" {
		os.RemoveAll(proxyBuildDir)
	}
	os.Exit(code)
}

// helperGateway runs one sandboxed plan with an allowlist, as the gateway
// would, and never returns: the test SIGKILLs it mid-run.
func helperGateway() {
	ws := os.Getenv("EXECUTOR_TEST_WS")
	p, err := plan.New(plan.Spec{
		Shell: "/bin/bash", Dialect: shell.DialectBash, CommandSHA256: "x",
		// The first connection starts the proxy; then the command waits.
		Command: "curl -s -o /dev/null http://denied.invalid/; exec -a " + os.Getenv("EXECUTOR_TEST_MARKER") + " sleep 300",
		Cwd:     ws, WorkspaceRoots: []string{ws}, Timeout: time.Minute, OutputMaxBytes: 1 << 10,
		Env:    map[string]string{"PATH": "/usr/bin:/bin"},
		Egress: []string{"example.com"},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	self, _ := os.Executable()
	e := New(1, WithSandbox(Sandbox{Helper: self, Seccomp: sandbox.SeccompRequired}),
		WithEgressProxy(os.Getenv("EXECUTOR_TEST_PROXY")))
	r := e.Run(context.Background(), p, govern.SandboxBubblewrap, nil, nil, nil)
	fmt.Fprintf(os.Stderr, "the run ended: %+v\n", r)
	os.Exit(1)
}

// helperHTTP answers every request on EXECUTOR_TEST_ADDR with "hello
// <method> <path>" once it says "listening".
func helperHTTP() {
	ln, err := net.Listen("tcp", os.Getenv("EXECUTOR_TEST_ADDR"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("listening")
	_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello %s %s", r.Method, strings.TrimPrefix(r.URL.Path, "/"))
	}))
	os.Exit(0)
}

var (
	proxyBuildOnce sync.Once
	proxyBuildDir  string
	proxyBin       string
	proxyBuildErr  error
)

// egressProxyBin builds mitrity-egressproxy once per test run, as make
// build would: the tests run the real binary.
func egressProxyBin(t testing.TB) string {
	t.Helper()
	proxyBuildOnce.Do(func() {
		proxyBuildDir, proxyBuildErr = os.MkdirTemp("", "executor-test-")
		if proxyBuildErr != nil {
			return
		}
		proxyBin = filepath.Join(proxyBuildDir, egress.BinaryName)
		out, err := exec.Command("go", "build", "-o", proxyBin, "github.com/mitrity/mitrity/egressproxy").CombinedOutput()
		if err != nil {
			proxyBuildErr = fmt.Errorf("go build mitrity-egressproxy: %v\n%s", err, out)
		}
	})
	if proxyBuildErr != nil {
		t.Fatal(proxyBuildErr)
	}
	return proxyBin
}
