package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// DefaultWebhookTimeout bounds one webhook delivery when none is set: the
// longest a notification can hold up the command that caused it.
const DefaultWebhookTimeout = 5 * time.Second

// MaxWebhookTimeout caps the configured timeout for the same reason.
const MaxWebhookTimeout = 30 * time.Second

type webhook struct {
	url     *url.URL
	timeout time.Duration
	client  *http.Client
}

func newWebhook(rawURL string, timeout time.Duration, c *http.Client) (*webhook, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		// Never echo the URL: it usually holds the webhook's token.
		return nil, errors.New("notify: webhook URL must be an absolute http or https URL")
	}
	switch {
	case timeout == 0:
		timeout = DefaultWebhookTimeout
	case timeout < 0 || timeout > MaxWebhookTimeout:
		return nil, fmt.Errorf("notify: webhook timeout %s out of range (0 < timeout <= %s)", timeout, MaxWebhookTimeout)
	}
	w := &webhook{url: u, timeout: timeout}
	w.setClient(c)
	return w, nil
}

func (w *webhook) setClient(c *http.Client) {
	cl := http.Client{}
	if c != nil {
		cl = *c
	}
	cl.Timeout = w.timeout
	// A redirect would send the payload somewhere the operator did not
	// configure; refuse it.
	cl.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	w.client = &cl
}

func (w *webhook) host() string { return w.url.Host }

// post delivers once. It returns within the timeout whatever the server
// does; errors never include the URL.
func (w *webhook) post(ctx context.Context, no Notification) error {
	body, err := json.Marshal(no)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url.String(), bytes.NewReader(body))
	if err != nil {
		return errors.New("building the request failed")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "mitrity-gateway-notify")
	resp, err := w.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // drop the URL the error would otherwise carry
		}
		return fmt.Errorf("POST to %s: %w", w.url.Host, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("POST to %s: status %s", w.url.Host, resp.Status)
	}
	return nil
}
