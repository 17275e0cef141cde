package admission

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// Client talks to the gateway's admission socket.
type Client struct {
	// Socket is the socket's path.
	Socket string
	// Timeout bounds an admit (a held call may wait for a person, so it
	// is long); zero means no bound. A redemption is bounded by ctx only:
	// it lasts as long as the command.
	Timeout time.Duration
}

// roundTrip sends req over a fresh connection to the socket and returns
// the response; closing its body closes the connection. net/http writes the
// request and reads the response, but no Transport runs: the hook starts
// before every shell call an agent makes, and a Transport's connection
// pool and per-connection goroutines cost it milliseconds for one request.
// timeout bounds the whole exchange, body included; 0: only ctx does.
func (c Client) roundTrip(ctx context.Context, req *http.Request, timeout time.Duration) (*http.Response, error) {
	cancel := func() {}
	if timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, timeout)
	}
	conn, err := (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, "unix", c.Socket)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("%w (%s): %v", ErrUnreachable, c.Socket, err)
	}
	// An ended ctx (a timeout, an interrupted relay) closes the connection,
	// which unblocks any read or write and tells the gateway to stop.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	done := func() {
		stop()
		conn.Close()
		cancel()
	}
	req.Close = true
	if err := req.Write(conn); err != nil {
		done()
		return nil, fmt.Errorf("sending the request to the gateway: %w", ctxErr(ctx, err))
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		done()
		return nil, fmt.Errorf("reading the gateway's answer: %w", ctxErr(ctx, err))
	}
	resp.Body = &connBody{ReadCloser: resp.Body, ctx: ctx, done: done}
	return resp, nil
}

// ctxErr prefers the context's reason over the closed connection's.
func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// connBody closes the connection with the body.
type connBody struct {
	io.ReadCloser
	ctx  context.Context
	done func()
}

func (b *connBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && err != io.EOF {
		err = ctxErr(b.ctx, err)
	}
	return n, err
}

func (b *connBody) Close() error {
	err := b.ReadCloser.Close()
	b.done()
	return err
}

// ErrStreamBroken is Redeem's error when the gateway accepted the ticket
// and the stream then stopped without a result: the gateway went away
// mid-run, and with it the run (a dropped connection kills it).
var ErrStreamBroken = errors.New("the gateway's stream broke")

// ErrUnreachable wraps every failure to reach the gateway at all.
var ErrUnreachable = errors.New("the gateway's admission socket is unreachable")

func (c Client) post(ctx context.Context, path string, body any, timeout time.Duration) (*http.Response, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://mitrity"+path, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.roundTrip(ctx, req, timeout)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, errorFrom(resp)
	}
	return resp, nil
}

// errorFrom reads an *Error body, or makes one from the status.
func errorFrom(resp *http.Response) error {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var e Error
	if json.Unmarshal(data, &e) == nil && e.Code != "" {
		return &e
	}
	code := ErrInternal
	if resp.StatusCode == http.StatusForbidden {
		code = ErrForbidden
	}
	return &Error{Code: code, Message: fmt.Sprintf("%s: %s", resp.Status, bytes.TrimSpace(data))}
}

// Admit asks for a decision.
func (c Client) Admit(ctx context.Context, req AdmitRequest) (AdmitResponse, error) {
	resp, err := c.post(ctx, PathAdmit, req, c.Timeout)
	if err != nil {
		return AdmitResponse{}, err
	}
	defer resp.Body.Close()
	var out AdmitResponse
	if err := json.NewDecoder(io.LimitReader(resp.Body, MaxRequestBytes)).Decode(&out); err != nil {
		return AdmitResponse{}, fmt.Errorf("malformed admit response: %w", err)
	}
	switch out.Decision {
	case Allow, Deny, Ask:
	default:
		return AdmitResponse{}, fmt.Errorf("malformed admit response: decision %q", out.Decision)
	}
	return out, nil
}

// Redeem runs a ticket, calling frame (when not nil) for each output frame
// as it arrives, and returns the result. A stream that ends without a
// result is an error (the relay then exits 126, never as if the command
// had succeeded).
func (c Client) Redeem(ctx context.Context, req RedeemRequest, frame func(Frame) error) (Result, error) {
	resp, err := c.post(ctx, PathRedeem, req, 0)
	if err != nil {
		return Result{}, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var f Frame
		if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
			return Result{}, fmt.Errorf("malformed frame: %w", err)
		}
		switch f.Type {
		case FrameResult:
			if f.Result == nil {
				return Result{}, errors.New("malformed frame: a result frame without a result")
			}
			return *f.Result, nil
		case FrameStdout, FrameStderr:
			if frame == nil {
				continue
			}
			if err := frame(f); err != nil {
				return Result{}, err
			}
		default:
			return Result{}, fmt.Errorf("malformed frame: type %q", f.Type)
		}
	}
	if err := sc.Err(); err != nil {
		return Result{}, fmt.Errorf("%w: %v", ErrStreamBroken, err)
	}
	return Result{}, fmt.Errorf("%w: it ended without a result", ErrStreamBroken)
}

// Health checks the gateway is there.
func (c Client) Health(ctx context.Context) (Health, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://mitrity"+PathHealth, nil)
	if err != nil {
		return Health{}, err
	}
	resp, err := c.roundTrip(ctx, req, 5*time.Second)
	if err != nil {
		return Health{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Health{}, errorFrom(resp)
	}
	var h Health
	err = json.NewDecoder(resp.Body).Decode(&h)
	return h, err
}
