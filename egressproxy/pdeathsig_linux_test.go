package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"gotest.tools/v3/assert"
)

// SIGKILL the proxy's parent: the proxy dies too, though its stdin (held
// by this test) is still open, so only the parent-death signal can end it.
func TestServeDiesWithParent(t *testing.T) {
	t.Parallel()
	bin := proxyBinary(t)
	stdinR, stdinW, err := os.Pipe()
	assert.NilError(t, err)
	defer stdinW.Close()
	parent := exec.Command(os.Args[0])
	parent.Env = append(os.Environ(), "EGRESSPROXY_TEST_HELPER=parent", "EGRESSPROXY_BIN="+bin,
		"EGRESSPROXY_SOCKET="+filepath.Join(t.TempDir(), "egress.sock"))
	parent.Stdin = stdinR
	out, err := parent.StdoutPipe()
	assert.NilError(t, err)
	parent.Stderr = os.Stderr
	assert.NilError(t, parent.Start())
	stdinR.Close()
	t.Cleanup(func() { _ = parent.Process.Kill(); _ = parent.Wait() })

	lines := bufio.NewReader(out)
	l, err := lines.ReadString('\n')
	assert.NilError(t, err)
	var pid int
	_, err = fmt.Sscanf(l, "pid %d", &pid)
	assert.NilError(t, err, "%q", l)
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	_, err = stdinW.WriteString(`{"allow": []}`)
	assert.NilError(t, err)
	l, err = lines.ReadString('\n')
	assert.NilError(t, err)
	assert.Equal(t, l, "ready\n")

	assert.NilError(t, parent.Process.Kill())
	_ = parent.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("proxy %d outlived its parent", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
