package mcpserver

import (
	"bufio"
	"encoding/json"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"
)

// TestLimitListener: past the total or the peer's share, a connection is
// answered 503 and closed; closing one frees its place.
func TestLimitListener(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	assert.NilError(t, err)
	var mu sync.Mutex
	refused := map[string]int{}
	l := newLimitListener(inner, 3, 2, func(r string) { mu.Lock(); refused[r]++; mu.Unlock() })
	defer l.Close()
	// The peer is named by the client's first byte.
	l.peer = func(c net.Conn) (string, error) {
		b := make([]byte, 1)
		_, _ = io.ReadFull(c, b)
		return string(b), nil
	}
	accepted := make(chan net.Conn, 10)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	dial := func(peer string) net.Conn {
		c, err := net.Dial("tcp", inner.Addr().String())
		assert.NilError(t, err)
		_, err = c.Write([]byte(peer))
		assert.NilError(t, err)
		return c
	}
	status := func(c net.Conn) int {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		assert.NilError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	a1, a2 := dial("a"), dial("a")
	s1, s2 := <-accepted, <-accepted
	assert.Equal(t, status(dial("a")), http.StatusServiceUnavailable) // a's share
	b1 := dial("b")
	<-accepted
	assert.Equal(t, status(dial("c")), http.StatusServiceUnavailable) // the total
	assert.Equal(t, l.Open(), 3)
	mu.Lock()
	assert.DeepEqual(t, refused, map[string]int{RefusedPeerLimit: 1, RefusedTotalLimit: 1})
	mu.Unlock()
	// Closing (twice: counted once) frees a's place.
	s1.Close()
	s1.Close()
	assert.Equal(t, l.Open(), 2)
	a3 := dial("a")
	<-accepted
	assert.Equal(t, l.Open(), 3)
	for _, c := range []net.Conn{a1, a2, a3, b1, s2} {
		c.Close()
	}
}

// TestPeerUID: a loopback client's socket belongs to this process's user.
func TestPeerUID(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the socket's owner is read on Linux only")
	}
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Logf("%s: %v", addr, err)
			continue
		}
		c, err := net.Dial("tcp", l.Addr().String())
		assert.NilError(t, err)
		s, err := l.Accept()
		assert.NilError(t, err)
		uid, err := peerUID(s.LocalAddr().(*net.TCPAddr), s.RemoteAddr().(*net.TCPAddr))
		assert.NilError(t, err, addr)
		assert.Equal(t, int(uid), os.Getuid(), addr)
		key, err := peerKey(s)
		assert.NilError(t, err)
		assert.Equal(t, key, "uid:"+itoa(os.Getuid()))
		// A connection that no longer exists has no owner.
		port := s.RemoteAddr().(*net.TCPAddr).Port
		c.Close()
		s.Close()
		l.Close()
		gone := *s.RemoteAddr().(*net.TCPAddr)
		gone.Port = port + 1
		if _, err := peerUID(s.LocalAddr().(*net.TCPAddr), &gone); err == nil {
			t.Errorf("%s: a socket that does not exist has an owner", addr)
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestResponseID: the in-flight key of a request's id (idKey, from the
// line) is the key of the SDK's response to it (responseKey, from the id
// the SDK decoded and answers under), numbers as the SDK holds them.
func TestResponseID(t *testing.T) {
	for _, raw := range []string{`7`, `"7"`, `1e1`, `10`, `-0`, `1.0`, `"\u0041"`, `9007199254740991`, `""`} {
		m, err := jsonrpc.DecodeMessage([]byte(`{"jsonrpc":"2.0","id":` + raw + `,"method":"ping"}`))
		assert.NilError(t, err, raw)
		got, ok := responseKey(m.(*jsonrpc.Request).ID)
		assert.Assert(t, ok, raw)
		assert.Equal(t, got, idKey(json.RawMessage(raw)), raw)
	}
	_, ok := responseKey(jsonrpc.ID{})
	assert.Assert(t, !ok, "a response without an id ends no request")
	for raw, key := range map[string]string{`1`: "n:1", `1.0`: "n:1", `-0`: "n:0", `"1"`: "s:1", `"\u0041"`: "s:A"} {
		assert.Assert(t, validID(json.RawMessage(raw)), raw)
		assert.Equal(t, idKey(json.RawMessage(raw)), key, raw)
	}
	for _, raw := range []string{`1.5`, `9007199254740992`, `1e400`, `null`, `true`, `{}`, `[]`, `"x`} {
		assert.Assert(t, !validID(json.RawMessage(raw)), raw)
	}
}
