package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/mitrity/mitrity/admission"
	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/config"
	"github.com/mitrity/mitrity/govern/sandbox"
	"github.com/mitrity/mitrity/govern/service"
	"github.com/mitrity/mitrity/govern/unixsock"
)

// admissionBackend serves the admission contract over the service.
type admissionBackend struct {
	svc *service.Service
	// inflight counts admits and redemptions, so shutdown waits for their
	// audit events before the log closes.
	inflight *sync.WaitGroup
}

func (b admissionBackend) Admit(ctx context.Context, uid int, req admission.AdmitRequest) (admission.AdmitResponse, error) {
	b.inflight.Add(1)
	defer b.inflight.Done()
	a := b.svc.Admit(ctx, govern.Call{Agent: req.Agent, Session: req.SessionID, Command: req.Command, Cwd: req.Cwd, TimeoutSeconds: req.TimeoutSeconds}, uid)
	resp := admission.AdmitResponse{Routing: admission.Routing(a.Routing), EventID: a.EventID, Ticket: a.Ticket}
	d := a.Decision
	switch d.Outcome {
	case govern.Allow:
		resp.Decision, resp.Message = admission.Allow, "allowed"
	case govern.Ask:
		resp.Decision, resp.Reason = admission.Ask, string(d.Reason)
		resp.Message = fmt.Sprintf("needs a person's approval (%s): %s", d.Reason, d.Message)
	default:
		resp.Decision, resp.Reason = admission.Deny, string(d.Reason)
		resp.Message = fmt.Sprintf("denied (%s): %s", d.Reason, d.Message)
	}
	if a.Ticket != "" {
		exp := a.Expires
		resp.ExpiresAt = &exp
	}
	return resp, nil
}

func (b admissionBackend) Redeem(ctx context.Context, uid int, req admission.RedeemRequest, out func(admission.Frame) error) (admission.Result, error) {
	b.inflight.Add(1)
	defer b.inflight.Done()
	res, err := b.svc.Redeem(ctx, req.Ticket, req.Agent, uid, func(stream string, p []byte) {
		// A relay that went away cancels ctx, which kills the run; a
		// frame that cannot be written is dropped until then.
		_ = out(admission.Frame{Type: admission.FrameType(stream), Data: p})
	})
	if errors.Is(err, service.ErrTicketRefused) {
		return admission.Result{}, &admission.Error{Code: admission.ErrTicketRefused, Message: err.Error()}
	}
	if err != nil {
		return admission.Result{}, err
	}
	st := res.Structured
	r := admission.Result{ExitCode: res.ExitCode(), Status: res.Status.String(), Reason: st.Reason, TimedOut: st.TimedOut,
		Truncated: st.Truncated, SandboxMode: st.SandboxMode, RedactionCount: st.RedactionCount, DurationMs: st.DurationMs, EventID: st.EventID,
		ProtectedCreated: st.ProtectedCreated}
	if res.IsError {
		r.Message = res.Text
	} else if st.Message != "" {
		r.Message = st.Message
	}
	if !res.Status.Valid() {
		r.Status = govern.StatusNeverRan.String()
	}
	return r, nil
}

// listenAdmission serves the admission socket of cfg: 0600 in a 0700
// directory, handed to the one non-root owner when the gateway is root, and
// every peer's uid checked against the owners.
func listenAdmission(cfg *config.Config, svc *service.Service, logger zerolog.Logger) (*admissionServer, error) {
	var opts unixsock.Options
	for _, name := range cfg.Admission.Owners {
		u, err := user.Lookup(name)
		if err != nil {
			if u, err = user.LookupId(name); err != nil {
				return nil, fmt.Errorf("admission.owners: %q: no such user", name)
			}
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		opts.UIDs = append(opts.UIDs, uid)
		if os.Geteuid() == 0 && uid != 0 {
			opts.Owner = &unixsock.Owner{UID: uid, GID: gid}
		}
	}
	if os.Geteuid() == 0 && opts.Owner == nil {
		// Root serving root: /run/mitrity also holds the run_as user's
		// credential directories, so it stays traversable.
		_ = os.MkdirAll(govern.RuntimeDir(0, os.Getenv), 0o711)
	}
	// The hook and its relay may run in an agent framework's own sandbox
	// (Claude Code's runs the relay): only ours are refused, whose
	// commands share the gateway's uid.
	opts.Accept = sandbox.NotInSandbox
	b := admissionBackend{svc: svc, inflight: &sync.WaitGroup{}}
	srv, err := listenOrInherit(cfg.Admission.Socket, admission.Handler(b, unixsock.PeerUID, version), opts, logger)
	if err != nil {
		return nil, fmt.Errorf("admission %w", err)
	}
	logger.Info().Str("socket", srv.Path()).Strs("owners", cfg.Admission.Owners).Msg("serving admission")
	return &admissionServer{srv: srv, inflight: b.inflight}, nil
}

type admissionServer struct {
	srv      *unixsock.Server
	inflight *sync.WaitGroup
}

// shutdown stops accepting; redemptions in flight may finish within grace,
// then their connections close, which cancels (kills) the executions. It
// returns once every call in flight has written its audit events.
func (a *admissionServer) shutdown(grace time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := a.srv.Shutdown(ctx); err != nil {
		a.srv.Close()
	}
	a.inflight.Wait()
}
