package upstream

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
	"gotest.tools/v3/assert"
	is "gotest.tools/v3/assert/cmp"
)

// endless is a body of n bytes of JSON whitespace, then "{}".
func endless(w http.ResponseWriter, n int) {
	chunk := bytes.Repeat([]byte(" "), 64<<10)
	for sent := 0; sent < n; sent += len(chunk) {
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
	_, _ = w.Write([]byte("{}"))
}

// TestHTTPClientBoundsResponses: the SDK reads a JSON answer, and the
// body of an error status, whole into memory (io.ReadAll), so a server
// that sends one without end would have the gateway hold all of it. A
// body that is not a 2xx event stream (whose events the SDK bounds one by
// one) is cut at MaxResponseBytes, its read failing.
func TestHTTPClientBoundsResponses(t *testing.T) {
	t.Parallel()
	const big = MaxResponseBytes + 4<<20
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/json":
			w.Header().Set("Content-Type", "application/json")
			endless(w, big)
		case "/error-stream":
			// An error status claiming to be a stream: the SDK reads
			// an error's body whole whatever its type.
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusBadRequest)
			endless(w, big)
		case "/stream":
			w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
			for range big / (1 << 20) {
				_, _ = io.WriteString(w, "data: "+strings.Repeat("x", 1<<20)+"\n\n")
			}
		case "/small":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
		}
	}))
	t.Cleanup(srv.Close)
	client, err := HTTPClient("", "", map[string]string{"X-Test": "1"})
	assert.NilError(t, err)
	for _, tt := range []struct {
		path    string
		bounded bool
	}{{"/json", true}, {"/error-stream", true}, {"/stream", false}, {"/small", false}} {
		t.Run(strings.TrimPrefix(tt.path, "/"), func(t *testing.T) {
			t.Parallel()
			resp, err := client.Get(srv.URL + tt.path)
			assert.NilError(t, err)
			defer resp.Body.Close()
			n, err := io.Copy(io.Discard, resp.Body)
			if !tt.bounded {
				assert.NilError(t, err)
				return
			}
			assert.Check(t, is.ErrorContains(err, "over 16777216 bytes"))
			assert.Check(t, n <= MaxResponseBytes, "read %d bytes", n)
		})
	}
}

// TestConnHTTPResponseBound: an HTTP upstream that answers initialize
// with a body without end fails to connect, at the bound, rather than
// being read whole.
func TestConnHTTPResponseBound(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "no", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		endless(w, 64<<20)
	}))
	defer srv.Close()
	client, err := HTTPClient("", "", nil)
	assert.NilError(t, err)
	rec, logs := newRecorder(), &lockedBuffer{}
	c := NewConn("big", "test", func(context.Context) (mcp.Transport, error) {
		return &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: client, MaxRetries: -1}, nil
	}, rec.hooks(), zerolog.New(logs))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	rctx, rcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer rcancel()
	c.Ready(rctx)
	assert.Check(t, is.ErrorContains(c.Health(), "over 16777216 bytes"))
}
