// Command mitrity-hostile-upstream is a deliberately hostile upstream MCP
// server, a test fixture for the gateway's and the sidecar's upstream proxy
// (issue 15). It is built on the official MCP Go SDK and misbehaves on
// request: it leaks the credential it was given, returns detector-matching
// secrets and prompt injections, poisons and changes tool descriptions,
// floods, hangs, crashes, writes garbage to its stdio stream, sends sampling
// and elicitation requests to its client and tries to reach the network.
//
// Usage:
//
//	mitrity-hostile-upstream [--listen ADDR [--stateless]] [--state DIR]
//
// Without --listen it speaks MCP over stdin/stdout; with --listen it serves
// Streamable HTTP at http://ADDR/mcp (ADDR may use port 0: the bound address
// is logged and written to the "listening" marker). It logs to stderr only:
// in stdio mode stdout is the protocol.
//
// Protocol versions: over stdio the SDK serves both the legacy versions
// (initialize handshake, up to 2025-11-25) and 2026-07-28 (server/discover,
// per-request metadata). Over HTTP the SDK serves 2026-07-28 only when the
// handler is stateless: by default the server is stateful and a 2026-07-28
// client falls back to 2025-11-25; --stateless serves 2026-07-28 (every
// POST its own session, cancellation tied to the request) and is meant for
// such clients only, since a stateless server cannot send legacy clients
// requests or list_changed notifications.
//
// Environment:
//
//	HOSTILE_SECRET  the credential the gateway injects (upstream env:
//	                ${credential:<id>}); leak, hostile://secret and the
//	                greet prompt return it.
//	HOSTILE_POISON  "1": the notes tool starts with a poisoned description.
//	HOSTILE_STATE   default for --state.
//
// Marker files written in the state directory (none without one), each
// replaced atomically, so a test can check from the host what happened:
//
//	started         the pid, on start
//	listening       host:port actually bound (HTTP mode)
//	calls           one JSON object per line for every tools/call,
//	                resources/read and prompts/get received:
//	                {"method","name","arguments"} (arguments as received,
//	                e.g. to check what the gateway redacted before forwarding)
//	hang-started    hang was called
//	hang-cancelled  hang's context was cancelled (content: the reason)
//	crashing        crash is about to os.Exit(3)
//	connect-result  what connect's TCP dial and HTTP GET did
//	sample-result   what became of the sampling request
//	elicit-result   what became of the elicitation request
//	mutated         the notes description mutate installed
//	tools-lists     how many tools/list requests it has answered
//	progress-token  the progress token of the last progress call
//	list-changed-flood  HOSTILE_FLOOD_LIST_CHANGED's loop started
//	stopped         the server returned normally (client went away, signal)
//
// Tools, their arguments and results are documented in tools.go, with the
// fixed detector-matching secrets leak returns:
//
//	AWS access key id  AKIAHOSTILE2UPSTRM7Q
//	GitHub token       ghp_HostileUpstreamFixtureQ4mN7pL2rT9vW3
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mitrity/mitrity/e2e/internal/polled"
)

func main() {
	listen := flag.String("listen", "", "serve Streamable HTTP at http://`ADDR`/mcp instead of stdio")
	stateless := flag.Bool("stateless", false, "with --listen: serve HTTP statelessly (protocol 2026-07-28)")
	state := flag.String("state", os.Getenv("HOSTILE_STATE"), "`DIR` for marker files (default $HOSTILE_STATE)")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("prog", "mitrity-hostile-upstream")
	st := &stateDir{dir: *state, log: log}
	if *stateless && *listen == "" {
		log.Error("--stateless needs --listen")
		os.Exit(2)
	}
	if err := run(*listen, *stateless, st, log); err != nil {
		log.Error("exiting", "err", err)
		os.Exit(1)
	}
}

func run(listen string, stateless bool, st *stateDir, log *slog.Logger) error {
	if st.dir != "" {
		if err := os.MkdirAll(st.dir, 0o755); err != nil {
			return err
		}
	}
	st.mark("started", strconv.Itoa(os.Getpid())+"\n")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	if listen == "" {
		// The SDK's StdioTransport writes os.Stdout directly; IOTransport
		// lets us hand it a writer whose lock garbage shares, so a garbage
		// line never lands in the middle of a protocol message (the SDK
		// writes each message with one Write call).
		stdin, stdout := polled.Stdio()
		out := &lockedWriter{w: stdout}
		h := newHostile(st, log, out)
		err := h.server.Run(ctx, &mcp.IOTransport{Reader: stdin, Writer: out})
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, io.EOF) {
			return err
		}
		st.mark("stopped", "stdio\n")
		return nil
	}

	h := newHostile(st, log, nil)
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return h.server },
		&mcp.StreamableHTTPOptions{Logger: log, Stateless: stateless, PropagateRequestCancellation: stateless}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	st.mark("listening", addr+"\n")
	log.Info("listening", "url", "http://"+addr+"/mcp")
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx) // hanging calls do not finish by themselves
	st.mark("stopped", "http\n")
	return nil
}

// lockedWriter serialises writes to stdout between the SDK's transport and
// the garbage tool.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Close is a no-op: closing the connection must not close stdout under a
// concurrent garbage write; the process exits right after anyway.
func (l *lockedWriter) Close() error { return nil }

// stateDir writes the marker files. Without a directory it does nothing.
type stateDir struct {
	dir string
	log *slog.Logger
	mu  sync.Mutex // serialises appends to "calls"
}

// mark replaces the marker name with content atomically (write, rename), so
// a test polling for it never reads half of it.
func (s *stateDir) mark(name, content string) {
	if s.dir == "" {
		return
	}
	f, err := os.CreateTemp(s.dir, "."+name+".tmp")
	if err == nil {
		_, err = f.WriteString(content)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(f.Name(), filepath.Join(s.dir, name))
		}
		if err != nil {
			os.Remove(f.Name())
		}
	}
	if err != nil {
		s.log.Error("writing marker", "name", name, "err", err)
	}
}

// callRecord is one line of the "calls" marker.
type callRecord struct {
	Method    string          `json:"method"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// record appends c to "calls", one JSON object per line.
func (s *stateDir) record(c callRecord) {
	if s.dir == "" {
		return
	}
	b, err := json.Marshal(c)
	if err != nil {
		s.log.Error("recording call", "err", err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := os.OpenFile(filepath.Join(s.dir, "calls"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err == nil {
		_, err = f.Write(append(b, '\n'))
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		s.log.Error("recording call", "err", err)
	}
}

func errorf(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}
