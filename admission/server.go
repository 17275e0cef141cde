package admission

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"
)

// Backend is the gateway's side of the contract.
type Backend interface {
	// Admit decides a call. uid is the connecting process's.
	Admit(ctx context.Context, uid int, req AdmitRequest) (AdmitResponse, error)
	// Redeem takes the ticket and runs its plan, sending output frames to
	// out as they arrive and returning the result. A refused ticket is an
	// *Error with ErrTicketRefused, returned before any frame. ctx ends
	// when the relay goes away: the execution is then killed.
	Redeem(ctx context.Context, uid int, req RedeemRequest, out func(Frame) error) (Result, error)
}

// PeerFunc reads the connecting process's uid from a request's context.
type PeerFunc func(ctx context.Context) (uid int, ok bool)

// Handler serves the v1 contract over b. peer is unixsock.PeerUID in the
// gateway; a request whose peer is unknown is refused.
func Handler(b Backend, peer PeerFunc, version string) http.Handler {
	h := &handler{b: b, peer: peer, version: version}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+PathAdmit, h.admit)
	mux.HandleFunc("POST "+PathRedeem, h.redeem)
	mux.HandleFunc("GET "+PathHealth, h.health)
	// The catch-all below would turn a known path's wrong method into a
	// 404: answer 405 naming the method that path takes.
	for path, allow := range map[string]string{PathAdmit: "POST", PathRedeem: "POST", PathHealth: "GET, HEAD"} {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			writeError(w, http.StatusMethodNotAllowed, &Error{Code: ErrInvalidRequest, Message: r.Method + " " + r.URL.Path + ": want " + allow})
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, &Error{Code: ErrInvalidRequest, Message: "no such endpoint: " + r.Method + " " + r.URL.Path + " (this gateway speaks " + PathAdmit + ", " + PathRedeem + ", " + PathHealth + ")"})
	})
	return mux
}

type handler struct {
	b       Backend
	peer    PeerFunc
	version string
}

func (h *handler) uid(w http.ResponseWriter, r *http.Request) (int, bool) {
	uid, ok := h.peer(r.Context())
	if !ok {
		writeError(w, http.StatusForbidden, &Error{Code: ErrForbidden, Message: "the caller's uid could not be read from the socket"})
	}
	return uid, ok
}

func readBody(w http.ResponseWriter, r *http.Request, v any) bool {
	data, err := io.ReadAll(io.LimitReader(r.Body, MaxRequestBytes+1))
	switch {
	case err != nil:
		writeError(w, http.StatusBadRequest, &Error{Code: ErrInvalidRequest, Message: "reading the request: " + err.Error()})
		return false
	case len(data) > MaxRequestBytes:
		writeError(w, http.StatusRequestEntityTooLarge, &Error{Code: ErrInvalidRequest, Message: "the request is larger than 1 MiB"})
		return false
	}
	if err := decodeStrict(data, v); err != nil {
		writeError(w, http.StatusBadRequest, &Error{Code: ErrInvalidRequest, Message: "malformed request: " + err.Error()})
		return false
	}
	return true
}

func (h *handler) admit(w http.ResponseWriter, r *http.Request) {
	uid, ok := h.uid(w, r)
	if !ok {
		return
	}
	var req AdmitRequest
	if !readBody(w, r, &req) {
		return
	}
	if err := req.Validate(); err != nil {
		writeError(w, http.StatusBadRequest, &Error{Code: ErrInvalidRequest, Message: err.Error()})
		return
	}
	resp, err := h.b.Admit(r.Context(), uid, req)
	if err != nil {
		writeBackendError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

func (h *handler) redeem(w http.ResponseWriter, r *http.Request) {
	uid, ok := h.uid(w, r)
	if !ok {
		return
	}
	var req RedeemRequest
	if !readBody(w, r, &req) {
		return
	}
	if err := req.Validate(); err != nil {
		writeError(w, http.StatusBadRequest, &Error{Code: ErrInvalidRequest, Message: err.Error()})
		return
	}
	fl, _ := w.(http.Flusher)
	enc := json.NewEncoder(w)
	var mu sync.Mutex // stdout and stderr frames come from two goroutines
	started, done := false, false
	write := func(f Frame) error { // mu held
		if !started {
			started = true
			w.Header().Set("Content-Type", "application/x-ndjson")
			w.WriteHeader(http.StatusOK)
		}
		if err := enc.Encode(f); err != nil {
			return err
		}
		if fl != nil {
			fl.Flush()
		}
		return nil
	}
	send := func(f Frame) error {
		mu.Lock()
		defer mu.Unlock()
		if done {
			// w is net/http's again once the handler returns: writing
			// to it then would corrupt another response.
			return errRedeemEnded
		}
		return write(f)
	}
	res, err := h.b.Redeem(r.Context(), uid, req, send)
	mu.Lock()
	defer mu.Unlock()
	done = true
	if err != nil && !started {
		writeBackendError(w, err)
		return
	}
	if err != nil {
		// Output has gone out already; the result frame says what failed.
		res = Result{ExitCode: 126, Status: "failed_to_start", Reason: "spawn_error", Message: err.Error()}
	}
	_ = write(Frame{Type: FrameResult, Result: &res})
}

// errRedeemEnded is what a frame sent after Backend.Redeem returned gets.
var errRedeemEnded = errors.New("admission: frame sent after the redemption ended")

func (h *handler) health(w http.ResponseWriter, r *http.Request) {
	if _, ok := h.uid(w, r); !ok {
		return
	}
	writeJSON(w, http.StatusOK, Health{Version: h.version, API: "v1"})
}

func writeBackendError(w http.ResponseWriter, err error) {
	var e *Error
	if !errors.As(err, &e) {
		writeError(w, http.StatusInternalServerError, &Error{Code: ErrInternal, Message: err.Error()})
		return
	}
	status := http.StatusInternalServerError
	switch e.Code {
	case ErrInvalidRequest:
		status = http.StatusBadRequest
	case ErrForbidden:
		status = http.StatusForbidden
	case ErrTicketRefused:
		status = http.StatusNotFound
	case ErrUnavailable:
		status = http.StatusServiceUnavailable
	}
	writeError(w, status, e)
}

func writeError(w http.ResponseWriter, status int, e *Error) { writeJSON(w, status, e) }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
