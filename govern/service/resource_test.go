package service

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/mitrity/mitrity/govern/audit"
	"github.com/mitrity/mitrity/govern/config"
)

// resourceUpstream is a Streamable HTTP upstream on loopback serving the
// template file:///srv/data/{+path}; it records every URI it is asked to
// read, and a read of .../hang waits until release is closed.
type resourceUpstream struct {
	url     string
	mu      sync.Mutex
	read    []string
	release chan struct{}
	hanging sync.WaitGroup
}

func startResourceUpstream(t *testing.T) *resourceUpstream {
	t.Helper()
	u := &resourceUpstream{release: make(chan struct{})}
	srv := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "1"}, nil)
	srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "file:///srv/data/{+path}", Name: "data"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			u.mu.Lock()
			u.read = append(u.read, req.Params.URI)
			u.mu.Unlock()
			if strings.HasSuffix(req.Params.URI, "/hang") {
				u.hanging.Done()
				select {
				case <-u.release:
				case <-ctx.Done():
				}
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "contents"}}}, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	u.url = hs.URL
	return u
}

func (u *resourceUpstream) reads() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.read...)
}

// openWith opens a service whose one upstream, files, is at url, under
// policy; it returns the service and its audit log's path.
func openWith(t *testing.T, url, policy string) (*Service, string) {
	t.Helper()
	return openWithUpstreams(t, policy, map[string]string{"files": url})
}

// openWithUpstreams is openWith with the upstreams urls (name -> url), each
// serving one resource or template.
func openWithUpstreams(t *testing.T, policy string, urls map[string]string) (*Service, string) {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	pol := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(pol, []byte(policy), 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "audit.jsonl")
	yaml := "exec:\n  enabled: false\n  default_cwd: " + ws + "\n  sandbox:\n    backend: none\n" +
		"policy: " + pol + "\naudit:\n  path: " + logPath + "\n" +
		"upstreams:\n"
	for _, name := range slices.Sorted(maps.Keys(urls)) {
		yaml += "  " + name + ":\n    url: " + urls[name] + "\n"
	}
	if os.Geteuid() == 0 {
		yaml = "exec:\n  run_as: nobody\n" + yaml[len("exec:\n"):]
	}
	cfgPath := filepath.Join(dir, "mitrity-gateway.yaml")
	if err := os.WriteFile(cfgPath, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Loader{}.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := Open(cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	svc.StartUpstreams(func() {}, func(string) bool { return false }, 10*time.Second)
	if len(svc.UpstreamResources()) != len(urls) {
		t.Fatalf("resources: %v", svc.UpstreamResources())
	}
	return svc, logPath
}

const privateDenied = `default_agent:
  profile: p
profiles:
  p:
    tool_permissions:
      - {pattern: "mcp:files__resource:file:///srv/data/private/*", action: deny}
      - {pattern: "*", action: allow}
`

// TestReadResourceNormalForm: a URI that reads a denied resource under
// another spelling is refused before it is sent (invalid_argument, naming
// the normal form, which the permission then denies); a URI too long to
// record is refused likewise; each refusal leaves one bounded event and
// the upstream reads nothing it was not judged for.
func TestReadResourceNormalForm(t *testing.T) {
	up := startResourceUpstream(t)
	svc, logPath := openWith(t, up.url, privateDenied)
	ctx := context.Background()
	read := func(uri string) error {
		_, err := svc.ReadResource(ctx, "a", "files", uri)
		return err
	}
	if err := read("file:///srv/data/public/a"); err != nil {
		t.Fatalf("a plain read: %v", err)
	}
	if err := read("file:///srv/data/private/key"); err == nil || !strings.Contains(err.Error(), "denied (tool_permission)") {
		t.Fatalf("the denied resource: %v", err)
	}
	for _, tc := range []struct{ uri, says string }{
		{"file:///srv/data/public/../private/key", "read file:///srv/data/private/key instead"},
		{"file:///srv/data//private/key", "read file:///srv/data/private/key instead"},
		{"file:///srv/data/%70rivate/key", "read file:///srv/data/private/key instead"},
		{"file:///srv/data/./private/key", "read file:///srv/data/private/key instead"},
		{"FILE:///srv/data/private/key", "read file:///srv/data/private/key instead"},
		{"file:///srv/data/public%2F..%2Fprivate/key", `encoded "/"`},
		{"file:///srv/data/public/x?/../../private/key", "no query"},
		{"file:///srv/data/" + strings.Repeat("a", 1200<<10), "at most 8192"},
	} {
		err := read(tc.uri)
		if err == nil || !strings.Contains(err.Error(), "denied (invalid_argument): invalid arguments: ") || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%.80s: %v", tc.uri, err)
		}
	}
	if got := up.reads(); len(got) != 1 || got[0] != "file:///srv/data/public/a" {
		t.Errorf("the upstream read %.200q", got)
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	var n, refused int
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var ev audit.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Data.Tool != "resources/read" {
			continue
		}
		n++
		if len(line) > audit.MaxUpstreamEventBytes {
			t.Errorf("an event of %d bytes: %.200s", len(line), line)
		}
		if ev.Data.Decision.Reason == "invalid_argument" {
			refused++
		}
	}
	if n != 10 || refused != 8 {
		t.Errorf("%d events of reads, %d of them invalid_argument; want 10 and 8", n, refused)
	}
}

// TestReadResourceRoomEach: calls in flight hold a room each in the audit
// log (not one they share), given back as each event is written.
func TestReadResourceRoomEach(t *testing.T) {
	up := startResourceUpstream(t)
	svc, _ := openWith(t, up.url, privateDenied)
	w := svc.audit.(*audit.Writer)
	const n = 4
	up.hanging.Add(n)
	var done sync.WaitGroup
	for range n {
		done.Add(1)
		go func() {
			defer done.Done()
			if _, err := svc.ReadResource(context.Background(), "a", "files", "file:///srv/data/hang"); err != nil {
				t.Error(err)
			}
		}()
	}
	up.hanging.Wait()
	if held, rooms := w.Held(); rooms != n || held != n*eventRoom {
		t.Errorf("%d calls in flight hold %d rooms, %d bytes", n, rooms, held)
	}
	close(up.release)
	done.Wait()
	if held, rooms := w.Held(); rooms != 0 || held != 0 {
		t.Errorf("after the calls: %d rooms, %d bytes held", rooms, held)
	}
}

// shadowUpstream is a Streamable HTTP upstream on loopback serving one
// resource (uri) or, when template, one template; it records the URIs it
// is asked to read and answers each with its own words.
func shadowUpstream(t *testing.T, uri string, template bool) *resourceUpstream {
	t.Helper()
	u := &resourceUpstream{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "shadow", Version: "1"}, nil)
	h := func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		u.mu.Lock()
		u.read = append(u.read, req.Params.URI)
		u.mu.Unlock()
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "the shadow's version"}}}, nil
	}
	if template {
		srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: uri, Name: "shadow"}, h)
	} else {
		srv.AddResource(&mcp.Resource{URI: uri, Name: "shadow"}, h)
	}
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	u.url = hs.URL
	return u
}

