package sandbox

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/mitrity/mitrity/govern"
	"github.com/mitrity/mitrity/govern/secretscan"
)

// SeccompMode says whether the seccomp stage must, may or must not be
// installed on the command: exec.sandbox.seccomp.
type SeccompMode string

const (
	// SeccompRequired: the filter is installed or nothing runs. The empty
	// mode means required.
	SeccompRequired SeccompMode = "required"
	// SeccompPreferred: the filter is installed when it can be; otherwise
	// the command runs as bubblewrap_no_seccomp.
	SeccompPreferred SeccompMode = "preferred"
	// SeccompOff: no filter; the command runs as bubblewrap_no_seccomp.
	SeccompOff SeccompMode = "off"
)

// effective returns the mode with the empty value read as required.
func (m SeccompMode) effective() SeccompMode {
	if m == "" {
		return SeccompRequired
	}
	return m
}

// Limits bounds one execution. A zero field means "no bound requested"; the
// Result says, per bound, whether it held and by which mechanism.
type Limits struct {
	// MemoryBytes: the sandbox's memory (cgroup) or each process's address
	// space (RLIMIT_AS) when no cgroup can be created.
	MemoryBytes int64 `json:"memory_bytes,omitempty"`
	// Pids: tasks (processes and threads) in the sandbox, bubblewrap's
	// pid 1 and the sandbox's own init (before it becomes the command)
	// included.
	Pids int64 `json:"pids,omitempty"`
	// TmpfsBytes: the size of the private /tmp (and of /dev/shm).
	TmpfsBytes int64 `json:"tmpfs_bytes,omitempty"`
	// FileSizeBytes: the largest file a process may write (RLIMIT_FSIZE).
	FileSizeBytes int64 `json:"file_size_bytes,omitempty"`
	// Nofile: open files per process (RLIMIT_NOFILE).
	Nofile int64 `json:"nofile,omitempty"`
}

// MinPids is the smallest process-count bound accepted: the sandbox's init
// is a Go program and needs a few threads before it becomes the command.
const MinPids = 16

// wirePin is a pin as the spec carries it to the helper: with its bytes,
// which govern.Pin never serialises anywhere else.
type wirePin struct {
	govern.Pin
	Bytes []byte `json:"bytes"`
}

