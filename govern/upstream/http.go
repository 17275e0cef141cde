package upstream

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"time"
)

// HTTPClient is the client of a Streamable HTTP upstream: caFile (PEM,
// optional) replaces the system roots, serverName (optional) is the name
// the certificate must carry, headers go on every request.
func HTTPClient(caFile, serverName string, headers map[string]string) (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = nil // an upstream is reached directly, never through the environment's proxy
	tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s holds no PEM certificate", caFile)
		}
		tr.TLSClientConfig.RootCAs = pool
	}
	return &http.Client{Transport: headerTransport{next: tr, headers: headers}, Timeout: 0,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}, nil
}

// ResponseHeaderTimeout bounds how long an upstream may take to start
// answering one request (a call's own timeout bounds the whole call).
const ResponseHeaderTimeout = 5 * time.Minute

type headerTransport struct {
	next    http.RoundTripper
	headers map[string]string
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.headers {
		r.Header.Set(k, v)
	}
	return t.next.RoundTrip(r)
}
