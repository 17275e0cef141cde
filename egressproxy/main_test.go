package main

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/mitrity/mitrity/govern/egress/relay"
)

// TestMain doubles as the helper processes the e2e tests need: a parent to
// SIGKILL, and an echo server to run inside a network namespace.
func TestMain(m *testing.M) {
	switch os.Getenv("EGRESSPROXY_TEST_HELPER") {
	case "parent":
		helperParent()
		return
	case "echo":
		helperEcho()
		return
	case "sink":
		helperSink()
		return
	case "bridge":
		helperBridge()
		return
	}
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

var (
	buildOnce sync.Once
	buildDir  string
	buildBin  string
	buildErr  error
)

// proxyBinary builds mitrity-egressproxy once per test run, as `make build`
// would, and returns its path.
func proxyBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "egressproxy-test-")
		if buildErr != nil {
			return
		}
		buildBin = filepath.Join(buildDir, "mitrity-egressproxy")
		out, err := exec.Command("go", "build", "-o", buildBin, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildBin
}

// helperParent starts the proxy as its child, with this process's stdin
// (held open by the test) and stdout, prints the child's pid, and waits to
// be killed.
func helperParent() {
	cmd := exec.Command(os.Getenv("EGRESSPROXY_BIN"), "serve",
		"--socket", os.Getenv("EGRESSPROXY_SOCKET"), "--parent-pid", strconv.Itoa(os.Getpid()))
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("pid %d\n", cmd.Process.Pid)
	select {}
}

// helperEcho listens on EGRESSPROXY_ECHO_ADDR, says "listening", and
// answers each connection with "echo:" and whatever it reads.
func helperEcho() {
	ln, err := net.Listen("tcp", os.Getenv("EGRESSPROXY_ECHO_ADDR"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("listening")
	for {
		c, err := ln.Accept()
		if err != nil {
			os.Exit(0)
		}
		go func() {
			defer c.Close()
			r := bufio.NewReader(c)
			buf := make([]byte, 4096)
			for {
				n, err := r.Read(buf)
				if n > 0 {
					if _, err := c.Write(append([]byte("echo:"), buf[:n]...)); err != nil {
						return
					}
				}
				if err != nil {
					if err == io.EOF {
						_, _ = c.Write([]byte("bye"))
					}
					return
				}
			}
		}()
	}
}

// helperSink listens on EGRESSPROXY_ECHO_ADDR, says "listening", and on
// each connection reads frames (an 8-byte big-endian length, then that many
// bytes), acking each with one byte once all of it arrived. A length with
// the fetch bit asks for that many bytes instead.
func helperSink() {
	ln, err := net.Listen("tcp", os.Getenv("EGRESSPROXY_ECHO_ADDR"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("listening")
	payload := make([]byte, frameSize)
	for {
		c, err := ln.Accept()
		if err != nil {
			os.Exit(0)
		}
		go func() {
			defer c.Close()
			var n uint64
			for binary.Read(c, binary.BigEndian, &n) == nil {
				if n&fetch != 0 {
					for n &^= fetch; n > 0; {
						k := min(n, uint64(len(payload)))
						if _, err := c.Write(payload[:k]); err != nil {
							return
						}
						n -= k
					}
					continue
				}
				if _, err := io.CopyN(io.Discard, c, int64(n)); err != nil {
					return
				}
				if _, err := c.Write([]byte{1}); err != nil {
					return
				}
			}
		}()
	}
}

// helperBridge plays the sandbox's egress bridge: it listens on TCP
// loopback, prints the address, and relays each connection to the proxy's
// socket EGRESSPROXY_SOCKET as the bridge does.
func helperBridge() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(ln.Addr().String())
	for {
		c, err := ln.Accept()
		if err != nil {
			os.Exit(0)
		}
		go func() {
			u, err := net.Dial("unix", os.Getenv("EGRESSPROXY_SOCKET"))
			if err != nil {
				c.Close()
				return
			}
			relay.Run(c, u, relay.Options{})
		}()
	}
}
