package admission_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/mitrity/mitrity/admission"
)

// fakeBackend is the gateway's side of the contract: it records what the
// handler passed on and answers with what the test set.
type fakeBackend struct {
	admit  func(ctx context.Context, uid int, req admission.AdmitRequest) (admission.AdmitResponse, error)
	redeem func(ctx context.Context, uid int, req admission.RedeemRequest, out func(admission.Frame) error) (admission.Result, error)

	mu      sync.Mutex
	calls   int
	uids    []int
	admits  []admission.AdmitRequest
	redeems []admission.RedeemRequest
}

func (b *fakeBackend) Admit(ctx context.Context, uid int, req admission.AdmitRequest) (admission.AdmitResponse, error) {
	b.mu.Lock()
	b.calls++
	b.uids = append(b.uids, uid)
	b.admits = append(b.admits, req)
	b.mu.Unlock()
	if b.admit == nil {
		return admission.AdmitResponse{Decision: admission.Allow, Message: "allowed", Routing: admission.RoutingFramework}, nil
	}
	return b.admit(ctx, uid, req)
}

func (b *fakeBackend) Redeem(ctx context.Context, uid int, req admission.RedeemRequest, out func(admission.Frame) error) (admission.Result, error) {
	b.mu.Lock()
	b.calls++
	b.uids = append(b.uids, uid)
	b.redeems = append(b.redeems, req)
	b.mu.Unlock()
	if b.redeem == nil {
		return admission.Result{ExitCode: 0, Status: "completed"}, nil
	}
	return b.redeem(ctx, uid, req, out)
}

func (b *fakeBackend) called() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls
}

type peerKey struct{}

// socketPeer is the PeerFunc of a test server: the uid its ConnContext
// read from the connection (SO_PEERCRED where the platform has it).
func socketPeer(ctx context.Context) (int, bool) {
	uid, ok := ctx.Value(peerKey{}).(int)
	return uid, ok && uid >= 0
}

// noPeer is a PeerFunc that never knows the caller.
func noPeer(context.Context) (int, bool) { return 0, false }

// shortDir is a temporary directory whose path leaves room for a socket
// name (t.TempDir's can exceed the 108 bytes of sun_path).
func shortDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "adm")
	assert.NilError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// serveRaw serves h on a fresh Unix socket, putting the peer's uid in
// every request's context, and returns the socket's path.
func serveRaw(t testing.TB, h http.Handler) string {
	t.Helper()
	sock := filepath.Join(shortDir(t), "admission.sock")
	ln, err := net.Listen("unix", sock)
	assert.NilError(t, err)
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 5 * time.Second,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, peerKey{}, connUID(c))
		},
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return sock
}

// serve serves the contract over b on a fresh Unix socket.
func serve(t testing.TB, b admission.Backend, peer admission.PeerFunc) (sock string) {
	t.Helper()
	return serveRaw(t, admission.Handler(b, peer, "1.2.3-test"))
}

// rawClient sends arbitrary requests to the socket.
func rawClient(sock string) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
	}}
}

type rawResponse struct {
	status      int
	contentType string
	body        []byte
}

func do(t testing.TB, sock, method, path string, body []byte) rawResponse {
	t.Helper()
	req, err := http.NewRequest(method, "http://mitrity"+path, bytes.NewReader(body))
	assert.NilError(t, err)
	resp, err := rawClient(sock).Do(req)
	assert.NilError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	assert.NilError(t, err)
	return rawResponse{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), body: data}
}

// protocolError decodes a JSON error body, failing the test when the body
// is anything else.
func protocolError(t testing.TB, r rawResponse) admission.Error {
	t.Helper()
	assert.Equal(t, r.contentType, "application/json", "body: %s", r.body)
	var e admission.Error
	dec := json.NewDecoder(bytes.NewReader(r.body))
	dec.DisallowUnknownFields()
	assert.NilError(t, dec.Decode(&e), "body: %s", r.body)
	assert.Assert(t, e.Message != "", "an error without a message: %s", r.body)
	return e
}

// validAdmit is a request every check passes.
func validAdmit() admission.AdmitRequest {
	return admission.AdmitRequest{
		Framework: admission.FrameworkClaude, Agent: "claude-code", SessionID: "3f1e-session",
		ToolName: "Bash", ToolUseID: "toolu_01", Cwd: "/home/dev/project", Command: "git status",
		PermissionMode: "default", TimeoutSeconds: 120,
	}
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	assert.NilError(t, err)
	return b
}
