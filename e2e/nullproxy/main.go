// Command nullproxy is the least an MCP proxy built on the Go SDK can do,
// for BenchmarkUpstreamCall: it serves over stdio the tools of the server
// its arguments start, and forwards each tools/call as it is, with no
// decision, audit, redaction or scan. The difference between it and a
// direct call is what a second process hop costs by itself.
package main

import (
	"context"
	"log"
	"os"
	"os/exec"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mitrity/mitrity/e2e/internal/polled"
)

func main() {
	if len(os.Args) < 2 {
		log.Fatal("usage: nullproxy SERVER [ARGS...]")
	}
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "nullproxy", Version: "1"}, nil)
	up, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(os.Args[1], os.Args[2:]...)}, nil)
	if err != nil {
		log.Fatal(err)
	}
	tools, err := up.ListTools(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "nullproxy", Version: "1"}, nil)
	for _, t := range tools.Tools {
		srv.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return up.CallTool(ctx, &mcp.CallToolParams{Name: req.Params.Name, Arguments: req.Params.Arguments})
		})
	}
	stdin, stdout := polled.Stdio()
	err = srv.Run(ctx, &mcp.IOTransport{Reader: stdin, Writer: stdout})
	up.Close() // waits for the server to exit
	if err != nil {
		log.Fatal(err)
	}
}
