package service

//lint:file-ignore SA1019 MCP sampling and roots are deprecated by the 2026-07-28 protocol revision but still served during its deprecation window (allow_requests.sampling, docs/upstreams.md)

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mitrity/mitrity/govern/upstream"
)

// Peer is the agent's side of a forwarded call: where a request an
// upstream sends the client during it (sampling, elicitation), when its
// entry allows that kind, is passed on. The agent's MCP session
// (*mcp.ServerSession) is one.
type Peer interface {
	CreateMessage(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error)
	Elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error)
}

type peerKey struct{}

// WithPeer is ctx carrying the agent's side of the call made under it.
func WithPeer(ctx context.Context, p Peer) context.Context {
	return context.WithValue(ctx, peerKey{}, p)
}

// inflight are the peers of the calls forwarded to each upstream now.
type inflight struct {
	mu    sync.Mutex
	peers map[string]map[*int]inflightCall
}

// inflightCall is one call's peer, and how what it answers is cleaned.
type inflightCall struct {
	peer Peer
	answerRules
}

// answerRules hold the answer an agent gives a server's request (its
// model's message, its person's form) to what the call's arguments are
// held to, since it goes to the same server: redact is the call's
// redactor (the gateway's credential values, the profile's DLP
// detectors), and deny (dlp.arguments: deny) refuses an answer in which
// it finds anything, where redact passes it with the markers.
type answerRules struct {
	redact upstream.Redact
	deny   bool
}

// hold registers ctx's peer as one of server's calls until release.
func (f *inflight) hold(ctx context.Context, server string, rules answerRules) (release func()) {
	p, _ := ctx.Value(peerKey{}).(Peer)
	if p == nil {
		return func() {}
	}
	key := new(int)
	f.mu.Lock()
	if f.peers == nil {
		f.peers = map[string]map[*int]inflightCall{}
	}
	if f.peers[server] == nil {
		f.peers[server] = map[*int]inflightCall{}
	}
	f.peers[server][key] = inflightCall{peer: p, answerRules: rules}
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		delete(f.peers[server], key)
		f.mu.Unlock()
	}
}

// only is the one peer with a call in flight to server: a request the
// upstream sends can be passed on only when it is plain whose call it
// belongs to.
func (f *inflight) only(server string) (inflightCall, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch n := len(f.peers[server]); n {
	case 1:
		for _, c := range f.peers[server] {
			return c, nil
		}
	case 0:
		return inflightCall{}, fmt.Errorf("no agent's call to upstream %s is in flight to pass the request on to", server)
	default:
		return inflightCall{}, fmt.Errorf("%d agents' calls to upstream %s are in flight: the gateway cannot tell whose the request is, and passes it to none", n, server)
	}
	return inflightCall{}, nil
}

// answered is the agent's answer v to a request of server's, cleaned by
// the call's rules before it goes to server; an error refuses it.
func answered[T any](c inflightCall, server string, v *T, err error) (*T, error) {
	if err != nil || v == nil {
		return v, err
	}
	if c.redact == nil {
		return nil, errors.New("the agent's answer could not be redacted, so it was not passed on")
	}
	seen, err := upstream.Clean(v, c.redact)
	switch {
	case err != nil:
		return nil, fmt.Errorf("the agent's answer could not be read, so it was not passed on: %w", err)
	case seen.Redactions > 0 && c.deny:
		return nil, fmt.Errorf("the agent's answer holds a secret, and its profile sends an upstream none (dlp.arguments: deny): it was not passed on to %s", server)
	}
	return v, nil
}

// sample passes an allowed sampling request of server's on to the agent
// whose call is in flight, every credential value in it redacted (shown),
// and the agent's answer back, cleaned by the call's rules (answered).
func (s *Service) sample(ctx context.Context, server string, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	call, err := s.ups.calls.only(server)
	if err != nil {
		return nil, err
	}
	if p = shown(s, p); p == nil {
		return nil, errUnshowable
	}
	res, err := call.peer.CreateMessage(ctx, p)
	return answered(call, server, res, err)
}

// errUnshowable refuses a request whose credential values could not be
// redacted before it reached the agent.
var errUnshowable = errors.New("the request could not be redacted before it reached the agent, so it was not passed on")

// elicit passes an allowed elicitation request on likewise.
func (s *Service) elicit(ctx context.Context, server string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	call, err := s.ups.calls.only(server)
	if err != nil {
		return nil, err
	}
	if p = shown(s, p); p == nil {
		return nil, errUnshowable
	}
	res, err := call.peer.Elicit(ctx, p)
	return answered(call, server, res, err)
}
