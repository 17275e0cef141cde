package main

// systemd's two protocols (docs/install.md): the admission socket a socket
// unit passes (LISTEN_FDS, named by FileDescriptorName=admission), and
// READY=1 on NOTIFY_SOCKET once the service is open (config and policy
// loaded, the sandbox probed) and every listener serves (Type=notify).

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"

	"github.com/coreos/go-systemd/v22/activation"
	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/mitrity/mitrity/govern/unixsock"
)

// admissionFDName is the name the socket unit gives the admission socket
// (FileDescriptorName=): the one inherited descriptor the gateway takes.
const admissionFDName = "admission"

// listenOrInherit serves h on the admission socket at path: the one
// systemd passed when there is one, else a socket made here. Either way
// every peer's uid is checked (unixsock); an inherited socket must also
// sit where the config says with the mode and owner Listen would give it,
// or the gateway refuses to start rather than serve a socket others reach.
func listenOrInherit(path string, h http.Handler, o unixsock.Options, logger zerolog.Logger) (*unixsock.Server, error) {
	ln, err := passedAdmission(logger)
	if err != nil {
		return nil, err
	}
	if ln == nil {
		return unixsock.Listen(path, h, o)
	}
	owner := os.Geteuid()
	if o.Owner != nil {
		owner = o.Owner.UID
	}
	if err := checkInherited(ln, path, owner); err != nil {
		ln.Close()
		return nil, fmt.Errorf("socket passed by systemd (%s): %w", admissionFDName, err)
	}
	logger.Info().Str("socket", path).Msg("admission socket passed by systemd")
	return unixsock.Serve(ln, path, h, o), nil
}

// passed holds the admission socket systemd passed, taken once as serve
// starts: before anything is started, since a passed descriptor is not
// close-on-exec until it is taken, and every child would inherit it.
var passed struct {
	once sync.Once
	ln   *net.UnixListener
	err  error
}

// takePassed takes the descriptors systemd passed, once.
func takePassed(logger zerolog.Logger) error {
	passed.once.Do(func() { passed.ln, passed.err = inheritedListener(admissionFDName, logger) })
	return passed.err
}

// passedAdmission is the admission socket systemd passed, to its first
// caller; nil when none was passed.
func passedAdmission(logger zerolog.Logger) (*net.UnixListener, error) {
	if err := takePassed(logger); err != nil {
		return nil, err
	}
	ln := passed.ln
	passed.ln = nil
	return ln, nil
}

// dropPassed closes an admission socket systemd passed that nothing
// serves (admission.enabled: false), saying so: its hooks get refused
// connections rather than wait on a socket no one accepts.
func dropPassed(logger zerolog.Logger) {
	if ln, _ := passedAdmission(logger); ln != nil {
		logger.Warn().Str("socket", ln.Addr().String()).Msg("systemd passed an admission socket, but admission.enabled is false: closing it")
		ln.Close()
	}
}

// inheritedListener takes the listening socket named name from the
// descriptors systemd passed (LISTEN_PID must be this process), closing
// any other; nil when none was passed. The LISTEN_* variables are unset,
// so nothing this process starts mistakes them for its own.
func inheritedListener(name string, logger zerolog.Logger) (*net.UnixListener, error) {
	var found *os.File
	for _, f := range activation.Files(true) {
		if f.Name() == name && found == nil {
			found = f
			continue
		}
		logger.Warn().Str("name", f.Name()).Msg("closing a descriptor systemd passed that the gateway does not use")
		f.Close()
	}
	if found == nil {
		return nil, nil
	}
	defer found.Close() // FileListener holds its own duplicate
	l, err := net.FileListener(found)
	if err != nil {
		return nil, fmt.Errorf("socket passed by systemd (%s): %w", name, err)
	}
	ul, ok := l.(*net.UnixListener)
	if !ok {
		l.Close()
		return nil, fmt.Errorf("socket passed by systemd (%s): a %s listener, want a Unix stream socket (ListenStream=/path)", name, l.Addr().Network())
	}
	return ul, nil
}

// checkInherited checks that ln listens at path, that the file there is
// a socket with mode 0600 owned by owner (SocketMode=, SocketUser=), and
// that its directory is a real directory owned by root or owner and
// writable by no one else: what unixsock.Listen makes, which systemd's
// defaults (0666, a 0755 directory) are not all of.
func checkInherited(ln *net.UnixListener, path string, owner int) error {
	if got := ln.Addr().String(); got != path {
		return fmt.Errorf("it listens on %q but admission.socket is %q: make the socket unit's ListenStream= and admission.socket the same", got, path)
	}
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFSOCK:
		return fmt.Errorf("%s is not a socket", path)
	case st.Mode&0o777 != 0o600:
		return fmt.Errorf("%s has mode %04o: set SocketMode=0600 in the socket unit", path, st.Mode&0o777)
	case int(st.Uid) != owner:
		return fmt.Errorf("%s belongs to uid %d, want uid %d (the owner admission.owners names, else the gateway's own user): set SocketUser= in the socket unit", path, st.Uid, owner)
	}
	dir := filepath.Dir(path)
	if err := unix.Lstat(dir, &st); err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return fmt.Errorf("%s is not a directory", dir)
	case st.Uid != 0 && int(st.Uid) != owner:
		return fmt.Errorf("directory %s belongs to uid %d: others could replace the socket", dir, st.Uid)
	case st.Mode&0o022 != 0:
		return fmt.Errorf("directory %s is writable by group or others (mode %04o): others could replace the socket", dir, st.Mode&0o777)
	}
	return nil
}

// notifyReady tells systemd (Type=notify) that the gateway serves, once;
// NOTIFY_SOCKET is unset so that nothing the gateway starts can speak for
// it. Without NOTIFY_SOCKET it does nothing.
func notifyReady(status string, logger zerolog.Logger) {
	sent, err := daemon.SdNotify(true, daemon.SdNotifyReady+"\nSTATUS="+status)
	switch {
	case err != nil:
		// systemd then stops the unit at TimeoutStartSec: louder than a
		// gateway that serves while its unit says it never started.
		logger.Error().Err(err).Msg("could not tell systemd the gateway is ready")
	case sent:
		logger.Debug().Msg("told systemd the gateway is ready")
	}
}
