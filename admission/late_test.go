package admission_test

import (
	"context"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gotest.tools/v3/assert"

	"github.com/mitrity/mitrity/admission"
)

// TestRedeemFrameAfterReturn: a backend whose output goroutine outlives
// its Redeem gets an error from out, and the response is untouched.
func TestRedeemFrameAfterReturn(t *testing.T) {
	t.Parallel()
	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	// The goroutine sends once the client holds the whole response, so
	// after Redeem returned: started right away, its frames could land
	// before the return and be in time (they did, one run in ten).
	answered := make(chan struct{})
	b := &fakeBackend{redeem: func(_ context.Context, _ int, _ admission.RedeemRequest, out func(admission.Frame) error) (admission.Result, error) {
		_ = out(admission.Frame{Type: admission.FrameStdout, Data: []byte("in time\n")})
		wg.Go(func() {
			<-answered
			for range 10 {
				if err := out(admission.Frame{Type: admission.FrameStdout, Data: []byte("late\n")}); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		})
		return admission.Result{Status: "completed"}, nil
	}}
	sock := serve(t, b, socketPeer)
	for range 5 {
		r := do(t, sock, http.MethodPost, admission.PathRedeem, []byte(`{"ticket":"tk"}`))
		answered <- struct{}{} // unbuffered: this redemption's goroutine, the only one waiting
		assert.Equal(t, r.status, 200)
		assert.Equal(t, string(r.body), `{"type":"stdout","data":"aW4gdGltZQo="}`+"\n"+`{"type":"result","result":{"exit_code":0,"status":"completed","redaction_count":0,"duration_ms":0}}`+"\n")
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.Assert(t, err != nil, "a frame sent after Redeem returned was accepted")
	}
}

// TestClientLeavesNoConnection: each call's connection is closed when the
// call is done. The client keeps no pool between calls, so a kept-alive
// connection would stay open (a descriptor and two goroutines on each
// side) for the life of a long-running caller.
func TestClientLeavesNoConnection(t *testing.T) {
	t.Parallel()
	var open atomic.Int32
	h := admission.Handler(&fakeBackend{}, socketPeer, "test")
	sock := filepath.Join(shortDir(t), "admission.sock")
	ln, err := net.Listen("unix", sock)
	assert.NilError(t, err)
	srv := &http.Server{Handler: h, ConnContext: func(ctx context.Context, c net.Conn) context.Context {
		return context.WithValue(ctx, peerKey{}, connUID(c))
	}, ConnState: func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			open.Add(1)
		case http.StateClosed, http.StateHijacked:
			open.Add(-1)
		}
	}}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })

	c := admission.Client{Socket: sock, Timeout: 10 * time.Second}
	for range 10 {
		_, err := c.Admit(context.Background(), validAdmit())
		assert.NilError(t, err)
		_, err = c.Redeem(context.Background(), admission.RedeemRequest{Ticket: "tk"}, nil)
		assert.NilError(t, err)
		_, err = c.Health(context.Background())
		assert.NilError(t, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for open.Load() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	assert.Equal(t, open.Load(), int32(0), "connections left open")
}

// TestClientRedeemNilCallback: a nil frame callback discards the output.
func TestClientRedeemNilCallback(t *testing.T) {
	t.Parallel()
	b := &fakeBackend{redeem: func(_ context.Context, _ int, _ admission.RedeemRequest, out func(admission.Frame) error) (admission.Result, error) {
		_ = out(admission.Frame{Type: admission.FrameStdout, Data: []byte("discarded")})
		_ = out(admission.Frame{Type: admission.FrameStderr, Data: []byte("discarded")})
		return admission.Result{ExitCode: 2, Status: "completed"}, nil
	}}
	sock := serve(t, b, socketPeer)
	res, err := admission.Client{Socket: sock}.Redeem(context.Background(), admission.RedeemRequest{Ticket: "tk"}, nil)
	assert.NilError(t, err)
	assert.Equal(t, res.ExitCode, 2)
}
