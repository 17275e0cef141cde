package sandbox

import (
	"errors"
	"fmt"
	"os"
)

// Session is the posture of a long-running interactive program that runs
// in the sandbox for as long as it lasts (the agent launcher's:
// govern/agentlaunch), not of a judged command. nil for every governed
// command, whose sandbox is unchanged by any of this.
//
// What differs from a command's sandbox:
//
//   - reads are denied by default: instead of the host read-only, the
//     sandbox sees only ReadOnly (the system's runtime, the program's
//     install), its StateDirs and StateFiles, the workspace roots and what
//     the session binds; the mandatory deny set and the spec's deny paths
//     are masked wherever they are visible, but for the mandatory set's
//     entries that are one of the program's own state paths (its login:
//     Claude Code's ~/.claude), which it needs and the governed shell keeps
//     masked from every command;
//   - AF_UNIX sockets may be created (seccomppolicy.Options.UnixSockets):
//     the only host sockets on a visible path are those the session binds
//     (the admission socket) and any in its writable paths, and the host's
//     abstract sockets are in another network namespace;
//   - no timeout when the spec's TimeoutMS is 0: the session ends with the
//     program, or when the caller cancels it;
//   - TTY keeps the caller's terminal the program's controlling one.
//
// Every other part holds as for a command: the network is the egress
// proxy's bridge only, nested namespaces are refused, capabilities are
// dropped, protected paths in the workspace roots are read-only, and the
// pid namespace takes every process with it when the program ends.
type Session struct {
	// ReadOnly are host paths visible read-only at the same place, parents
	// before what is inside them. A path that is a symlink on the host is
	// made the same symlink (/bin -> usr/bin); one that does not exist is
	// skipped.
	ReadOnly []string `json:"read_only"`
	// Private are empty private directories, writable, gone with the
	// sandbox: the home (what the program writes there outside its state
	// paths is lost), /var/tmp.
	Private []string `json:"private,omitempty"`
	// Sealed are empty private directories made read-only once what
	// ReadOnly and Files put inside them is in place: /etc, which holds
	// only the system runtime's files and the framework's managed
	// settings.
	Sealed []string `json:"sealed,omitempty"`
	// StateDirs are bound writable: the program's own configuration and
	// state. One that is missing is made, mode 0700, as the sandbox's user.
	StateDirs []string `json:"state_dirs,omitempty"`
	// StateFiles are files bound writable; a missing one is made, mode
	// 0600, as the sandbox's user, holding Init.
	StateFiles []StateFile `json:"state_files,omitempty"`
	// Files are data bound read-only at Path (a framework's managed
	// settings, rendered for the session).
	Files []DataFile `json:"files,omitempty"`
	// Binds are host files (a program, a socket) bound read-only at another
	// path inside, from a descriptor opened by the supervisor: the sandbox's
	// user need not reach the host path.
	Binds []FileBind `json:"binds,omitempty"`
	// TTY keeps the caller's session, so that a terminal on the program's
	// standard streams stays its controlling terminal (resizes reach it).
	// Only when the seccomp filter is installed, which refuses TIOCSTI and
	// TIOCLINUX (typing into that terminal); without the filter the
	// program runs in a new session as every command does, and the result
	// says so.
	TTY bool `json:"tty,omitempty"`
	// RootInside runs the program as uid and gid 0 of its own user
	// namespace (mapped to the sandbox's user on the host, capabilities
	// dropped: no more power than that user has). What the sandbox makes
	// (its /etc, the data files) is then root's inside, which a framework
	// that trusts only a root-owned system settings file requires (Gemini
	// CLI skips one that is not, and with it the hook).
	RootInside bool `json:"root_inside,omitempty"`
}

// StateFile is one file of a Session's state.
type StateFile struct {
	Path string `json:"path"`
	// Init is what a missing file is made with.
	Init []byte `json:"init,omitempty"`
}

// DataFile is data bound read-only at Path inside the sandbox.
type DataFile struct {
	Path string      `json:"path"`
	Data []byte      `json:"data"`
	Perm os.FileMode `json:"perm,omitempty"` // 0444 when zero
}

// FileBind is a host file bound read-only at Path inside the sandbox.
type FileBind struct {
	Source string `json:"source"`
	Path   string `json:"path"`
}

// checkSession validates a Session's paths.
func checkSession(s *Spec) error {
	ss := s.Session
	if ss == nil {
		return nil
	}
	if len(s.Pins) > 0 || len(s.Credentials) > 0 || len(s.CredFiles) > 0 || s.Narrowing != nil {
		return errors.New("session: a session carries no pins, credentials or settings-file narrowing (a judged command's parts)")
	}
	lists := []struct {
		name  string
		paths []string
	}{{"read_only", ss.ReadOnly}, {"private", ss.Private}, {"sealed", ss.Sealed}, {"state_dirs", ss.StateDirs}}
	for _, l := range lists {
		for i, p := range l.paths {
			if err := absClean(fmt.Sprintf("session.%s[%d]", l.name, i), p); err != nil {
				return err
			}
			if p == "/" {
				return fmt.Errorf("session.%s[%d]: / is the whole host", l.name, i)
			}
		}
	}
	for _, l := range lists {
		for i, p := range l.paths {
			// The sandbox makes /dev and /proc itself; a sealed directory
			// is sealed before /tmp and /run exist.
			if within("/dev", p) || within("/proc", p) || (l.name == "sealed" && (within("/tmp", p) || within("/run", p))) {
				return fmt.Errorf("session.%s[%d]: %s is the sandbox's own", l.name, i, p)
			}
		}
	}
	for i, f := range ss.StateFiles {
		if err := absClean(fmt.Sprintf("session.state_files[%d]", i), f.Path); err != nil {
			return err
		}
	}
	for i, f := range ss.Files {
		if err := absClean(fmt.Sprintf("session.files[%d]", i), f.Path); err != nil {
			return err
		}
		if f.Perm&^0o555 != 0 {
			return fmt.Errorf("session.files[%d]: mode %04o: a data file is read-only", i, f.Perm)
		}
	}
	for i, b := range ss.Binds {
		if err := absClean(fmt.Sprintf("session.binds[%d].source", i), b.Source); err != nil {
			return err
		}
		if err := absClean(fmt.Sprintf("session.binds[%d].path", i), b.Path); err != nil {
			return err
		}
	}
	for _, p := range insideRun(ss) {
		if p == InsideInit || p == InsideRun || p == "/run" {
			return fmt.Errorf("session: %s is the sandbox's own", p)
		}
	}
	return nil
}

// insideRun lists the session's paths that sit under the sandbox's /run,
// which is remounted read-only early: they are mounted before it.
func insideRun(ss *Session) []string {
	var out []string
	for _, f := range ss.Files {
		if within("/run", f.Path) {
			out = append(out, f.Path)
		}
	}
	for _, b := range ss.Binds {
		if within("/run", b.Path) {
			out = append(out, b.Path)
		}
	}
	return out
}

// statePaths are the session's writable state paths.
func (ss *Session) statePaths() []string {
	out := append([]string(nil), ss.StateDirs...)
	for _, f := range ss.StateFiles {
		out = append(out, f.Path)
	}
	return out
}
