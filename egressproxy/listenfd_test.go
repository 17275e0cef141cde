//go:build unix

package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"

	"github.com/mitrity/mitrity/govern/egress"
)

// How the gateway runs the proxy: the socket is made and listening before
// the proxy starts, handed over as descriptor 3. A client that connects
// before the proxy has even read its configuration waits in the backlog
// and is served; the path is the gateway's and stays when the proxy stops.
func TestServeListenFD(t *testing.T) {
	t.Parallel()
	sock := filepath.Join(t.TempDir(), "egress.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	assert.NilError(t, err)
	ln.SetUnlinkOnClose(false)
	f, err := ln.File()
	assert.NilError(t, err)
	ln.Close()

	cmd := exec.Command(proxyBinary(t), "serve", "--listen-fd", "3", "--parent-pid", strconv.Itoa(os.Getpid()))
	cmd.ExtraFiles = []*os.File{f}
	stdin, err := cmd.StdinPipe()
	assert.NilError(t, err)
	stdout, err := cmd.StdoutPipe()
	assert.NilError(t, err)
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	assert.NilError(t, cmd.Start())
	f.Close()
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait(); t.Logf("proxy stderr:\n%s", stderr.String()) })

	// Connected and asked before the configuration exists.
	conn, err := net.Dial("unix", sock)
	assert.NilError(t, err)
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	_, err = io.WriteString(conn, connectReq("example.com:443"))
	assert.NilError(t, err)
	time.Sleep(50 * time.Millisecond)
	_, err = io.WriteString(stdin, `{"allow": ["*.example.org"]}`)
	assert.NilError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: http.MethodConnect})
	assert.NilError(t, err)
	assert.Equal(t, resp.StatusCode, http.StatusForbidden)

	out := bufio.NewReader(stdout)
	l, err := out.ReadString('\n')
	assert.NilError(t, err)
	assert.Equal(t, l, "ready\n")
	assert.NilError(t, stdin.Close())
	l, err = out.ReadString('\n')
	assert.NilError(t, err)
	var r egress.Report
	assert.NilError(t, json.Unmarshal([]byte(l), &r))
	assert.Equal(t, r.Denied, 1)
	assert.Equal(t, len(r.Denials), 1)
	assert.Equal(t, r.Denials[0].Reason, egress.ReasonNotAllowlisted)
	assert.NilError(t, cmd.Wait())
	_, err = os.Stat(sock)
	assert.NilError(t, err, "the proxy removed the gateway's socket")
}

// Descriptor 3 must be a listening Unix stream socket: a file, a TCP
// listener or a missing descriptor is refused, and so is naming both
// --socket and --listen-fd.
func TestServeListenFDRefused(t *testing.T) {
	t.Parallel()
	file, err := os.Open(os.Args[0])
	assert.NilError(t, err)
	defer file.Close()
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	assert.NilError(t, err)
	defer tcp.Close()
	tcpFile, err := tcp.(*net.TCPListener).File()
	assert.NilError(t, err)
	defer tcpFile.Close()
	for _, tc := range []struct {
		name  string
		extra []*os.File
		args  []string
		want  string
	}{
		{"file", []*os.File{file}, nil, "--listen-fd 3"},
		{"tcp", []*os.File{tcpFile}, nil, "not a Unix stream socket"},
		{"missing", nil, nil, "--listen-fd 3"},
		{"stdin", nil, []string{"--listen-fd", "0"}, "descriptors 0-2"},
		{"both", []*os.File{tcpFile}, []string{"--socket", filepath.Join(t.TempDir(), "s")}, "exclude each other"},
	} {
		args := tc.args
		if !strings.Contains(strings.Join(args, " "), "--listen-fd") {
			args = append(args, "--listen-fd", "3")
		}
		cmd := exec.Command(proxyBinary(t), append([]string{"serve"}, args...)...)
		cmd.ExtraFiles = tc.extra
		cmd.Stdin = strings.NewReader(`{"allow": []}`)
		out, err := cmd.CombinedOutput()
		assert.Check(t, err != nil, "%s: served: %s", tc.name, out)
		assert.Check(t, is.Contains(string(out), tc.want), tc.name)
		assert.Check(t, !strings.Contains(string(out), "ready"), tc.name)
	}
}
