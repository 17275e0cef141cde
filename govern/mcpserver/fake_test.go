package mcpserver_test

import (
	"context"
	"sync"
	"time"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/service"
)

// fakeCaller stands in for the service: a command "block" runs until its
// context ends (the result then says killed, and how long it took);
// anything else completes at once.
type fakeCaller struct {
	mu       sync.Mutex
	ended    []time.Duration // how long each blocking call ran
	began    chan struct{}   // one value per blocking call started
	rejected []govern.Reason
}

func newFakeCaller() *fakeCaller { return &fakeCaller{began: make(chan struct{}, 100)} }

func (f *fakeCaller) Call(ctx context.Context, call govern.Call) service.Result {
	if call.Command != "block" {
		code := 0
		return service.Result{Text: "ran " + call.Command, Status: govern.StatusCompleted, Structured: service.Structured{ExitCode: &code}}
	}
	start := time.Now()
	f.began <- struct{}{}
	<-ctx.Done()
	f.mu.Lock()
	f.ended = append(f.ended, time.Since(start))
	f.mu.Unlock()
	return service.Result{Text: "killed", Status: govern.StatusKilled, Structured: service.Structured{Status: govern.StatusKilled.String()}}
}

func (f *fakeCaller) Reject(_ context.Context, _ govern.Call, reason govern.Reason, msg string) service.Result {
	f.mu.Lock()
	f.rejected = append(f.rejected, reason)
	f.mu.Unlock()
	return service.Result{Text: msg, IsError: true, Structured: service.Structured{Reason: string(reason), EventID: "fake-event"}}
}

func (f *fakeCaller) endedCalls() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.ended...)
}
