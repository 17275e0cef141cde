package upstream

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"mime"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mitrity/mitrity/govern/regfile"
)

// HTTPClient is the client of a Streamable HTTP upstream: caFile (PEM,
// optional) replaces the system roots, serverName (optional) is the name
// the certificate must carry, headers go on every request.
func HTTPClient(caFile, serverName string, headers map[string]string) (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil // an upstream is reached directly, never through the environment's proxy
	tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName}
	if caFile != "" {
		pool, err := CAPool(caFile)
		if err != nil {
			return nil, err
		}
		tr.TLSClientConfig.RootCAs = pool
	}
	return &http.Client{Transport: headerTransport{next: tr, headers: headers}, Timeout: 0,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}, nil
}

// MaxCAFileBytes bounds a tls.ca_file: a bundle of every public root is
// a few hundred KiB.
const MaxCAFileBytes = 4 << 20

// CAPool reads a tls.ca_file: a regular file (a named pipe is refused, not
// waited on) of at most MaxCAFileBytes holding at least one PEM
// certificate. The gateway checks it before it starts, so a bad file is
// refused at boot rather than found when the upstream connects.
func CAPool(caFile string) (*x509.CertPool, error) {
	f, err := regfile.Open(caFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	pem, err := io.ReadAll(io.LimitReader(f, MaxCAFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(pem) > MaxCAFileBytes {
		return nil, fmt.Errorf("%s is larger than %d MiB", caFile, MaxCAFileBytes>>20)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", caFile)
	}
	return pool, nil
}

// ResponseHeaderTimeout bounds how long an upstream may take to start
// answering one request (a call's own timeout bounds the whole call).
const ResponseHeaderTimeout = 5 * time.Minute

type headerTransport struct {
	next    http.RoundTripper
	headers map[string]string
}

// MaxResponseBytes bounds the body of one response of an HTTP upstream
// that is not a 2xx event stream: a JSON answer, or the body of an error
// status, which the SDK reads whole into memory. It is the bound the SDK
// puts on one event of a stream, and on one line of a stdio upstream.
const MaxResponseBytes = mcp.DefaultMaxEventSize

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.headers {
		r.Header.Set(k, v)
	}
	resp, err := t.next.RoundTrip(r)
	if err != nil {
		return resp, err
	}
	// The SDK reads a 2xx event stream event by event, each bounded, and
	// tells one by its media type as here; anything else it reads whole.
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode/100 != 2 || mt != "text/event-stream" {
		resp.Body = &boundedBody{ReadCloser: resp.Body, left: MaxResponseBytes}
	}
	return resp, nil
}

// boundedBody fails a read past left bytes (as http.MaxBytesReader does
// for a request): the SDK's read of the answer fails, and so the session.
type boundedBody struct {
	io.ReadCloser
	left int64
	err  error
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	// One byte more than is left tells a body of exactly the bound from
	// a longer one.
	if int64(len(p))-1 > b.left {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	if int64(n) <= b.left {
		b.left -= int64(n)
		return n, err
	}
	n, b.left = int(b.left), 0
	b.err = fmt.Errorf("the upstream's response is over %d bytes (a JSON-RPC message is at most that); it was not read further", MaxResponseBytes)
	return n, b.err
}