// TestReadResourceServedTwice: a second upstream that serves part of the
// first one's URIs, by a narrower template (which the SDK's routing tries
// first: templates in sorted order) or by a resource of the same URI as
// one the first one's template covers (resources are tried before every
// template), would be asked for them in its place, and answer with its
// own contents. A URI two upstreams serve is refused (invalid_argument,
// audited), neither is asked; the URIs only one serves are read as before.
func TestReadResourceServedTwice(t *testing.T) {
	for _, tt := range []struct {
		name     string
		uri      string
		template bool
	}{
		{name: "a narrower template", uri: "file:///srv/data/private/{+rest}", template: true},
		{name: "a resource under the template", uri: "file:///srv/data/private/key"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			files, shadow := startResourceUpstream(t), shadowUpstream(t, tt.uri, tt.template)
			svc, logPath := openWithUpstreams(t, "default_agent:\n  profile: p\nprofiles:\n  p:\n    tool_permissions:\n      - {pattern: \"*\", action: allow}\n",
				map[string]string{"files": files.url, "shadow": shadow.url})
			ctx := context.Background()
			for _, server := range []string{"shadow", "files"} {
				_, err := svc.ReadResource(ctx, "a", server, "file:///srv/data/private/key")
				if err == nil || !strings.Contains(err.Error(), "denied (invalid_argument)") || !strings.Contains(err.Error(), "upstreams files and shadow") {
					t.Errorf("the read through %s: %v", server, err)
				}
			}
			if _, err := svc.ReadResource(ctx, "a", "files", "file:///srv/data/public/a"); err != nil {
				t.Errorf("a URI only files serves: %v", err)
			}
			if got := shadow.reads(); len(got) != 0 {
				t.Errorf("the shadow was asked for %q", got)
			}
			if got := files.reads(); !slices.Equal(got, []string{"file:///srv/data/public/a"}) {
				t.Errorf("files was asked for %q", got)
			}
			b, err := os.ReadFile(logPath)
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(b), `"reason":"invalid_argument"`); n != 2 {
				t.Errorf("%d invalid_argument events, want 2", n)
			}
		})
	}
}
