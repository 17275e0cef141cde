package hold

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/peer"
	"github.com/mitrity/mitrity/govern/unixsock"
)

// Server serves a queue on a Unix socket to the socket's owner only: the
// socket is 0600 in a 0700 directory, and every connection's peer uid
// (SO_PEERCRED) must be the gateway's own uid or root.
type Server struct {
	q    *Queue
	sock *unixsock.Server
}

// Listen creates the socket at path (its directory is created 0700) and
// serves q on it until Close. accept decides on each connection's peer
// after its uid was checked (the gateway passes sandbox.OnlyHost: a
// process inside a sandbox, with the gateway's uid, is refused); it is
// required, so that no caller serves approvals to whatever shares the uid.
func Listen(path string, q *Queue, accept func(peer.Peer) error) (*Server, error) {
	if accept == nil {
		return nil, errors.New("admin socket: no peer check given")
	}
	s := &Server{q: q}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/holds", s.list)
	mux.HandleFunc("POST /v1/holds/{id}/{verdict}", s.answer)
	// Approving a held call is the operator's: a process inside a sandbox
	// (the same uid as the gateway) is refused, whatever reached it.
	sock, err := unixsock.Listen(path, mux, unixsock.Options{Accept: accept})
	if err != nil {
		return nil, fmt.Errorf("admin %w", err)
	}
	s.sock = sock
	return s, nil
}

// Close stops serving and removes the socket.
func (s *Server) Close() error { return s.sock.Close() }

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(s.q.List())
}

func (s *Server) answer(w http.ResponseWriter, r *http.Request) {
	uid, _ := unixsock.PeerUID(r.Context()) // unixsock admitted only the owner and root
	var outcome govern.Outcome
	switch r.PathValue("verdict") {
	case "approve":
		outcome = govern.Allow
	case "deny":
		outcome = govern.Deny
	default:
		http.Error(w, "verdict must be approve or deny", http.StatusBadRequest)
		return
	}
	err := s.q.Answer(r.PathValue("id"), outcome, "uid:"+strconv.Itoa(uid))
	if errors.Is(err, ErrUnknown) {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// Client talks to every admin socket in a directory: each running gateway
// process (a long-running server, or a one-shot exec holding a call)
// serves its own.
type Client struct{ Dir string }

func (c Client) sockets() ([]string, error) {
	m, err := filepath.Glob(filepath.Join(c.Dir, "*.sock"))
	sort.Strings(m)
	return m, err
}

func httpClient(sock string) *http.Client { return unixsock.Client(sock, 5*time.Second) }

// List returns the holds pending on every live socket.
func (c Client) List(ctx context.Context) ([]Pending, error) {
	socks, err := c.sockets()
	if err != nil {
		return nil, err
	}
	var all []Pending
	for _, sock := range socks {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://admin/v1/holds", nil)
		resp, err := httpClient(sock).Do(req)
		if err != nil {
			continue // a stale socket of a process that is gone
		}
		var ps []Pending
		err = decode(resp, &ps)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", sock, err)
		}
		all = append(all, ps...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Created.Before(all[j].Created) })
	return all, nil
}

// Answer approves or denies the hold with id, wherever it is pending.
func (c Client) Answer(ctx context.Context, id string, approve bool) error {
	verdict := "deny"
	if approve {
		verdict = "approve"
	}
	socks, err := c.sockets()
	if err != nil {
		return err
	}
	for _, sock := range socks {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://admin/v1/holds/"+id+"/"+verdict, nil)
		resp, err := httpClient(sock).Do(req)
		if err != nil {
			continue
		}
		if resp.StatusCode == http.StatusNotFound {
			resp.Body.Close()
			continue
		}
		return decode(resp, nil)
	}
	return ErrUnknown
}

func decode(resp *http.Response, v any) error {
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(b)))
	}
	if v == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// DefaultDir is where admin sockets live: admin in the gateway's runtime
// directory (govern.RuntimeDir), which every run masks.
func DefaultDir() string {
	return filepath.Join(govern.RuntimeDir(os.Geteuid(), os.Getenv), "admin")
}