// MarshalJSON writes the spec with each pin's bytes.
func (s Spec) MarshalJSON() ([]byte, error) {
	type plain Spec
	w := struct {
		plain
		Pins []wirePin `json:"pins,omitempty"`
	}{plain: plain(s)}
	for _, p := range s.Pins {
		w.Pins = append(w.Pins, wirePin{Pin: p, Bytes: p.Bytes})
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (s *Spec) UnmarshalJSON(b []byte) error {
	type plain Spec
	var w struct {
		plain
		Pins []wirePin `json:"pins,omitempty"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*s = Spec(w.plain)
	s.Pins = nil
	for _, p := range w.Pins {
		p.Pin.Bytes = p.Bytes
		s.Pins = append(s.Pins, p.Pin)
	}
	return nil
}

// Identity is the unprivileged user a root caller runs the sandbox as.
type Identity struct {
	UID uint32 `json:"uid"`
	GID uint32 `json:"gid"`
}

// Bwrap names the bubblewrap binary. Both fields are optional: an empty
// path is looked up on PATH, an empty version is asked of the binary (one
// more process per run; the executor passes the version its boot probe saw).
type Bwrap struct {
	Path    string `json:"path,omitempty"`
	Version string `json:"version,omitempty"`
}

// Spec is everything sandboxrun needs to run one command: what the executor
// writes on the spec pipe. It is plain data; Validate checks it before any
// side effect.
type Spec struct {
	// Argv is the shell invocation, e.g. ["/bin/bash", "--noprofile",
	// "--norc", "-c", TEXT]. Argv[0] is absolute.
	Argv []string `json:"argv"`
	// Env is the constructed environment, NAME=VALUE; nothing is inherited.
	Env []string `json:"env"`
	// Cwd is the working directory, inside a workspace root.
	Cwd string `json:"cwd"`
	// WorkspaceRoots are the only host paths writable inside the sandbox.
	WorkspaceRoots []string `json:"workspace_roots"`
	// DenyPaths are masked in addition to the mandatory deny set: the
	// gateway's own config, token and credential sources, the profile's
	// extra deny paths.
	DenyPaths []string `json:"deny_paths,omitempty"`
	// ReadOnlyPaths are absolute paths kept read-only even inside a
	// workspace root, with every directory between the root and them made
	// a mount point (so none can be renamed away and replaced): the
	// gateway's own programs.
	ReadOnlyPaths []string `json:"read_only_paths,omitempty"`
	// DenyHomes are home directories whose credential files are masked in
	// addition to /root, /home/* and every home in /etc/passwd.
	DenyHomes []string `json:"deny_homes,omitempty"`
	// ProtectedExtra names paths, relative to each workspace root, kept
	// read-only in addition to the built-in protected set.
	ProtectedExtra []string `json:"protected_extra,omitempty"`
	// Pins are the judged scripts: the bytes of each are bound read-only
	// over Path (and RealPath) inside the sandbox, whatever the disk holds
	// now.
	Pins []govern.Pin `json:"pins,omitempty"`
	// Credentials are the values injected into the run (through Env or
	// CredFiles), by credential id: no process of the run may start
	// another with one on its command line (the exec guard refuses it).
	Credentials []secretscan.Secret `json:"credentials,omitempty"`
	// CredFiles are materialised, mode 0400, under govern.CredentialDir
	// inside the sandbox; $MITRITY_CRED_DIR names the directory.
	CredFiles map[string]string `json:"cred_files,omitempty"`
	// ProxySocket is the host path of the egress proxy's Unix socket,
	// reached through the bridge (it is not bound into the sandbox). Empty
	// means no network at all.
	ProxySocket string      `json:"proxy_socket,omitempty"`
	Seccomp     SeccompMode `json:"seccomp,omitempty"`
	Limits      Limits      `json:"limits"`
	TimeoutMS   int64       `json:"timeout_ms"`
	// KillGraceMS is the time between SIGTERM and SIGKILL on timeout;
	// zero means DefaultKillGrace.
	KillGraceMS int64 `json:"kill_grace_ms,omitempty"`
	// RunAs is the identity a root caller drops to before starting the
	// sandbox. Without it a root caller's command runs as uid 0: it can read
	// every root-owned file outside the deny set.
	RunAs *Identity `json:"run_as,omitempty"`
	Bwrap Bwrap     `json:"bwrap,omitzero"`
	// Narrowing is the file-system part of exec.sandbox.settings_file;
	// nil when there is none.
	Narrowing *Narrowing `json:"narrowing,omitempty"`
	// Session is the posture of a long-running interactive program (the
	// agent launcher's) instead of a command's; nil for every governed
	// command. See Session.
	Session *Session `json:"session,omitempty"`
}

// Narrowing is what a sandbox-runtime settings file takes away from a run's
// file system: it can hide more and make less writable, never the reverse.
// Paths are as the file wrote them: absolute; "~" or "~/..." for the home
// (in /etc/passwd) of the user the sandbox runs as; or relative, which
// names that path in every workspace root. Globs are not accepted: bubblewrap
// binds concrete paths, and a pattern that matched nothing would skip the
// narrowing silently.
type Narrowing struct {
	// DenyRead paths are masked like the deny set. A workspace root or an
	// AllowRead path inside one stays reachable; nothing else inside does.
	DenyRead []string `json:"deny_read,omitempty"`
	// AllowRead paths, outside the workspace roots, are readable again
	// inside a DenyRead path (the more specific path wins). They never
	// reveal the mandatory deny set or the spec's deny paths.
	AllowRead []string `json:"allow_read,omitempty"`
	// LimitWrite makes only the parts of the workspace roots inside
	// AllowWrite writable (none, when it is empty). AllowWrite paths
	// outside every root are ignored: the host there is read-only anyway.
	LimitWrite bool     `json:"limit_write,omitempty"`
	AllowWrite []string `json:"allow_write,omitempty"`
	// DenyWrite paths are read-only even inside a workspace root. One that
	// does not exist cannot be held without creating it on the host; if the
	// command creates it, it is reported in protected_created.
	DenyWrite []string `json:"deny_write,omitempty"`
}

// DefaultKillGrace is the SIGTERM-to-SIGKILL grace when the spec names none.
const DefaultKillGrace = 5 * time.Second

// Timeout is the wall-clock bound of the run; 0 for a session without
// one.
func (s *Spec) Timeout() time.Duration { return time.Duration(s.TimeoutMS) * time.Millisecond }

// KillGrace is the SIGTERM-to-SIGKILL grace.
func (s *Spec) KillGrace() time.Duration {
	if s.KillGraceMS <= 0 {
		return DefaultKillGrace
	}
	return time.Duration(s.KillGraceMS) * time.Millisecond
}

// specCheck is one validation rule; Validate runs them all and joins the
// failures, each naming its field.
type specCheck func(*Spec) error

var specChecks = []specCheck{
	checkArgv, checkEnv, checkRoots, checkCwd, checkDenyPaths, checkProtectedExtra,
	checkPinsShape, checkCredFiles, checkProxy, checkSeccomp, checkLimits, checkTimes, checkRunAs,
	checkNarrowing, checkSession,
}

// Validate checks the spec without touching the system.
func (s *Spec) Validate() error {
	if s == nil {
		return fmt.Errorf("%w: no spec", ErrInvalidSpec)
	}
	var errs []error
	for _, c := range specChecks {
		if err := c(s); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidSpec, errors.Join(errs...))
	}
	return nil
}

func absClean(field, p string) error {
	switch {
	case p == "":
		return fmt.Errorf("%s: empty path", field)
	case strings.ContainsRune(p, 0):
		return fmt.Errorf("%s: %q holds a NUL byte", field, p)
	case !filepath.IsAbs(p):
		return fmt.Errorf("%s: %q is not absolute", field, p)
	case filepath.Clean(p) != p:
		return fmt.Errorf("%s: %q is not clean (want %q)", field, p, filepath.Clean(p))
	}
	return nil
}

func checkArgv(s *Spec) error {
	if len(s.Argv) == 0 {
		return errors.New("argv: empty")
	}
	if err := absClean("argv[0]", s.Argv[0]); err != nil {
		return err
	}
	for i, a := range s.Argv {
		if strings.ContainsRune(a, 0) {
			return fmt.Errorf("argv[%d]: holds a NUL byte", i)
		}
	}
	return nil
}

func checkEnv(s *Spec) error {
	for i, kv := range s.Env {
		name, _, ok := strings.Cut(kv, "=")
		switch {
		case !ok || name == "":
			return fmt.Errorf("env[%d]: want NAME=VALUE", i)
		case strings.ContainsRune(kv, 0):
			return fmt.Errorf("env[%d] (%s): holds a NUL byte", i, name)
		}
	}
	return nil
}

func checkRoots(s *Spec) error {
	if len(s.WorkspaceRoots) == 0 {
		return errors.New("workspace_roots: at least one root is needed")
	}
	for i, r := range s.WorkspaceRoots {
		if err := absClean(fmt.Sprintf("workspace_roots[%d]", i), r); err != nil {
			return err
		}
		if r == "/" {
			return fmt.Errorf("workspace_roots[%d]: / would make the whole host writable", i)
		}
	}
	return nil
}

func checkCwd(s *Spec) error {
	if err := absClean("cwd", s.Cwd); err != nil {
		return err
	}
	for _, r := range s.WorkspaceRoots {
		if within(r, s.Cwd) {
			return nil
		}
	}
	return fmt.Errorf("cwd: %s is outside every workspace root", s.Cwd)
}

// within reports whether p is root or below it, lexically.
func within(root, p string) bool {
	return p == root || strings.HasPrefix(p, strings.TrimSuffix(root, "/")+"/")
}

func checkDenyPaths(s *Spec) error {
	for i, p := range s.DenyPaths {
		if err := absClean(fmt.Sprintf("deny_paths[%d]", i), p); err != nil {
			return err
		}
	}
	for i, p := range s.ReadOnlyPaths {
		if err := absClean(fmt.Sprintf("read_only_paths[%d]", i), p); err != nil {
			return err
		}
	}
	for i, p := range s.DenyHomes {
		if err := absClean(fmt.Sprintf("deny_homes[%d]", i), p); err != nil {
			return err
		}
	}
	return nil
}

func checkProtectedExtra(s *Spec) error {
	for i, p := range s.ProtectedExtra {
		c := filepath.Clean(p)
		if p == "" || filepath.IsAbs(p) || c != p || c == "." || c == ".." || strings.HasPrefix(c, "../") || strings.ContainsRune(p, 0) {
			return fmt.Errorf("protected_extra[%d]: %q must be a clean path relative to a workspace root", i, p)
		}
	}
	return nil
}

func checkPinsShape(s *Spec) error {
	for i, p := range s.Pins {
		f := fmt.Sprintf("pins[%d]", i)
		if err := absClean(f+".path", p.Path); err != nil {
			return err
		}
		if err := absClean(f+".realpath", p.RealPath); err != nil {
			return err
		}
		if b, err := hex.DecodeString(p.SHA256); err != nil || len(b) != 32 {
			return fmt.Errorf("%s.sha256: want 64 hex digits", f)
		}
	}
	return nil
}

func checkCredFiles(s *Spec) error {
	for name := range s.CredFiles {
		if name == "" || name == "." || name == ".." || filepath.Base(name) != name || strings.ContainsRune(name, 0) {
			return fmt.Errorf("cred_files: %q is not a plain file name", name)
		}
	}
	return nil
}

func checkProxy(s *Spec) error {
	if s.ProxySocket == "" {
		return nil
	}
	return absClean("proxy_socket", s.ProxySocket)
}

func checkSeccomp(s *Spec) error {
	switch s.Seccomp.effective() {
	case SeccompRequired, SeccompPreferred, SeccompOff:
		return nil
	}
	return fmt.Errorf("seccomp: %q: want required, preferred or off", s.Seccomp)
}

func checkLimits(s *Spec) error {
	l := s.Limits
	for _, f := range []struct {
		name string
		v    int64
	}{{"memory_bytes", l.MemoryBytes}, {"pids", l.Pids}, {"tmpfs_bytes", l.TmpfsBytes}, {"file_size_bytes", l.FileSizeBytes}, {"nofile", l.Nofile}} {
		if f.v < 0 {
			return fmt.Errorf("limits.%s: %d is negative", f.name, f.v)
		}
	}
	if l.Pids != 0 && l.Pids < MinPids {
		return fmt.Errorf("limits.pids: %d is below %d (the sandbox's own init needs a few tasks)", l.Pids, MinPids)
	}
	if l.Nofile != 0 && l.Nofile < 16 {
		return fmt.Errorf("limits.nofile: %d is below 16", l.Nofile)
	}
	return nil
}

func checkTimes(s *Spec) error {
	if s.TimeoutMS == 0 && s.Session != nil {
		return nil // a session lasts as long as its program
	}
	if s.TimeoutMS <= 0 {
		return fmt.Errorf("timeout_ms: %d: want a positive timeout", s.TimeoutMS)
	}
	if s.KillGraceMS < 0 {
		return fmt.Errorf("kill_grace_ms: %d is negative", s.KillGraceMS)
	}
	return nil
}

func checkRunAs(s *Spec) error {
	if s.RunAs != nil && (s.RunAs.UID == 0 || s.RunAs.GID == 0) {
		return errors.New("run_as: uid and gid must not be 0: run_as is how a root caller stops running commands as root")
	}
	return nil
}

func checkNarrowing(s *Spec) error {
	n := s.Narrowing
	if n == nil {
		return nil
	}
	for _, f := range []struct {
		name  string
		paths []string
	}{{"deny_read", n.DenyRead}, {"allow_read", n.AllowRead}, {"allow_write", n.AllowWrite}, {"deny_write", n.DenyWrite}} {
		for i, p := range f.paths {
			if err := CheckNarrowingPath(p); err != nil {
				return fmt.Errorf("narrowing.%s[%d]: %w", f.name, i, err)
			}
		}
	}
	for i, p := range n.DenyRead {
		if filepath.Clean(p) == "/" {
			return fmt.Errorf("narrowing.deny_read[%d]: / would hide everything the command needs to run; deny the regions meant (e.g. /home)", i)
		}
	}
	return nil
}

// CheckNarrowingPath reports what is wrong with one path of a Narrowing.
func CheckNarrowingPath(p string) error {
	switch {
	case p == "":
		return errors.New("empty path")
	case strings.ContainsRune(p, 0):
		return fmt.Errorf("%q holds a NUL byte", p)
	case strings.ContainsAny(p, "*?["):
		return fmt.Errorf("%q: globs are not supported: list the paths (a pattern that matched nothing would skip the narrowing silently)", p)
	case strings.HasPrefix(p, "~") && p != "~" && !strings.HasPrefix(p, "~/"):
		return fmt.Errorf("%q: only ~ and ~/... (the sandbox user's home) are understood", p)
	}
	return nil
}
