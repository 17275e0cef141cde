package unixsock

import (
	"context"
	"net"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/mitrity/mitrity/govern/peer"
)

// Serve serves h on ln, a listening socket at path that this process did
// not make (systemd's socket activation passed it): every connection's
// peer is checked as on a socket Listen made. The caller checks the
// socket file's owner and mode, which Serve cannot set; Close and
// Shutdown leave the file in place, since its maker owns it.
func Serve(ln *net.UnixListener, path string, h http.Handler, o Options) *Server {
	ln.SetUnlinkOnClose(false)
	return serve(ln, path, h, o, true)
}

// serve starts the HTTP server on ln, refusing every peer that is not
// root, this process's user, an owner or one of o.UIDs, or that o.Accept
// refuses.
func serve(ln net.Listener, path string, h http.Handler, o Options, keep bool) *Server {
	allowed := append([]int{os.Geteuid(), 0}, o.UIDs...)
	if o.Owner != nil {
		allowed = append(allowed, o.Owner.UID)
	}
	s := &Server{ln: ln, path: path, keep: keep}
	s.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p, _ := r.Context().Value(peerKey{}).(peer.Peer)
			if !slices.Contains(allowed, p.UID) || p.UID < 0 {
				http.Error(w, "forbidden: this socket serves other users", http.StatusForbidden)
				return
			}
			if o.Accept != nil {
				if err := o.Accept(p); err != nil {
					http.Error(w, err.Error(), http.StatusForbidden)
					return
				}
			}
			h.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 5 * time.Second,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, peerKey{}, peerOf(c))
		},
	}
	go s.srv.Serve(ln)
	return s
}
