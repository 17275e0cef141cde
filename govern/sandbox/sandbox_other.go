//go:build !linux

package sandbox

import (
	"context"
	"time"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/peer"
)

// Run refuses: there is no kernel sandbox backend here.
func Run(ctx context.Context, spec *Spec, stdio Stdio, opts ...Option) Result {
	return Result{Status: govern.StatusFailedToStart, Reason: govern.ReasonSandboxUnavailable, Message: ErrUnsupported.Error()}
}

// Probe reports that nothing is available.
func Probe(ctx context.Context, opts ...Option) ProbeReport {
	return ProbeReport{Checks: []Check{{Name: CheckBubblewrap, Reason: ErrUnsupported.Error()}}}
}

// Init is the in-sandbox init; there is no sandbox here.
func Init() error { return ErrUnsupported }

// ProbeSeccompChild is the seccomp probe's child; there is no seccomp here.
func ProbeSeccompChild() error { return ErrUnsupported }

// EndOrphans has no sandbox to end here.
func EndOrphans() error { return nil }

// DieWithParent has no parent-death signal to set here.
func DieWithParent() error { return ErrUnsupported }

// ProbeCached is Probe: there is nothing to cache off Linux.
func ProbeCached(ctx context.Context, _ string, _ time.Duration, opts ...Option) ProbeReport {
	return Probe(ctx, opts...)
}

// NotInSandbox cannot tell here: it refuses.
func NotInSandbox(peer.Peer) error { return ErrSandboxPeer }

// OnlyHost cannot tell here: it refuses.
func OnlyHost(peer.Peer) error { return ErrNotHost }

// InLiveSandbox cannot tell here: true, so that a socket refuses.
func InLiveSandbox(int, uint64) bool { return true }

// Spawn refuses: there is no kernel sandbox backend here.
func Spawn(ctx context.Context, helper string, spec *Spec, stdio Stdio) Result {
	return Run(ctx, spec, stdio)
}
