package service

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/config"
)

// BenchmarkCallTool is one upstream tools/call through the service in
// process, against a Streamable HTTP upstream on loopback, beside the
// same call made directly with the SDK client: what the pipeline adds
// without the agent's own transport (decision, audit reservation and the
// fsynced event, redaction and the injection scan of the result).
func BenchmarkCallTool(b *testing.B) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Echoes its text."},
		func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			Text string `json:"text"`
		}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}}, nil, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer hs.Close()

	dir := b.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		b.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "mitrity-gateway.yaml")
	yaml := "exec:\n  enabled: false\n  default_cwd: " + ws + "\n  sandbox:\n    backend: none\n" +
		"audit:\n  path: " + filepath.Join(dir, "audit.jsonl") + "\n" +
		"upstreams:\n  bench:\n    url: " + hs.URL + "\n"
	if os.Geteuid() == 0 {
		yaml = "exec:\n  run_as: nobody\n" + yaml[len("exec:\n"):]
	}
	if err := os.WriteFile(cfgPath, []byte(yaml), 0o600); err != nil {
		b.Fatal(err)
	}
	cfg, err := config.Loader{}.Load(cfgPath)
	if err != nil {
		b.Fatal(err)
	}
	svc, err := Open(cfg, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	defer svc.Close()
	svc.StartUpstreams(func() {}, func(string) bool { return false }, 10*time.Second)
	if len(svc.UpstreamTools()) != 1 {
		b.Fatalf("tools: %v", svc.UpstreamTools())
	}
	ctx := context.Background()
	b.Run("direct", func(b *testing.B) {
		c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL, MaxRetries: -1}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		for range b.N {
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("service", func(b *testing.B) {
		for range b.N {
			res := svc.CallTool(ctx, govern.Call{Agent: "bench", Tool: "bench__echo", Arguments: []byte(`{"text":"hello"}`)}, nil)
			if res.IsError {
				b.Fatalf("%+v", res.Content[0])
			}
		}
	})
}
