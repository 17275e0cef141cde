package executor

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/plan"
	"github.com/mitrity/mitrity/govern/sandbox"
)

// runSandboxed runs p inside bubblewrap through govern/sandbox. The
// sandbox binds the judged script bytes over their paths, materialises the
// credential files in a private tmpfs, enforces the timeout and limits,
// and kills every process the command started when it ends.
func (e *Executor) runSandboxed(ctx context.Context, p *plan.Plan, creds map[string]string, r Result, stdout, stderr io.Writer) Result {
	env := p.Env()
	for name, id := range p.CredentialEnv() {
		v, ok := creds[id]
		if !ok {
			r.Status, r.Reason, r.Message = govern.StatusFailedToStart, govern.ReasonSpawnError, "credential "+id+" was not fetched"
			return r
		}
		env[name] = v
	}
	files := map[string]string{}
	for name, id := range p.CredentialFiles() {
		v, ok := creds[id]
		if !ok {
			r.Status, r.Reason, r.Message = govern.StatusFailedToStart, govern.ReasonSpawnError, "credential "+id+" was not fetched"
			return r
		}
		files[name] = v
	}
	spec := &sandbox.Spec{
		Argv: argv(p), Cwd: p.Cwd(), WorkspaceRoots: p.WorkspaceRoots(), DenyPaths: e.sandbox.DenyPaths,
		CredFiles: files, Seccomp: e.sandbox.Seccomp, Limits: e.sandbox.Limits,
		TimeoutMS: p.Timeout().Milliseconds(), KillGraceMS: e.killGrace.Milliseconds(), Bwrap: e.sandbox.Bwrap,
	}
	for k, v := range env {
		spec.Env = append(spec.Env, k+"="+v)
	}
	for _, pin := range p.Pins() {
		spec.Pins = append(spec.Pins, sandbox.Pin{Path: pin.Path, RealPath: pin.RealPath, SHA256: pin.SHA256, Bytes: pin.Bytes})
	}
	if u := p.RunAs(); u != nil {
		spec.RunAs = &sandbox.Identity{UID: u.UID, GID: u.GID}
	}
	r.CredentialsInjected = p.CredentialIDs()

	outR, outW, err := os.Pipe()
	if err != nil {
		r.Status, r.Reason, r.Message = govern.StatusFailedToStart, govern.ReasonSpawnError, err.Error()
		return r
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		r.Status, r.Reason, r.Message = govern.StatusFailedToStart, govern.ReasonSpawnError, err.Error()
		return r
	}
	stdio := sandbox.Stdio{Stdout: outW, Stderr: errW}
	if in := p.Stdin(); in != nil {
		inR, inW, err := os.Pipe()
		if err == nil {
			stdio.Stdin = inR
			go func() { inW.Write(in); inW.Close() }()
			defer inR.Close()
		}
	}
	copied := make(chan struct{}, 2)
	go func() { r.Stdout = capCopy(stdout, outR, p.OutputMaxBytes()); copied <- struct{}{} }()
	go func() { r.Stderr = capCopy(stderr, errR, p.OutputMaxBytes()); copied <- struct{}{} }()

	res := sandbox.Run(ctx, spec, stdio, sandbox.WithHelper(e.sandbox.Helper))
	outW.Close()
	errW.Close()
	drain := time.NewTimer(2 * time.Second)
	for i := 0; i < 2; i++ {
		select {
		case <-copied:
		case <-drain.C:
			outR.Close()
			errR.Close()
			<-copied
		}
	}
	drain.Stop()
	outR.Close()
	errR.Close()

	r.Status, r.Reason, r.Message, r.ExitCode = res.Status, res.Reason, res.Message, res.ExitCode
	r.Duration = time.Duration(res.DurationMS) * time.Millisecond
	r.TimedOut = res.Status == govern.StatusTimedOut
	if res.SandboxMode.Valid() {
		r.SandboxMode = res.SandboxMode
	}
	r.PinMethod = res.PinMethod
	limits := res.LimitsEnforced
	r.Limits = &limits
	r.DaemonKill = limits.DaemonKill.Enforced
	r.ProtectedCreated = res.ProtectedCreated
	return r
}
