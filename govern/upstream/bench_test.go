package upstream

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mitrity/mitrity/govern/dlp"
)

// BenchmarkResult1MiB is what happens to a 1 MiB tool result (build-log
// text with two secrets in it) on its way back, per byte of the result:
// redact is the redaction alone through the chain the service uses (a
// credential redactor with one injected value, then every built-in DLP
// detector) over the typed result; clean is all of Clean: redaction, the
// injection scan, and the hash and size the audit event keeps.
func BenchmarkResult1MiB(b *testing.B) {
	red, err := dlp.NewRedactor([]dlp.Secret{{ID: "github_token", Value: "ghp_benchSecretValue0123456789abcdefABCD"}})
	if err != nil {
		b.Fatal(err)
	}
	bind, err := dlp.Bind([]string{"all"})
	if err != nil {
		b.Fatal(err)
	}
	redact := func(s string) (string, int) {
		out, counts := red.Redact([]byte(s))
		r, hits := bind.Redact(string(out))
		n := len(hits)
		for _, c := range counts {
			n += c
		}
		return r, n
	}
	var sb strings.Builder
	line := "[2026-12-02T01:00:00Z] building module github.com/example/service: compiling pkg/handler/routes.go (ok, 412 ms)\n"
	for sb.Len() < 1<<20 {
		sb.WriteString(line)
	}
	text := sb.String()[:1<<20-200] + "\ntoken ghp_benchSecretValue0123456789abcdefABCD key AKIAHOSTILE2UPSTRM7Q\n"
	b.Run("redact", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		b.ReportAllocs()
		for range b.N {
			res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
			n := 0
			if _, _, _, ok := typed(res, func(s string) string { r, c := redact(s); n += c; return r }); !ok || n < 2 {
				b.Fatalf("redact: %v %d", ok, n)
			}
		}
	})
	b.Run("clean", func(b *testing.B) {
		b.SetBytes(int64(len(text)))
		b.ReportAllocs()
		for range b.N {
			res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
			seen, err := Clean(&res, redact)
			if err != nil || seen.Redactions < 2 {
				b.Fatalf("clean: %v %d", err, seen.Redactions)
			}
		}
	})
}
