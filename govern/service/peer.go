package service

//lint:file-ignore SA1019 MCP sampling and roots are deprecated by the 2026-07-28 protocol revision but still served during its deprecation window (allow_requests.sampling, docs/upstreams.md)

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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
	peers map[string]map[*int]Peer
}

// hold registers ctx's peer as one of server's calls until release.
func (f *inflight) hold(ctx context.Context, server string) (release func()) {
	p, _ := ctx.Value(peerKey{}).(Peer)
	if p == nil {
		return func() {}
	}
	key := new(int)
	f.mu.Lock()
	if f.peers == nil {
		f.peers = map[string]map[*int]Peer{}
	}
	if f.peers[server] == nil {
		f.peers[server] = map[*int]Peer{}
	}
	f.peers[server][key] = p
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
func (f *inflight) only(server string) (Peer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch n := len(f.peers[server]); n {
	case 1:
		for _, p := range f.peers[server] {
			return p, nil
		}
	case 0:
		return nil, fmt.Errorf("no agent's call to upstream %s is in flight to pass the request on to", server)
	default:
		return nil, fmt.Errorf("%d agents' calls to upstream %s are in flight: the gateway cannot tell whose the request is, and passes it to none", n, server)
	}
	return nil, nil
}

// sample passes an allowed sampling request of server's on to the agent
// whose call is in flight, every credential value in it redacted (shown).
func (s *Service) sample(ctx context.Context, server string, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	peer, err := s.ups.calls.only(server)
	if err != nil {
		return nil, err
	}
	if p = shown(s, p); p == nil {
		return nil, errUnshowable
	}
	return peer.CreateMessage(ctx, p)
}

// errUnshowable refuses a request whose credential values could not be
// redacted before it reached the agent.
var errUnshowable = errors.New("the request could not be redacted before it reached the agent, so it was not passed on")

// elicit passes an allowed elicitation request on likewise.
func (s *Service) elicit(ctx context.Context, server string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	peer, err := s.ups.calls.only(server)
	if err != nil {
		return nil, err
	}
	if p = shown(s, p); p == nil {
		return nil, errUnshowable
	}
	return peer.Elicit(ctx, p)
}
