package executor

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/plan"
	"github.com/mitrity/mitrity/govern/sandbox"
	"github.com/mitrity/mitrity/govern/secretscan"
)

// runSandboxed runs p inside bubblewrap in a new mitrity-sandboxrun
// (sandbox.Spawn: the spec in, the result out, on pipes). The sandbox binds the judged script bytes over their paths, materialises the
// credential files in a private tmpfs, enforces the timeout and limits,
// and kills every process the command started when it ends.
func (e *Executor) runSandboxed(ctx context.Context, p *plan.Plan, creds map[string]string, r Result, rio runIO) (res Result) {
	stdout, stderr := rio.stdout, rio.stderr
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
		Argv: argv(p), Cwd: p.Cwd(), WorkspaceRoots: p.WorkspaceRoots(), DenyPaths: append(slices.Clone(e.sandbox.DenyPaths), p.DenyPaths()...), ReadOnlyPaths: e.sandbox.ReadOnlyPaths,
		CredFiles: files, Seccomp: e.sandbox.Seccomp, Limits: e.sandbox.Limits, Narrowing: e.sandbox.Narrowing,
		TimeoutMS: p.Timeout().Milliseconds(), KillGraceMS: e.killGrace.Milliseconds(), Bwrap: e.sandbox.Bwrap,
	}
	for k, v := range env {
		spec.Env = append(spec.Env, k+"="+v)
	}
	// The gateway's own home is masked like every home in /etc/passwd and
	// under /home, wherever its HOME points (a service's state directory,
	// a container's /app).
	if h := os.Getenv("HOME"); filepath.IsAbs(h) {
		spec.DenyHomes = append(spec.DenyHomes, filepath.Clean(h))
	}
	spec.Pins = p.Pins()
	if u := p.RunAs(); u != nil {
		spec.RunAs = &sandbox.Identity{UID: u.UID, GID: u.GID}
	}
	r.CredentialsInjected = p.CredentialIDs()
	for _, id := range r.CredentialsInjected {
		// No process of the run may start another with one of these on
		// its command line (the sandbox's exec guard).
		spec.Credentials = append(spec.Credentials, secretscan.Secret{ID: id, Value: creds[id]})
	}

	// The run's only way out: mitrity-egressproxy on a private Unix socket,
	// reached through the sandbox's loopback bridge. An empty allowlist is
	// no network at all: no proxy, no bridge.
	if allow := p.Egress(); len(allow) > 0 {
		socket, pctx, finish, err := e.superviseProxy(ctx, allow)
		if err != nil {
			r.Status, r.Reason, r.Message = govern.StatusFailedToStart, govern.ReasonSpawnError, "egress proxy: "+err.Error()
			return r
		}
		ctx = pctx
		defer func() { finish(&res) }() // after the return value is set
		spec.ProxySocket = socket
	}

	st, err := newStreams(rio.stdoutFile)
	if err != nil {
		r.Status, r.Reason, r.Message = govern.StatusFailedToStart, govern.ReasonSpawnError, err.Error()
		return r
	}
	stdio := sandbox.Stdio{Stdout: st.outW, Stderr: st.errW}
	if rio.stdinFile != nil {
		stdio.Stdin = rio.stdinFile // Serve's protocol pipe, read by the program itself
	} else if in := p.Stdin(); in != nil || rio.stdin != nil {
		inR, inW, err := os.Pipe()
		if err == nil {
			stdio.Stdin = inR
			go func() {
				if rio.stdin != nil {
					io.Copy(inW, rio.stdin)
				} else {
					inW.Write(in)
				}
				inW.Close()
			}()
			defer inR.Close()
		}
	}
	st.copy(stdout, stderr, p.OutputMaxBytes())
	// The supervisor runs in a helper of its own, started for this run
	// alone: whatever happens to it cannot reach this process.
	sres := sandbox.Spawn(ctx, e.sandbox.Helper, spec, stdio)
	r.Stdout, r.Stderr = st.finish(2 * time.Second)

	r.Result = sres
	return r
}
